"""The chatgpt profile against OpenAI's documented contract for ChatGPT connectors and deep research
(platform.openai.com/docs/mcp): exactly two tools; `search(query)` answers one text content item whose text is JSON
{"results": [{"id", "title", "url", "text"}]}; `fetch(id)` answers one text item with {"id", "title", "text", "url",
"metadata"}. Driven through the MCP SDK's client, on real documents: Debian's reference card (a PDF), a web page
over loopback HTTP, and a long Markdown text fetched in parts."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from ingestion_mcp.profiles.chatgpt.tools import FETCH_CHARS, SEARCH_CHARS
from ingestion_mcp.server import ProfileClash, build_server
from ingestion_mcp.sources import SourcePolicy
from ingestion_mcp.state import AppState
from mcp import Client
from mcp.types import CallToolResult

from scripts.system_files import REFCARD, system_file

from .conftest import SECTIONS, profile_state

COLLECTION = "chatgpt-profile"
RESULT = {"type": "object", "required": ["id", "title", "url", "text"], "additionalProperties": False,
          "properties": {name: {"type": "string"} for name in ("id", "title", "url", "text")}}  # fmt: skip
SEARCH_ANSWER = {"type": "object", "required": ["results"], "additionalProperties": False,
                 "properties": {"results": {"type": "array", "items": RESULT}}}  # fmt: skip
FETCH_ANSWER = {
    "type": "object", "required": ["id", "title", "text", "url", "metadata"], "additionalProperties": False,
    "properties": {**{name: {"type": "string"} for name in ("id", "title", "text", "url")},
                   "metadata": {"type": "object"}},
}  # fmt: skip


def one_text(answer: CallToolResult, schema: dict[str, Any] | None = None) -> dict[str, Any]:
    """The one text content item, parsed, checked against the documented shape when given."""
    assert len(answer.content) == 1 and answer.content[0].type == "text", answer.content
    data = json.loads(answer.content[0].text)
    if schema is not None:
        assert not answer.is_error, data
        jsonschema.validate(data, schema)
    return data


@pytest.fixture(scope="module")
async def corpus(app_state: AppState, docs_dir: Path, web_port: int) -> dict[str, str]:
    """The documents, ingested with the ingestion profile; their keys by kind."""
    pdf = docs_dir / "refcard-en-a4.pdf"
    pdf.write_bytes(gzip.decompress(system_file(REFCARD).read_bytes()))
    long_text = "\n\n".join(f"## {title} {i}\n\n" + " ".join([text] * 6) for i in range(100) for title, text in
                            SECTIONS.items() if title == "Volcanoes")  # fmt: skip
    state = profile_state(app_state, policy=SourcePolicy.build(allowed_hosts=[f"127.0.0.1:{web_port}"]))
    page = f"http://127.0.0.1:{web_port}/page.html"
    async with Client(build_server(state)) as client:
        for tool, args in (
            ("ingest_document", {"file_path": str(pdf)}),
            ("ingest_from_url", {"url": page}),
            ("ingest_text", {"text": "# Volcano atlas\n\n" + long_text, "name": "volcano-atlas"}),
        ):
            made = await client.call_tool(tool, args | {"collection": COLLECTION})
            assert not made.is_error and made.structured_content["status"] == "indexed", made.structured_content
    return {"pdf": str(pdf), "page": page, "text": "volcano-atlas"}


@pytest.fixture
def chatgpt(app_state: AppState) -> Callable[..., Client]:
    return lambda **settings: Client(build_server(profile_state(app_state, profiles=["chatgpt"], **settings)))


async def test_tools_list_is_exactly_search_and_fetch_each_taking_one_string(chatgpt) -> None:
    async with chatgpt() as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) == {"search", "fetch"}
    for name, argument in (("search", "query"), ("fetch", "id")):
        schema = tools[name].input_schema
        assert (list(schema["properties"]), schema["required"]) == ([argument], [argument])
        assert schema["properties"][argument]["type"] == "string" and tools[name].annotations.read_only_hint


async def test_every_id_search_gives_fetch_resolves_with_a_real_link(chatgpt, corpus) -> None:
    async with chatgpt() as client:
        answer = await client.call_tool("search", {"query": "reconfigure after changing the default grub settings"})
        results = one_text(answer, SEARCH_ANSWER)["results"]
        assert len(answer.content[0].text) <= SEARCH_CHARS and len({r["id"] for r in results}) == len(results)
        top = results[0]
        assert top["url"] == Path(corpus["pdf"]).as_uri()
        assert "update-grub" in top["text"] and "p. 2" in top["text"]
        for result in results:
            document = one_text(await client.call_tool("fetch", {"id": result["id"]}), FETCH_ANSWER)
            assert (document["id"], document["title"], document["url"]) == (
                result["id"],
                result["title"],
                result["url"],
            )
        card = one_text(await client.call_tool("fetch", {"id": top["id"]}), FETCH_ANSWER)
        assert "update-grub" in card["text"] and card["metadata"]["pages"] == 2 and card["metadata"]["parts"] == 1
        assert card["metadata"]["file_type"] == "pdf" and card["metadata"]["collection"] == COLLECTION
        kites = one_text(await client.call_tool("search", {"query": "why does a kite fly"}), SEARCH_ANSWER)["results"]
        assert corpus["page"] in [r["url"] for r in kites]  # a web page's own address


async def test_over_http_a_document_links_to_its_console_page(chatgpt, corpus) -> None:
    async with chatgpt(transport="streamable-http", public_url="https://mcp.example.com/") as client:
        results = one_text(await client.call_tool("search", {"query": "update-grub"}), SEARCH_ANSWER)["results"]
    card = next(r for r in results if "update-grub" in r["text"])
    doc_id = card["id"].split(":")[1]
    assert card["url"] == f"https://mcp.example.com/collections/{COLLECTION}/documents/{doc_id}"


async def test_a_long_document_comes_in_parts_that_add_up_to_it(chatgpt, corpus, app_state: AppState) -> None:
    async with chatgpt() as client:
        stored_doc = await app_state.library.find(COLLECTION, corpus["text"])
        assert stored_doc is not None
        results = one_text(await client.call_tool("search", {"query": "volcano atlas"}), SEARCH_ANSWER)["results"]
        (atlas,) = [r for r in results if r["id"] == f"{COLLECTION}:{stored_doc.doc_id}"]
        texts, next_id, parts = [], atlas["id"], 0
        while next_id:
            answer = await client.call_tool("fetch", {"id": next_id})
            assert len(answer.content[0].text) <= FETCH_CHARS + 2_000  # the part, its note and the envelope
            document = one_text(answer, FETCH_ANSWER)
            parts, next_id = document["metadata"]["parts"], document["metadata"].get("next_id")
            texts.append(document["text"].split("\n\n[Part ")[0] if next_id else document["text"])
    collection, doc_id = atlas["id"].split(":")
    stored = (await app_state.library.document(collection, doc_id)).content
    assert parts >= 3 and len(texts) == parts and "".join(texts) == stored


@pytest.mark.parametrize(
    ("tool", "arguments", "says"),
    [("fetch", {"id": "not an id"}, "is not a document id"), ("fetch", {"id": "no-such-coll:abcdef"}, "No document"),
     ("fetch", {"id": "no-such-coll:abcdef:0"}, "is not a document id"), ("search", {}, "query"),
     ("fetch", {"id": ""}, "id")],
)  # fmt: skip
async def test_a_slip_answers_one_text_item_that_says_what_to_do(chatgpt, tool, arguments, says) -> None:
    async with chatgpt() as client:
        answer = await client.call_tool(tool, arguments)
    error = one_text(answer)
    assert answer.is_error and says in error["error"] and answer.structured_content is None, error


async def test_a_part_past_the_last_is_refused(chatgpt, corpus) -> None:
    async with chatgpt() as client:
        results = one_text(await client.call_tool("search", {"query": "update-grub"}), SEARCH_ANSWER)["results"]
        answer = await client.call_tool("fetch", {"id": results[0]["id"] + ":9"})
    assert answer.is_error and "there is no part 9" in one_text(answer)["error"]


def test_chatgpt_combines_with_profiles_whose_names_differ_and_refuses_a_clash(app_state: AppState) -> None:
    combined = build_server(profile_state(app_state, profiles=["chatgpt", "docs_server", "obsidian"]))
    assert {"search", "fetch", "search_documents", "vector_search"} <= set(combined.tool_profiles)
    for other in ("ingestion", "mcpvectordb"):
        with pytest.raises(ProfileClash, match=f"'{other}' and 'chatgpt' both define the tool 'search'"):
            build_server(profile_state(app_state, profiles=[other, "chatgpt"]))
    env = os.environ | {"INGESTION_MCP_PROFILES": "chatgpt,ingestion"}  # the server refuses to start, saying why
    command = [sys.executable, "-m", "ingestion_mcp.cli.server_command"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2 and "both define the tool 'search'" in done.stderr, done.stderr[-2000:]
