"""PDFs as users have them (issue 16), through the real MCP client over stdio with the embedded services.

A scanned memo, a photo of it and a born-digital revenue table are ingested from a folder; the memo is
found by words only OCR could read, on its page, and the answer about Asia's Q3 revenue comes back as a
table row under its header. On the code before issue 16 the scan and the PNG were refused ("contains no
extractable text", "Unsupported file type") and the table came out as sixteen one-word paragraphs.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import psutil
import pytest
from journeys import server_params
from mcp import Client
from service_stack import call

from bench.pdf_fixtures import fixtures, mixed

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]


async def test_scans_images_and_tables_are_searchable(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    wanted = {"scanned_memo.pdf", "memo.png", "ruled_table.pdf"}
    for fixture in fixtures():
        if fixture.name in wanted:
            (docs / fixture.name).write_bytes(fixture.data)
    (docs / "bulletin.pdf").write_bytes(mixed())
    async with Client(server_params(docs, tmp_path / "data"), read_timeout_seconds=600) as client:
        for name in sorted(wanted | {"bulletin.pdf"}):
            out = await call(client, "ingest_document", file_path=str(docs / name), response_format="detailed")
            assert out["success"] and out["status"] == "indexed", out
            if name != "ruled_table.pdf":
                assert any("OCR used on page(s)" in warning for warning in out["warnings"] or []), out

        found = await call(client, "search", query="north parking lot resurfacing south entrance", top_k=10)
        hits = {(r["title"], r["page"]) for r in found["results"] if "parking lot" in r["text"]}
        assert {title for title, _ in hits} == {"scanned_memo", "memo", "Harbour Office Bulletin"}, found["results"]
        # The bulletin is one chunk from page 1 to 3: it cites page 2, the scan that holds the words (issue 21);
        # before, it cited page 1, where the chunk starts. The scans are page 1.
        expected = {"scanned_memo": 1, "memo": 1, "Harbour Office Bulletin": 2}
        assert all(page == expected[title] for title, page in hits), hits
        bulletin = next(r for r in found["results"] if r["title"] == "Harbour Office Bulletin")
        assert bulletin["page_range"] == [1, 3], bulletin

        revenue = await call(client, "search", query="Asia revenue in Q3", top_k=3)
        top = revenue["results"][0]
        assert "| Asia | 310 | 298 | 356 |" in top["text"] and "| Region | Q1 | Q2 | Q3 |" in top["text"], top


def docling_workers(server: psutil.Process) -> list[psutil.Process]:
    """The docling worker processes under the MCP server: the children of its multiprocessing fork server."""
    servers = [p for p in server.children() if "multiprocessing.forkserver" in " ".join(p.cmdline())]
    return [worker for fork_server in servers for worker in fork_server.children()]


async def test_an_idle_laptop_server_holds_no_docling_worker_until_a_document_needs_one(tmp_path: Path) -> None:
    """Issue 21, bounded memory: the embedded default checks its converter at start, then lets that worker go (it
    held ~280 MB of an idle tree of 1.15 GB); the first document starts one, and the answer is the same."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "bulletin.pdf").write_bytes(mixed())
    params = server_params(docs, tmp_path / "data")
    assert params.env is not None
    params.env.pop("DOCLING_WORKER_WARM", None)  # the default, whatever this shell says
    async with Client(params, read_timeout_seconds=600) as client:
        await call(client, "get_collections")  # every service is up, the converter checked
        (server,) = [
            p for p in psutil.Process().children() if "ingestion_mcp.cli.server_command" in " ".join(p.cmdline())
        ]
        with anyio.fail_after(30):  # the checking worker exits once it answered
            while docling_workers(server):
                await anyio.sleep(0.1)
        out = await call(client, "ingest_document", file_path=str(docs / "bulletin.pdf"))
        assert out["success"] and out["status"] == "indexed", out
        assert len(docling_workers(server)) == 1  # started for the document, kept for the next until idle
        found = await call(client, "search", query="north parking lot resurfacing south entrance", top_k=3)
        assert found["results"][0]["title"] == "Harbour Office Bulletin", found
