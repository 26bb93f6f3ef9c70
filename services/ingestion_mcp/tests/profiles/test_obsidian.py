"""The obsidian profile against shared/specs/obsidian-vector-search.md, through a real MCP client session."""

from __future__ import annotations

import json
from typing import Any

import pytest
from ingestion_mcp.ingest.notes import folder_tag, folder_tags
from ingestion_mcp.server import build_server
from mcp import Client

from .conftest import NOTES, profile_state

pytestmark = pytest.mark.timeout(300)

RESULT_KEYS = {"path", "title", "folder", "score", "content_preview", "chunk_index", "total_chunks"}
STATUS_KEYS = {
    "status", "collection_name", "total_documents", "total_notes", "embedding_provider", "embedding_dimension",
    "last_updated", "chroma_path",
}  # fmt: skip


async def answer(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    """The tool's JSON string, parsed (the spec's tools return a string)."""
    response = await client.call_tool(tool, arguments)
    assert not response.is_error, response.content
    text = response.content[0].text
    assert response.structured_content == {"result": text}
    parsed = json.loads(text)
    assert text == json.dumps(parsed, ensure_ascii=False, separators=(",", ":")), "not compact JSON"
    return parsed


async def failure(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    response = await client.call_tool(tool, arguments)
    assert response.is_error
    error = json.loads(response.content[0].text)
    assert set(error) == {"error", "error_type", "message"} and error["error"] is True
    return error


async def test_tools_parameters_and_string_results(notes_mcp: Any) -> None:
    async with notes_mcp() as notes_client:
        tools = {tool.name: tool for tool in (await notes_client.list_tools()).tools}
        assert set(tools) == {"vector_search", "find_similar_notes", "vector_status"}
        search = tools["vector_search"].input_schema
        assert search["required"] == ["query"] and set(search["properties"]) == {"query", "n_results", "folder"}
        n_results = search["properties"]["n_results"]
        assert (n_results["default"], n_results["minimum"], n_results["maximum"]) == (10, 1, 100)
        assert search["properties"]["folder"]["type"] == "string" and "default" not in search["properties"]["folder"]
        similar = tools["find_similar_notes"].input_schema
        assert similar["required"] == ["path"] and set(similar["properties"]) == {"path", "n_results"}
        n_similar = similar["properties"]["n_results"]
        assert (n_similar["default"], n_similar["minimum"], n_similar["maximum"]) == (5, 1, 50)
        assert tools["vector_status"].input_schema.get("properties") == {}
        for tool in tools.values():
            assert tool.output_schema["properties"]["result"]["type"] == "string"
            assert tool.annotations.read_only_hint is True


def test_folder_tags_cover_every_ancestor() -> None:
    assert folder_tags("Projects/Sub/Deep/Note.md") == [
        "folder:Projects",
        "folder:Projects/Sub",
        "folder:Projects/Sub/Deep",
    ]
    assert folder_tags("Root.md") == []
    long = "a" * 80
    assert len(folder_tag(long)) <= 64 and folder_tag(long) == folder_tag(long) != folder_tag(long + "b")


async def test_vector_search_shape_and_ranking(notes_mcp: Any) -> None:
    async with notes_mcp() as notes_client:
        out = await answer(notes_client, "vector_search", query="watering the garden when the soil is dry", n_results=3)
        assert set(out) == {"results", "total", "query"} and out["total"] == len(out["results"]) <= 3
        top = out["results"][0]
        assert set(top) == RESULT_KEYS
        assert top["path"] in ("Projects/Garden.md", "Projects/Sub/Sensors.md")
        garden = next(r for r in out["results"] if r["path"] == "Projects/Garden.md")
        assert (garden["title"], garden["folder"]) == ("Garden", "Projects")
        assert 0 <= garden["chunk_index"] < garden["total_chunks"] and 0 < garden["score"] <= 1
        assert garden["content_preview"] in NOTES["Projects/Garden.md"] or garden["content_preview"].endswith("...")


async def test_folder_filter_includes_subfolders_and_nothing_else(notes_mcp: Any) -> None:
    async with notes_mcp() as notes_client:
        query = "soil moisture irrigation"
        projects = await answer(notes_client, "vector_search", query=query, folder="Projects")
        assert {r["path"] for r in projects["results"]} == {"Projects/Garden.md", "Projects/Sub/Sensors.md"}
        sub = await answer(notes_client, "vector_search", query=query, folder="Projects/Sub/")
        assert {r["path"] for r in sub["results"]} == {"Projects/Sub/Sensors.md"}
        areas = await answer(notes_client, "vector_search", query=query, folder="Areas")
        assert {r["path"] for r in areas["results"]} == {"Areas/Cooking.md"}
        assert (await answer(notes_client, "vector_search", query=query, folder="Proj"))["results"] == []
        bad = await failure(notes_client, "vector_search", query=query, folder="../etc")
        assert bad["error_type"] == "ConfigurationError"


async def test_find_similar_notes(notes_mcp: Any) -> None:
    async with notes_mcp() as notes_client:
        out = await answer(notes_client, "find_similar_notes", path="Projects/Garden.md", n_results=2)
        assert set(out) == {"source_note", "similar_notes", "total"} and out["source_note"] == "Projects/Garden.md"
        assert out["total"] == len(out["similar_notes"]) == 2
        assert out["similar_notes"][0]["path"] == "Projects/Sub/Sensors.md"
        assert "Projects/Garden.md" not in [n["path"] for n in out["similar_notes"]]
        assert all(set(n) == RESULT_KEYS for n in out["similar_notes"])
        missing = await failure(notes_client, "find_similar_notes", path="Projects/Nope.md")
        assert missing["error_type"] == "NoteNotFoundError" and "Projects/Nope.md" in missing["message"]


async def test_vector_status_ready(notes_mcp: Any, notes_state: Any) -> None:
    async with notes_mcp() as notes_client:
        status = await answer(notes_client, "vector_status")
        assert set(status) == STATUS_KEYS
        assert status["status"] == "ready" and status["collection_name"] == "obsidian_profile"
        assert status["total_notes"] == len(NOTES) and status["total_documents"] >= len(NOTES)
        assert status["embedding_dimension"] == 384 and status["embedding_provider"] == "default"
        assert status["last_updated"] and status["chroma_path"] == str(notes_state.settings.data_dir.resolve())


async def test_empty_index_status_and_index_not_found(app_state: Any) -> None:
    state = profile_state(app_state, profiles=["obsidian"], obsidian_collection="obsidian_never_indexed")
    async with Client(build_server(state)) as client:
        status = await answer(client, "vector_status")
        assert (status["status"], status["total_documents"], status["total_notes"]) == ("empty", 0, 0)
        assert status["last_updated"] is None and set(status) == STATUS_KEYS
        missing = await failure(client, "vector_search", query="anything")
        assert missing["error_type"] == "IndexNotFoundError"
        assert missing["message"] == "Vector index not found. Run 'ingestion-index full' to create index."
        assert (await failure(client, "find_similar_notes", path="a.md"))["error_type"] == "IndexNotFoundError"


async def test_out_of_range_n_results_is_refused(notes_mcp: Any) -> None:
    async with notes_mcp() as notes_client:
        for tool, args in (
            ("vector_search", {"query": "x", "n_results": 101}),
            ("find_similar_notes", {"path": "a.md", "n_results": 51}),
        ):
            assert (await notes_client.call_tool(tool, args)).is_error
