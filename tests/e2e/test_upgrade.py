"""An index written by 0.2 (source = identity) keeps working after the upgrade to keys (issue 11), and after Lance
became the embedded default (issue 39): the server keeps serving the old Milvus Lite folder, says once how to move
it, and moves it when asked (VECTOR_GATEWAY_MIGRATE_LITE), nothing lost and the Lite files left as they were.

tests/fixtures/legacy-index was written by the 0.2 code itself (tests/fixtures/make_legacy_index.py):
alpha.md ingested with source "sharepoint", plain.md with none, a text "note" with source "slack".
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from journeys import counts, server_params
from legacy import LEGACY_DOCS, write_legacy_docs
from mcp import Client
from mcp.client.stdio import stdio_client
from service_stack import call

from tests.fixtures.make_fixtures import make_docx

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]
FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "legacy-index"
NOTE = "Standup notes: the lagoon survey starts on Monday, as agreed in the planning meeting."


async def test_a_0_2_index_is_searched_updated_and_deduplicated_after_the_upgrade(tmp_path: Path) -> None:
    docs = write_legacy_docs()
    data = tmp_path / "data"
    shutil.copytree(FIXTURE, data)
    (data / "milvus.db" / "LOCK").unlink(missing_ok=True)
    # git keeps no empty folders; Milvus Lite expects these
    for empty in (".database-staging", "databases", "collections/rag_gateway/wal", "collections/_documents/wal"):
        (data / "milvus.db" / empty).mkdir(parents=True, exist_ok=True)
    stderr = tmp_path / "stderr.txt"
    with stderr.open("w") as errlog:
        async with Client(stdio_client(server_params(docs, data), errlog=errlog), read_timeout_seconds=300) as client:
            await _upgraded(client, docs)
    # The new default kept the old folder, and said once, with the command, how to move it to Lance.
    said = stderr.read_text()
    command = f"vector-gateway-migrate --milvus-uri {data / 'milvus.db'} --lance-uri {data / 'lance'}"
    assert said.count("written by an earlier version") == 1 and command in said, said[-3000:]
    assert not (data / "lance").exists()

    lite_files = _files(data / "milvus.db")
    moved = server_params(docs, data, VECTOR_GATEWAY_MIGRATE_LITE="true")
    async with Client(moved, read_timeout_seconds=300) as client:  # asked: copied at start, served from Lance
        listed = await call(client, "get_collections")
        assert [(c["name"], c["document_count"], c["engine"]) for c in listed["collections"]] == [
            ("rag_gateway", 3, "lance")
        ]
        top = (await call(client, "search", query="lagoon survey Monday", top_k=1))["results"][0]
        assert top["source"] == "slack", top
        names = sorted(d["name"] for d in (await call(client, "list_documents", collection="rag_gateway"))["documents"])
        assert names == ["alpha.md", "gamma.docx", "note"], names
        again = await call(client, "ingest_document", file_path=str(LEGACY_DOCS / "alpha.md"), source="sharepoint")
        assert again["status"] == "skipped"  # the registry came along: nothing is written twice
    assert _files(data / "milvus.db") == lite_files  # the way back is left as it was


def _files(folder: Path) -> dict[str, int]:
    return {str(p.relative_to(folder)): p.stat().st_size for p in sorted(folder.rglob("*")) if p.is_file()}


async def _upgraded(client: Client, docs: Path) -> None:
    """The 0.2 index searched, re-ingested under keys without duplicates, added to and deleted from."""
    assert (await counts(client, "rag_gateway"))[0] == 3
    listed = await call(client, "get_collections")
    assert listed["collections"][0]["engine"] == "milvus-lite", listed
    for query, source in (("harbour lantern inspected", "sharepoint"), ("lagoon survey Monday", "slack")):
        top = (await call(client, "search", query=query, top_k=1))["results"][0]
        assert top["source"] == source, top

    # Re-ingesting each document under its new identity replaces its 0.2 copy: no duplicates.
    alpha = await call(client, "ingest_document", file_path=str(LEGACY_DOCS / "alpha.md"), source="sharepoint")
    plain = await call(client, "ingest_document", file_path=str(LEGACY_DOCS / "plain.md"))
    note = await call(client, "ingest_text", text=NOTE, name="note", source="slack")
    assert [alpha["status"], plain["status"], note["status"]] == ["replaced"] * 3, (alpha, plain, note)
    assert (await counts(client, "rag_gateway"))[0] == 3
    lanterns = await call(client, "search", query="harbour lantern", mode="keyword", top_k=10)
    assert len([r for r in lanterns["results"] if "harbour lantern" in r["text"]]) == 1
    again = await call(client, "ingest_document", file_path=str(LEGACY_DOCS / "alpha.md"), source="sharepoint")
    assert again["status"] == "skipped"

    # A second file from the same source is a second document now.
    make_docx(docs / "gamma.docx", "Gamma memo", [(None, ["The gamma memo explains how to tune copper violins."])])
    gamma = await call(client, "ingest_document", file_path=str(docs / "gamma.docx"), source="sharepoint")
    assert gamma["status"] == "indexed"
    assert (await counts(client, "rag_gateway"))[0] == 4
    listing = await call(client, "list_documents", collection="rag_gateway")
    doomed = next(d for d in listing["documents"] if d["name"] == "plain.md")
    deleted = await call(client, "delete_document", doc_id=doomed["doc_id"], collection="rag_gateway")
    assert deleted["success"], deleted
    assert (await counts(client, "rag_gateway"))[0] == 3
