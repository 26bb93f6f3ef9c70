"""A real MCP client launches the server over stdio (embedded services) and uses it as an agent would.

Documents are made here with python-docx and fpdf2, so the facts they hold are known exactly.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import anyio.abc
import pytest
from docx import Document
from mcp import Client, StdioServerParameters
from service_stack import call

from tests.fixtures.make_fixtures import make_docx, make_pdf

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

FILLER = [
    "Quarterly revenue grew in the northern region while costs stayed flat across all departments.",
    "The migration of the billing database finished over the weekend without customer impact.",
    "New employees receive a laptop, a badge and an introduction to the security policies.",
]
# Shares only rare keywords with KEYWORD_QUERY: BM25 must carry this one.
KEYWORD_PASSAGE = (
    "Calibration of the Zorblatt spectrometer requires the quintessine reference sample, "
    "heated slowly before every measurement series begins."
)
KEYWORD_QUERY = "zorblatt quintessine"
# Shares no content word with PARAPHRASE_QUERY: only the dense vector can match it.
PARAPHRASE_PASSAGE = (
    "The committee postponed the vote because several members were sick with influenza "
    "and could not attend the meeting."
)
PARAPHRASE_QUERY = "Why was the ballot delayed? Many participants had the flu."


def make_report(path: Path) -> None:
    # ~400 tokens a page, so 200-token chunks fall inside pages and the passage sits mid-page 2.
    pages = [FILLER * 5, [*(FILLER * 2), KEYWORD_PASSAGE, *(FILLER * 3)], FILLER * 3]
    parts = [(f"Laboratory report, part {number}", page) for number, page in enumerate(pages, start=1)]
    make_pdf(path, parts, title=None, plain=True)


def make_minutes(path: Path, extra: str = "") -> None:
    decisions = [PARAPHRASE_PASSAGE, *([extra] if extra else [])]
    make_docx(path, "Board minutes", [("Attendance", [FILLER[1]]), ("Decisions", decisions)])


@pytest.fixture
def server_params(tmp_path: Path) -> StdioServerParameters:
    docs = tmp_path / "docs"
    docs.mkdir()
    env = {
        **os.environ,
        "INGESTION_MCP_ALLOWED_ROOTS": str(docs),
        "INGESTION_MCP_DATA_DIR": str(tmp_path / "data"),
        "HF_HUB_OFFLINE": "1",
    }
    for name in ("DOCLING_SERVICE_URL", "CHUNKER_SERVICE_URL", "VECTOR_GATEWAY_URL", "VECTOR_GATEWAY_MILVUS_URI"):
        env.pop(name, None)
    return StdioServerParameters(
        command=sys.executable, args=["-m", "ingestion_mcp.cli.server_command"], env=env, cwd=str(docs)
    )


def hits_for(result: dict, needle: str) -> list[dict]:
    return [r for r in result["results"] if needle in r["text"]]


async def test_agent_ingests_and_finds_passages(server_params: StdioServerParameters, tmp_path: Path) -> None:
    docs = Path(server_params.env["INGESTION_MCP_ALLOWED_ROOTS"])
    pdf_path, docx_path = docs / "lab-report.pdf", docs / "minutes.docx"
    make_report(pdf_path)
    make_minutes(docx_path)

    async with Client(server_params, read_timeout_seconds=300) as client:
        tools = {tool.name for tool in (await client.list_tools()).tools}
        assert {"ingest_document", "ingest_text", "search", "get_collections"} <= tools

        for path in (pdf_path, docx_path):
            out = await call(client, "ingest_document", file_path=str(path), response_format="detailed")
            assert out["success"] is True and out["status"] == "indexed", out
            assert out["chunks_created"] >= 1 and out["stages"]["embedding_ms"] > 0

        # Rare keywords only: BM25 finds it, in keyword and hybrid mode, on page 2 of the PDF.
        for mode in ("keyword", "hybrid"):
            found = await call(client, "search", query=KEYWORD_QUERY, mode=mode, top_k=3)
            top = found["results"][0]
            assert KEYWORD_PASSAGE[:40] in top["text"], (mode, found)
            assert top["page"] == 2 and top["source"].endswith("lab-report.pdf")

        # A paraphrase with no content word in common: BM25 cannot see it, the dense vector can.
        keyword = await call(client, "search", query=PARAPHRASE_QUERY, mode="keyword", top_k=5)
        assert not hits_for(keyword, "influenza")
        for mode in ("semantic", "hybrid"):
            found = await call(client, "search", query=PARAPHRASE_QUERY, mode=mode, top_k=3)
            assert "influenza" in found["results"][0]["text"], (mode, found)
            assert found["results"][0]["section"] == "Board minutes > Decisions"

        # Same content again: skipped. Changed content: replaced, and the old text is gone.
        again = await call(client, "ingest_document", file_path=str(pdf_path))
        assert again["status"] == "skipped" and again["chunks_created"] == 0

        make_minutes(docx_path, extra="Addendum: the vote now happens on the first Monday of the quarter.")
        # drop the old decision text entirely so its absence is observable
        doc = Document(str(docx_path))
        for paragraph in doc.paragraphs:
            if "influenza" in paragraph.text:
                paragraph.text = "The committee approved the budget for the coming year unanimously."
        doc.save(str(docx_path))
        replaced = await call(client, "ingest_document", file_path=str(docx_path))
        assert replaced["status"] == "replaced", replaced
        gone = await call(client, "search", query="influenza committee postponed", mode="keyword", top_k=10)
        assert not hits_for(gone, "influenza")
        new = await call(client, "search", query="budget approved unanimously", mode="keyword", top_k=3)
        assert "unanimously" in new["results"][0]["text"]

        collections = await call(client, "get_collections")
        assert collections["collections"][0]["name"] == "rag_gateway"
        assert collections["collections"][0]["document_count"] == 2
        stats = await call(client, "get_collections", collection="rag_gateway")
        assert sorted(stats["files"]) == ["lab-report.pdf", "minutes.docx"]


def rpc(message: dict) -> bytes:
    return json.dumps(message).encode() + b"\n"


async def answer_to(process: anyio.abc.Process, lines: list[bytes], wait_s: float) -> dict:
    """The next JSON-RPC message the server writes (stdout, one a line)."""
    assert process.stdout is not None
    with anyio.fail_after(wait_s):
        while b"\n" not in lines[0]:
            lines[0] += await process.stdout.receive()
    line, lines[0] = lines[0].split(b"\n", 1)
    return json.loads(line)


async def test_a_malformed_line_gets_a_json_rpc_error_and_the_next_request_is_served(
    server_params: StdioServerParameters,
) -> None:
    """A line with a lone UTF-16 surrogate, or not JSON, was dropped: the client waited until its timeout."""
    client = {"name": "raw", "version": "0"}
    hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
             "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": client}}  # fmt: skip
    surrogate = (
        b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search","arguments":{"query":"\\ud800"}}}\n'
    )
    async with await anyio.open_process(
        [server_params.command, *server_params.args], env=server_params.env, cwd=server_params.cwd,
        stderr=subprocess.DEVNULL,
    ) as process:  # fmt: skip
        assert process.stdin is not None
        pending = [b""]
        await process.stdin.send(rpc(hello))
        assert (await answer_to(process, pending, 300))["id"] == 1  # after the model has loaded
        await process.stdin.send(rpc({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        await process.stdin.send(surrogate)
        refused = await answer_to(process, pending, 10)
        assert refused["id"] == 2 and refused["error"]["code"] == -32600, refused
        await process.stdin.send(b'{"jsonrpc":"2.0","id":3,"method":"tools/li\n')
        refused = await answer_to(process, pending, 10)
        assert refused["id"] is None and refused["error"]["code"] == -32700, refused
        await process.stdin.send(rpc({"jsonrpc": "2.0", "id": 4, "method": "tools/list"}))
        listed = await answer_to(process, pending, 30)
        assert listed["id"] == 4 and "search" in {tool["name"] for tool in listed["result"]["tools"]}, listed
        await process.stdin.aclose()
