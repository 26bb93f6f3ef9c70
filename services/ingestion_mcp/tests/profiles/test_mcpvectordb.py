"""The mcpvectordb profile against shared/specs/mcpvectordb-tools.md, through a real MCP client session
over the embedded services (real docling, chunker, gateway, Milvus Lite and model)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from ingestion_mcp.server import build_server
from ingestion_mcp.sources import SourcePolicy
from ingestion_mcp.state import AppState
from mcp import Client

from .conftest import guide_markdown, profile_state

pytestmark = pytest.mark.timeout(300)

INGEST_KEYS = {"status", "doc_id", "source", "library", "chunk_count"}
CHUNK_KEYS = {
    "doc_id", "source", "title", "library", "file_type", "last_modified", "page", "content", "chunk_index", "metadata",
}  # fmt: skip
DOCUMENT_KEYS = {"doc_id", "source", "title", "library", "content_hash", "created_at", "metadata", "chunk_count"}
TOOLS = {"ingest_file", "ingest_url", "search", "list_documents", "list_libraries", "delete_document", "get_document"}
KITES = "# Kites\n\nA kite flies because the wind pushes against its sail while the line holds it at an angle.\n"
ORCHARD = "# Orchard\n\nPrune apple trees in late winter while they are dormant, so light reaches the canopy.\n"


@pytest.fixture(scope="module")
def vectordb_state(app_state: AppState, web_port: int) -> AppState:
    policy = SourcePolicy.build(allowed_hosts=[f"127.0.0.1:{web_port}"], total_timeout_s=30)
    return profile_state(app_state, profiles=["mcpvectordb"], policy=policy)


@pytest.fixture
def vectordb(vectordb_state: AppState) -> Callable[[], Client]:
    return lambda: Client(build_server(vectordb_state))


@pytest.fixture
def library() -> Callable[[str], str]:
    return lambda prefix: f"{prefix}_{uuid.uuid4().hex[:8]}"


@pytest.fixture
def write(docs_dir: Path) -> Callable[[str, str], Path]:
    def written(name: str, text: str) -> Path:
        path = docs_dir / name
        path.write_text(text)
        return path

    return written


async def ok(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    response = await client.call_tool(tool, arguments)
    assert not response.is_error, response.content
    assert response.structured_content.get("status") != "error", response.structured_content
    return response.structured_content


async def error(client: Client, tool: str, **arguments: Any) -> str:
    response = await client.call_tool(tool, arguments)
    assert response.is_error
    assert set(response.structured_content) == {"status", "error"}, response.structured_content
    assert response.structured_content["status"] == "error"
    return response.structured_content["error"]


def props(tool: Any) -> dict[str, Any]:
    return tool.input_schema.get("properties", {})


async def test_server_identity_and_tool_parameters(vectordb) -> None:
    async with vectordb() as client:
        assert (client.server_info.name, client.server_info.version) == ("mcpvectordb", "0.2.0")
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) == TOOLS
    for name in ("ingest_file", "ingest_url"):
        schema = tools[name].input_schema
        assert schema["required"] == [name.removeprefix("ingest_").replace("file", "path")]
        arguments = props(tools[name])
        # nullable is listed as optional (docs/schemas.md): no null default, one type
        assert (arguments["library"]["default"], arguments["metadata"]["type"]) == ("default", "object")
        assert "default" not in arguments["metadata"]
    search = props(tools["search"])
    assert tools["search"].input_schema["required"] == ["query"]
    assert (search["top_k"]["default"], search["top_k"]["minimum"], search["top_k"]["maximum"]) == (5, 1, 100)
    assert "default" not in search["library"] and "default" not in search["filter"]  # optional, never null
    listing = props(tools["list_documents"])
    assert (listing["limit"]["default"], listing["limit"]["minimum"], listing["limit"]["maximum"]) == (20, 1, 1000)
    assert listing["offset"]["default"] == 0 and "default" not in listing["library"]
    assert props(tools["list_libraries"]) == {}
    assert tools["delete_document"].input_schema["required"] == tools["get_document"].input_schema["required"]
    assert tools["delete_document"].annotations.destructive_hint and tools["search"].annotations.read_only_hint


async def test_ingest_file_indexed_skipped_replaced_by_content_hash(vectordb, write, library, docs_dir) -> None:
    name = library("files")
    path = write(f"{name}.md", KITES)
    async with vectordb() as client:
        first = await ok(client, "ingest_file", path=str(path), library=name, metadata={"team": "blue"})
        assert set(first) == INGEST_KEYS and first["status"] == "indexed"
        assert (first["source"], first["library"]) == (str(path.resolve()), name) and first["chunk_count"] >= 1
        # relative to the allowed root: the same (path, library), the same content and metadata
        relative = await ok(client, "ingest_file", path=path.name, library=name, metadata={"team": "blue"})
        assert (relative["status"], relative["doc_id"]) == ("skipped", first["doc_id"])
        # New metadata on the same content: the spec knows no "updated", so it is a replace (not re-embedded).
        retagged = await ok(client, "ingest_file", path=str(path), library=name, metadata={"team": "red"})
        assert (retagged["status"], retagged["doc_id"]) == ("replaced", first["doc_id"])
        listed = await ok(client, "list_documents", library=name)
        assert listed["documents"][0]["metadata"] == {"team": "red"}
        path.write_text(KITES + "\nA box kite has no tail and is stable in strong wind.\n")
        changed = await ok(client, "ingest_file", path=str(path), library=name)
        assert (changed["status"], changed["doc_id"]) == ("replaced", first["doc_id"])
        listed = await ok(client, "list_documents", library=name)
        assert listed["count"] == 1 and listed["documents"][0]["content_hash"] != ""
        missing = await error(client, "ingest_file", path=str(docs_dir / "absent.md"))
        assert "File not found" in missing
        assert "allowed" in (await error(client, "ingest_file", path="/etc/passwd")).lower()


async def test_ingest_file_defaults_to_the_default_library(vectordb, write, library) -> None:
    path = write(f"{library('plain')}.md", ORCHARD)
    async with vectordb() as client:
        out = await ok(client, "ingest_file", path=str(path))
        assert out["library"] == "default"
        assert (await ok(client, "delete_document", doc_id=out["doc_id"]))["status"] == "deleted"


async def test_ingest_url_fetches_indexes_and_dedups(vectordb, web_port, library) -> None:
    name = library("urls")
    url = f"http://127.0.0.1:{web_port}/page.html"
    async with vectordb() as client:
        first = await ok(client, "ingest_url", url=url, library=name)
        assert set(first) == INGEST_KEYS
        assert (first["status"], first["source"], first["library"]) == ("indexed", url, name)
        assert (await ok(client, "ingest_url", url=url, library=name))["status"] == "skipped"
        found = await ok(client, "search", query="why does a kite fly", library=name)
        assert found["results"][0]["source"] == url and "wind" in found["results"][0]["content"]
        refused = await error(client, "ingest_url", url="http://169.254.169.254/latest/meta-data/", library=name)
        assert refused


async def test_search_fields_filters_and_library(vectordb, write, library) -> None:
    first, second = library("lib_a"), library("lib_b")
    async with vectordb() as client:
        kites = await ok(client, "ingest_file", path=str(write(f"{first}.md", KITES)), library=first,
                         metadata={"topic": "kites"})  # fmt: skip
        await ok(client, "ingest_file", path=str(write(f"{second}.md", ORCHARD)), library=second)
        found = await ok(client, "search", query="kite wind sail", library=first, top_k=3)
        assert set(found) == {"results"} and 1 <= len(found["results"]) <= 3
        hit = found["results"][0]
        assert set(hit) == CHUNK_KEYS and (hit["doc_id"], hit["library"]) == (kites["doc_id"], first)
        assert (hit["file_type"], hit["page"], hit["metadata"]) == ("md", 0, {"topic": "kites"})
        in_filter = await ok(client, "search", query="kite wind sail", filter={"library": first})
        assert in_filter["results"] == found["results"]
        exact = {"library": second, "file_type": "md", "chunk_index": 0}
        typed = await ok(client, "search", query="apple", filter=exact)
        assert [r["library"] for r in typed["results"]] == [second]
        none = await ok(client, "search", query="apple", filter={"library": second, "file_type": "pdf"})
        assert none == {"results": []}
        hostile = await ok(client, "search", query="apple", filter={"library": second, "title": 'x" or title != "'})
        assert hostile == {"results": []}
        # Any other key is a metadata key, as users put them there; a malformed key is refused.
        by_meta = await ok(client, "search", query="kite wind", filter={"topic": "kites"})
        assert by_meta["results"] and all(r["metadata"] == {"topic": "kites"} for r in by_meta["results"])
        assert await ok(client, "search", query="kite", filter={"colour": "red"}) == {"results": []}
        assert "'bad key!'" in await error(client, "search", query="kite", filter={"bad key!": "red"})
        assert "contradicts" in await error(client, "search", query="kite", library=first, filter={"library": second})
        unknown = await error(client, "search", query="kite", library="no_such_library")
        assert "Library 'no_such_library' not found" in unknown and first in unknown
        one = await ok(client, "search", query="kite", top_k=1)
        assert len(one["results"]) == 1
        too_many = await client.call_tool("search", {"query": "kite", "top_k": 101})
        assert too_many.is_error


async def test_list_documents_pages_across_libraries(vectordb, write, library) -> None:
    first, second = library("page_a"), library("page_b")
    async with vectordb() as client:
        for index in range(3):
            await ok(client, "ingest_file", path=str(write(f"{first}_{index}.md", f"{KITES}\nCopy {index}.\n")),
                     library=first)  # fmt: skip
        await ok(client, "ingest_file", path=str(write(f"{second}.md", ORCHARD)), library=second)
        everything = await ok(client, "list_documents", limit=1000)
        assert everything["count"] == len(everything["documents"])
        assert all(set(doc) == DOCUMENT_KEYS for doc in everything["documents"])
        order = [doc["library"] for doc in everything["documents"]]
        assert order == sorted(order) and order.count(first) == 3 and order.count(second) == 1
        pages = []
        for offset in range(0, len(everything["documents"]), 2):
            page = await ok(client, "list_documents", limit=2, offset=offset)
            assert page["count"] == len(page["documents"]) <= 2
            pages += page["documents"]
        assert [d["doc_id"] for d in pages] == [d["doc_id"] for d in everything["documents"]]
        only = await ok(client, "list_documents", library=first, limit=2, offset=2)
        assert [d["library"] for d in only["documents"]] == [first] and only["count"] == 1
        beyond = await ok(client, "list_documents", library=first, offset=10)
        assert beyond == {"documents": [], "count": 0}
        assert "Library 'nope_nope' not found" in await error(client, "list_documents", library="nope_nope")


async def test_get_document_rebuilds_the_text_and_delete_removes_it(vectordb, write, library) -> None:
    name = library("whole")
    text = guide_markdown()
    async with vectordb() as client:
        made = await ok(client, "ingest_file", path=str(write(f"{name}.md", text)), library=name,
                        metadata={"kind": "guide"})  # fmt: skip
        assert made["chunk_count"] > 1
        doc = await ok(client, "get_document", doc_id=made["doc_id"])
        assert set(doc) == {"doc_id", "source", "title", "library", "content", "chunk_count", "metadata"}
        assert doc["content"].strip() == text.strip()
        assert (doc["library"], doc["chunk_count"], doc["metadata"]) == (name, made["chunk_count"], {"kind": "guide"})
        libraries = {row["library"]: row for row in (await ok(client, "list_libraries"))["libraries"]}
        assert libraries[name] == {"library": name, "document_count": 1, "chunk_count": made["chunk_count"]}
        deleted = await ok(client, "delete_document", doc_id=made["doc_id"])
        assert deleted == {"status": "deleted", "doc_id": made["doc_id"], "deleted_chunks": made["chunk_count"]}
        assert "Document not found" in await error(client, "get_document", doc_id=made["doc_id"])
        assert "Document not found" in await error(client, "delete_document", doc_id=made["doc_id"])
        after = {row["library"]: row for row in (await ok(client, "list_libraries"))["libraries"]}
        assert (after[name]["document_count"], after[name]["chunk_count"]) == (0, 0)


async def test_list_libraries_counts_match_the_documents(vectordb, write, library) -> None:
    name = library("counts")
    async with vectordb() as client:
        made = [
            await ok(client, "ingest_file", path=str(write(f"{name}_{i}.md", text)), library=name)
            for i, text in enumerate((KITES, ORCHARD))
        ]
        listed = await ok(client, "list_libraries")
        assert set(listed) == {"libraries"}
        row = next(r for r in listed["libraries"] if r["library"] == name)
        assert row == {"library": name, "document_count": 2, "chunk_count": sum(m["chunk_count"] for m in made)}
        assert not any(r["library"].startswith("_") for r in listed["libraries"])


async def test_libraries_take_the_names_users_write(vectordb, write) -> None:
    tag = uuid.uuid4().hex[:8]
    names = [f"my-lib-{tag}", f"team.docs-v2.{tag}", f"my_lib_{tag}", f"{tag}-" + "x" * (255 - len(tag) - 1)]
    async with vectordb() as client:
        made = {}
        for index, (name, text) in enumerate(zip(names, (KITES, ORCHARD, KITES, ORCHARD), strict=True)):
            made[name] = await ok(client, "ingest_file", path=str(write(f"names_{tag}_{index}.md", text)), library=name)
            assert made[name]["library"] == name and made[name]["status"] == "indexed"
        found = await ok(client, "search", query="kite wind sail", library=names[0], top_k=3)
        assert {r["library"] for r in found["results"]} == {names[0]}
        assert found["results"][0]["doc_id"] == made[names[0]]["doc_id"]
        apples = await ok(client, "search", query="prune apple trees", filter={"library": names[1]})
        assert apples["results"] and {r["library"] for r in apples["results"]} == {names[1]}
        listed = await ok(client, "list_documents", library=names[3])
        assert [d["library"] for d in listed["documents"]] == [names[3]]
        libraries = {row["library"]: row for row in (await ok(client, "list_libraries"))["libraries"]}
        for name in names:  # exactly as given; 'my-lib' and 'my_lib' are two libraries
            assert libraries[name]["document_count"] == 1, name
        assert not [n for n in libraries if n.startswith("_")]
        too_long = await error(client, "ingest_file", path="unused.md", library="y" * 256)
        assert "1-255 letters, digits, '-', '_' or '.'" in too_long and "for example" in too_long
        for hostile in ("../x", "a?limit=1", ".", "-x", "a/b"):
            refused = await error(client, "search", query="kite", library=hostile)
            assert "Invalid name" in refused and "for example" in refused, refused
