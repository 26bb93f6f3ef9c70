"""The Lance engine as a laptop user meets it (issue 31): a real stdio server, a migration, a restart, two clients.

A user with a Milvus Lite index switches engines: `vector-gateway-migrate` copies the index (the real console
script, a subprocess), the server started with VECTOR_GATEWAY_INDEX_ENGINE=lance answers the same searches,
ingests, replaces, deletes, keeps it all across a restart, serves a second MCP process on the same data
folder, and matches hostile filter values literally.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from journeys import counts, server_params
from mcp import Client
from service_stack import call

from tests.fixtures.make_fixtures import make_docx

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

NOTES = {
    "harbour.md": "# Harbour rules\n\nEvery harbour lantern is inspected each spring by the wardens of the quay.\n",
    "orchard.md": "# Orchard diary\n\nThe pear trees of the north orchard flowered late after a cold March.\n",
}
QUERIES = ["harbour lantern inspection", "pear trees flowering", "wardens of the quay"]
LANCE = {"VECTOR_GATEWAY_INDEX_ENGINE": "lance"}
MILVUS_LITE = {"VECTOR_GATEWAY_INDEX_ENGINE": "milvus"}


async def _top(client: Client, query: str, **more: Any) -> list[str]:
    found = await call(client, "search", query=query, top_k=3, **more)
    return [r["title"] for r in found["results"]]


def _migrate(data: Path) -> str:
    script = Path(sys.executable).parent / "vector-gateway-migrate"
    args = ["--milvus-uri", str(data / "milvus.db"), "--lance-uri", str(data / "lance")]
    done = subprocess.run([str(script), *args], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


async def test_a_laptop_index_moves_to_lance_and_keeps_serving(tmp_path: Path) -> None:
    docs, data = tmp_path / "docs", tmp_path / "data"
    docs.mkdir()
    for name, text in NOTES.items():
        (docs / name).write_text(text, encoding="utf-8")
    # The index an earlier version made: Milvus Lite was the embedded default before issue 39.
    async with Client(server_params(docs, data, **MILVUS_LITE), read_timeout_seconds=300) as client:
        for name in NOTES:
            out = await call(client, "ingest_document", file_path=str(docs / name), tags=["notes"])
            assert out["status"] == "indexed", out
        before = {q: await _top(client, q) for q in QUERIES}
        before_counts = await counts(client, "rag_gateway")

    report = _migrate(data)
    assert "rag_gateway" in report and "copied" in report
    async with Client(server_params(docs, data, **LANCE), read_timeout_seconds=300) as client:
        assert {q: await _top(client, q) for q in QUERIES} == before
        assert await counts(client, "rag_gateway") == before_counts
        # New writes on the Lance index: a Word file, a replace, a delete.
        make_docx(docs / "memo.docx", "Quarry memo", [(None, ["The marble quarry closes at dusk in winter."])])
        memo = await call(client, "ingest_document", file_path=str(docs / "memo.docx"), tags=["notes"])
        assert memo["status"] == "indexed", memo
        (docs / "orchard.md").write_text(NOTES["orchard.md"] + "\nThe apples were picked in October.\n")
        replaced = await call(client, "ingest_document", file_path=str(docs / "orchard.md"), tags=["notes"])
        assert replaced["status"] == "replaced", replaced
        harbour = await call(client, "search", query="harbour lantern", top_k=1)
        gone = await call(client, "delete_document", doc_id=harbour["results"][0]["doc_id"])
        assert gone["success"] and gone["deleted_chunks"] >= 1
        assert (await _top(client, "marble quarry at dusk"))[0] == "Quarry memo"
        hostile = await call(client, "search", query="orchard", filters={"source": "x' OR '1'='1"})
        assert hostile["results"] == []
        after = await counts(client, "rag_gateway")
        assert after[0] == 2
        # A second MCP process on the same data folder attaches to this one's index.
        async with Client(server_params(docs, data, **LANCE), read_timeout_seconds=300) as second:
            assert (await _top(second, "apples picked in October"))[0] == "Orchard diary"
            assert await counts(second, "rag_gateway") == after

    # A restart keeps everything, and the Milvus Lite file the migration read is still there, untouched.
    async with Client(server_params(docs, data, **LANCE), read_timeout_seconds=300) as client:
        assert await counts(client, "rag_gateway") == after
        assert (await _top(client, "apples picked in October"))[0] == "Orchard diary"
        assert await _top(client, "harbour lantern inspection") != before["harbour lantern inspection"]
    assert (data / "milvus.db").exists()
    shutil.rmtree(data / "lance")  # and nothing else of the Lance index lives outside its folder
    assert not any(p.name.startswith(".lance") for p in data.iterdir())
