"""The primary tool set through a real MCP client session (in-process), real services behind it."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from ingestion_mcp.server import HINT_DEFAULTS

pytestmark = pytest.mark.timeout(300)

NOTE = (
    "# Field notes\n\n## Glaciers\n\nThe Perito Moreno glacier advances about two metres a day, "
    "and its ice front collapses into Lago Argentino every few years in a rupture event.\n\n"
    "## Volcanoes\n\nKilauea erupted continuously from 1983 to 2018, adding new land to the island."
)
PLAN_TOOLS = {
    "ingest_document", "ingest_text", "ingest_batch", "get_collections", "search", "list_documents",
    "get_document", "delete_document", "find_similar", "get_job_status", "list_active_jobs",
    "create_collection", "delete_collection",
}  # fmt: skip


def hint(tool: Any, name: str) -> bool:
    """A tool's hint as the client reads it: a hint left out means the spec's default."""
    value = getattr(tool.annotations, name)
    return HINT_DEFAULTS[name] if value is None else bool(value)


async def test_tools_have_bounds_output_schemas_and_truthful_annotations(connect) -> None:
    async with connect() as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert set(tools) >= PLAN_TOOLS
        for tool in tools.values():
            assert tool.output_schema and tool.description and tool.annotations, tool.name
        assert hint(tools["search"], "read_only_hint") is True
        assert hint(tools["delete_document"], "destructive_hint") is True
        assert hint(tools["ingest_text"], "read_only_hint") is False
        assert hint(tools["ingest_text"], "destructive_hint") is False
        top_k = tools["search"].input_schema["properties"]["top_k"]
        assert (top_k["minimum"], top_k["maximum"]) == (1, 100)
        # chunking's and response_format's values are said once, in the instructions, not in every tool's schema;
        # the tool still refuses any other value, naming them.
        assert tools["ingest_text"].input_schema["properties"]["chunking"] == {"type": "string"}
        assert all(f"{value}:" in (client.instructions or "") for value in ("default", "dense", "sparse"))
        refused = await client.call_tool("ingest_text", {"text": NOTE, "chunking": "huge"})
        assert refused.is_error and "'default', 'dense' or 'sparse'" in str(refused.structured_content), refused


async def test_ingest_text_concise_then_detailed_then_search(connect, call_tool) -> None:
    async with connect() as client:
        out = await call_tool(client, "ingest_text", text=NOTE, name="field-notes", collection="notes_a")
        assert out == {  # is_error: the call helper's, from the MCP result
            "success": True, "status": "indexed", "name": "field-notes", "collection": "notes_a",
            "chunks_created": out["chunks_created"], "message": out["message"], "is_error": False,
        }  # fmt: skip
        assert out["message"].startswith("Successfully ingested text 'field-notes' into notes_a (")
        again = await call_tool(client, "ingest_text", text=NOTE, name="field-notes", collection="notes_a",
                                response_format="detailed")  # fmt: skip
        assert again["status"] == "skipped" and "doc_id" in again
        found = await call_tool(client, "search", query="Perito Moreno rupture", collection="notes_a")
        assert found["results"][0]["section"] == "Field notes > Glaciers"
        assert found["results"][0]["title"] == "field-notes"


async def test_errors_are_instructive_and_never_raise(connect, call_tool, docs_dir: Path) -> None:
    async with connect() as client:
        missing = await client.call_tool("ingest_document", {"file_path": str(docs_dir / "nope.pdf")})
        assert missing.is_error and missing.structured_content["success"] is False
        assert "File not found" in missing.structured_content["error"] and missing.structured_content["suggestion"]

        (docs_dir / "data.xyz").write_text("x" * 100)
        bad_type = await call_tool(client, "ingest_document", file_path=str(docs_dir / "data.xyz"))
        assert bad_type["error"].startswith("Unsupported file type: .xyz. Supported types: PDF, DOCX")

        outside = await call_tool(client, "ingest_document", file_path="/etc/passwd")
        assert outside["success"] is False and "allowed" in outside["error"].lower()

        short = await call_tool(client, "ingest_text", text="too short to chunk")
        assert short["error"].startswith("Text too short (18 characters). Minimum is 50")

        before = (await call_tool(client, "get_collections"))["collections"]
        noise = await call_tool(client, "ingest_text", text="\x00\x01\x02 *** ---" * 20, name="noise")
        assert noise["success"] is False and noise["error"].startswith("Text has no letters or digits"), noise
        assert (await call_tool(client, "get_collections"))["collections"] == before  # nothing written


async def test_get_collections_shows_each_collection_s_chunks_its_index_and_its_precision(connect, call_tool) -> None:
    async with connect() as client:
        made = await call_tool(client, "ingest_text", text=NOTE, name="sized", collection="notes_sized")
        listed = await call_tool(client, "get_collections")
        mine = next(c for c in listed["collections"] if c["name"] == "notes_sized")
        assert (mine["document_count"], mine["chunk_count"], mine["engine"]) == (1, made["chunks_created"], "lance")
        one = await call_tool(client, "get_collections", collection="notes_sized")
        precision = "int8" if "+int8" in one["embedding_model"] else "fp32"  # the vectors' own mark (+int8pc)
        assert mine["precision"] == one["precision"] == precision
        assert f"chunks (index: lance; vectors: {precision})" in listed["message"], listed["message"]
        assert (one["chunk_count"], one["engine"]) == (made["chunks_created"], "lance")
        assert one["message"].startswith(f"Collection 'notes_sized' contains {made['chunks_created']} chunks from 1 "
                                         f"files (index: lance; vectors: {precision})"), one["message"]  # fmt: skip


async def test_unknown_collection_lists_the_available_ones(connect, call_tool) -> None:
    async with connect() as client:
        await call_tool(client, "ingest_text", text=NOTE, name="notes-b", collection="notes_b")
        out = await call_tool(client, "get_collections", collection="no_such_collection")
        assert out["success"] is False and "notes_b" in out["available_collections"]
        assert "notes_b" in out["error"] and out["suggestion"].startswith("Use one of the available collections")
        searched = await call_tool(client, "search", query="glacier", collection="no_such_collection")
        assert searched["success"] is False and "notes_b" in searched["available_collections"]
        # A name is one path segment, never a path: it cannot reach the gateway's other endpoints.
        for hostile in ("notes_b/documents", "../vector-stores/default", "a?limit=1", "notes_b/../notes_b", "%2e%2e"):
            out = await call_tool(client, "get_collections", collection=hostile)
            assert out["success"] is False and ("not found" in out["error"] or "Invalid name" in out["error"]), out


async def test_filter_injection_and_unknown_keys_are_refused(connect, call_tool) -> None:
    async with connect() as client:
        await call_tool(client, "ingest_text", text=NOTE, name="notes-c", collection="notes_c")
        injected = await call_tool(
            client, "search", query="glacier", collection="notes_c", filters={"title": 'x" or doc_id != "'}
        )
        assert injected["success"] is True and injected["results"] == []
        unknown = await call_tool(client, "search", query="glacier", filters={"colour": "red"})
        assert unknown["success"] is False and "Unknown filter key 'colour'" in unknown["error"]


async def test_library_tools_list_read_and_delete(connect, call_tool) -> None:
    async with connect() as client:
        made = await call_tool(client, "ingest_text", text=NOTE, name="library-doc", collection="notes_d",
                               response_format="detailed")  # fmt: skip
        listed = await call_tool(client, "list_documents", collection="notes_d")
        assert [d["name"] for d in listed["documents"]] == ["library-doc"] and listed["total"] == 1
        doc = await call_tool(client, "get_document", doc_id=made["doc_id"], collection="notes_d")
        assert doc["content"] == NOTE
        deleted = await call_tool(client, "delete_document", doc_id=made["doc_id"], collection="notes_d")
        assert deleted["deleted_chunks"] == made["chunks_created"]
        gone = await call_tool(client, "get_document", doc_id=made["doc_id"], collection="notes_d")
        assert gone["success"] is False and "not found" in gone["error"]


async def test_batch_lands_good_items_and_reports_bad_ones(connect, call_tool, docs_dir: Path) -> None:
    async with connect() as client:
        items = [
            {"text": NOTE.replace("Glaciers", "Ice"), "name": "batch-1"},
            {"text": "short", "name": "batch-2"},
            {"file_path": str(docs_dir / "missing.docx")},
        ]
        out = await call_tool(client, "ingest_batch", items=items, collection="notes_e")
        assert (out["succeeded"], out["failed"]) == (1, 2)
        assert [r["success"] for r in out["results"]] == [True, False, False]
        assert json.dumps(out).count("Text too short") == 1


async def test_collections_take_the_names_users_write(connect, call_tool) -> None:
    stem = f"legal-docs.2026-{uuid.uuid4().hex[:8]}"
    longest = stem + "." + "x" * (254 - len(stem))
    async with connect() as client:
        for name in (stem, longest):
            out = await call_tool(client, "ingest_text", text=NOTE, name="field-notes", collection=name)
            assert out["success"] is True and out["collection"] == name, out
            found = await call_tool(client, "search", query="Perito Moreno rupture", collection=name)
            assert found["results"][0]["section"] == "Field notes > Glaciers"
            one = await call_tool(client, "get_collections", collection=name)
            assert (one["name"], one["document_count"]) == (name, 1), one
        listed = {c["name"] for c in (await call_tool(client, "get_collections"))["collections"]}
        assert {stem, longest} <= listed and not [n for n in listed if n.startswith("_")]
        assert len(longest) == 255
        refused = await call_tool(client, "ingest_text", text=NOTE, name="field-notes", collection=longest + "x")
        assert refused["success"] is False and "1-255 letters, digits, '-', '_' or '.'" in refused["error"], refused
        for hostile in ("../x", "a?limit=1", "..", "_documents"):
            out = await call_tool(client, "search", query="glacier", collection=hostile)
            assert out["success"] is False and "Invalid name" in out["error"], out


async def test_get_document_detailed_counts_the_whole_document(connect, call_tool, docs_dir: Path) -> None:
    """get_document's detailed answer carries stats over the whole document (not only the page of content it
    returns): a DOCX's headings by level and a PDF's pages, counted from the stored document's map."""
    from tests.fixtures.make_fixtures import make_docx, make_pdf

    make_docx(docs_dir / "stats.docx", "Pond survey", [
        ("Frogs", ["Common frogs spawn in the shallow margin of the pond in early March."]),
        ("Newts", ["Smooth newts wrap each egg in a folded leaf of water mint."]),
    ])  # fmt: skip
    make_pdf(
        docs_dir / "stats.pdf", [(f"Part {n}", [f"Part {n} of the field survey of amphibians."]) for n in (1, 2, 3)]
    )
    async with connect() as client:
        for name in ("stats.docx", "stats.pdf"):
            made = await call_tool(client, "ingest_document", file_path=str(docs_dir / name), collection="notes_stats",
                                   response_format="detailed", force=True)  # fmt: skip
            assert made["status"] in ("indexed", "replaced"), made
            concise = await call_tool(client, "get_document", doc_id=made["doc_id"], collection="notes_stats")
            assert "stats" not in concise, concise
            detailed = await call_tool(client, "get_document", doc_id=made["doc_id"], collection="notes_stats",
                                       response_format="detailed", start_char=10)  # fmt: skip
            stats, content = detailed["stats"], concise["content"]
            assert stats["characters"] == len(content) and stats["words"] == len(content.split()), stats
            assert stats["chunks"] == made["chunks_created"] and stats["estimated_tokens"] > stats["words"] // 2
            if name.endswith(".docx"):
                assert stats["headings"] == {"1": 1, "2": 2} and stats["sections"] == 3, stats
                assert "pages" not in stats, stats
            else:
                assert stats["pages"] == 3, stats
        await call_tool(client, "delete_collection", name="notes_stats", confirm=True)
