"""The Lance engine's own duties: a reopened folder, the upkeep that builds its indexes, and the migration from Milvus.

Every API test of the shared gateway already runs on both engines (conftest.py); test_index.py runs the domain
on both stores. What is left is what only Lance does.
"""

from __future__ import annotations

import re
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest
from servicekit import idle_trimmer
from vector_gateway import migrate
from vector_gateway.lance import LanceStore
from vector_gateway.lance import store as lance_store
from vector_gateway.lance import upkeep as lance_upkeep
from vector_gateway.where import Eq

DOCS = {
    "birds.md": ["Ospreys dive for fish in cold lakes.", "Herons wait in the shallows for frogs."],
    "tools.md": ["A torque wrench tightens bolts to a set force.", "Calipers measure a bore to a hundredth."],
}
QUERIES = ["osprey fishing", "measuring a bore", "frogs in shallow water"]


async def _fill(client: Any, upsert: Any, make_doc: Any, collection: str) -> None:
    for source, texts in DOCS.items():
        await upsert(client, collection, make_doc(source, texts, tags=["kept"], metadata={"lang": "en"}))


async def _answers(client: Any, collection: str) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for mode in ("semantic", "keyword", "hybrid"):
        for query in QUERIES:
            body = {"query": query, "collections": [collection], "mode": mode, "top_k": 3, "tags": ["kept"]}
            response = await client.post("/v1/search", json=body)
            assert response.status_code == 200, response.text
            found[f"{mode}:{query}"] = [(h["text"], round(h["score"], 4)) for h in response.json()["hits"]]
    listed = await client.get(f"/v1/collections/{collection}/documents")
    found["documents"] = sorted((d["source"], d["chunk_count"]) for d in listed.json()["documents"])
    vectors = await client.post("/v1/vector-stores/notes.v2/search", json={"query": [1.0, 0.0], "k": 3})
    found["vectors"] = [(h["id"], round(h["score"], 4)) for h in vectors.json()["results"]]
    found["collections"] = sorted(c["name"] for c in (await client.get("/v1/collections")).json()["collections"])
    return found


async def _vectors(client: Any) -> None:
    for vector_id, vector in {"a": [1.0, 0.0], "b": [0.6, 0.8], "c": [3.0, 4.0]}.items():
        body = {"id": vector_id, "embedding": vector, "metric": "dot", "metadata": {"k": vector_id}}
        response = await client.post("/v1/vector-stores/notes.v2/vectors", json=body)
        assert response.status_code == 200, response.text


async def test_a_milvus_index_migrates_to_lance_and_answers_the_same(
    open_gateway: Any, tmp_path: Path, upsert: Any, make_doc: Any, caplog: pytest.LogCaptureFixture
) -> None:
    db, folder = tmp_path / "milvus.db", tmp_path / "lance"
    async with open_gateway(db, index_engine="milvus") as (client, _):
        await _fill(client, upsert, make_doc, "Field-Notes.2026")  # a name Milvus cannot hold as it is
        await _vectors(client)
        before = await _answers(client, "Field-Notes.2026")
    # Switching the engine without migrating starts empty, and says how to bring the documents along.
    async with open_gateway(db, index_engine="lance", lance_uri=str(tmp_path / "fresh")) as (client, _):
        assert (await client.get("/v1/collections")).json()["collections"] == []
    assert f"vector-gateway-migrate --milvus-uri {db} --lance-uri {tmp_path / 'fresh'}" in caplog.text

    report = migrate.migrate(str(db), str(folder))
    assert report.tables["Field-Notes.2026"] == 4 and report.tables["_documents"] == 2
    async with open_gateway(db, index_engine="lance", lance_uri=str(folder)) as (client, _):
        after = await _answers(client, "Field-Notes.2026")
    assert after["documents"] == before["documents"] == [("birds.md", 2), ("tools.md", 2)]
    assert after["collections"] == before["collections"] == ["Field-Notes.2026"]
    assert after["vectors"] == before["vectors"] == [("c", 3.0), ("a", 1.0), ("b", 0.6)]
    for key, hits in before.items():
        if key.startswith(("semantic", "hybrid", "keyword")):
            # The same chunks in the same order; scores equal where both engines compute the same number.
            assert [text for text, _ in after[key]] == [text for text, _ in hits], key
            if key.startswith("semantic"):
                assert [s for _, s in after[key]] == pytest.approx([s for _, s in hits], abs=2e-3), key


async def test_a_migration_refuses_a_used_folder_and_leaves_nothing_when_it_fails(
    open_gateway: Any, tmp_path: Path, upsert: Any, make_doc: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    db, folder = tmp_path / "milvus.db", tmp_path / "lance"
    async with open_gateway(db, index_engine="milvus") as (client, _):
        await _fill(client, upsert, make_doc, "notes")
    folder.mkdir()
    (folder / "keep.txt").write_text("mine")
    with pytest.raises(migrate.MigrationError, match="already holds files"):
        migrate.migrate(str(db), str(folder))
    assert [p.name for p in folder.iterdir()] == ["keep.txt"]

    target = tmp_path / "second"
    calls = {"n": 0}
    real_insert = LanceStore.insert

    def failing_insert(self: LanceStore, name: str, rows: list[dict[str, Any]]) -> None:
        calls["n"] += 1
        if calls["n"] == 2:
            raise OSError(28, "No space left on device")
        real_insert(self, name, rows)

    monkeypatch.setattr(LanceStore, "insert", failing_insert)  # a full disk cannot be made here for real
    with pytest.raises(OSError, match="No space left"):
        migrate.migrate(str(db), str(target))
    assert not target.exists() and not any(p.name.startswith(".second") for p in tmp_path.iterdir())
    assert migrate.main(["--milvus-uri", str(tmp_path / "absent.db"), "--lance-uri", str(target)]) == 2


async def test_a_copy_whose_registry_and_chunks_disagree_is_refused(
    open_gateway: Any, tmp_path: Path, upsert: Any, make_doc: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "milvus.db"
    async with open_gateway(db, index_engine="milvus") as (client, _):
        await _fill(client, upsert, make_doc, "notes")
    real_copy = migrate._copy

    def copy_then_commit_elsewhere(source: Any, target: LanceStore, name: str, fields: Any, report: Any) -> None:
        real_copy(source, target, name, fields, report)
        if name == "_documents":  # a writer committed a new version between the chunks' copy and the registry's
            row = target.registry_query(Eq("collection", "notes"), None)[0]
            target.registry_upsert([row | {"version": "f" * 16}])

    monkeypatch.setattr(migrate, "_copy", copy_then_commit_elsewhere)
    with pytest.raises(migrate.MigrationError, match="written during the copy"):
        migrate.migrate(str(db), str(tmp_path / "lance"))
    assert not (tmp_path / "lance").exists()


async def test_a_reopened_folder_keeps_collections_models_and_rows(
    open_gateway: Any, tmp_path: Path, upsert: Any, make_doc: Any
) -> None:
    db, folder = tmp_path / "unused.db", tmp_path / "lance"
    async with open_gateway(db, index_engine="lance", lance_uri=str(folder)) as (client, app):
        await _fill(client, upsert, make_doc, "Reopened-1")
        # Rows outside the BM25 index score a little differently from indexed ones (Lance's flat search): the
        # answers are compared once the upkeep has indexed them, as it does soon after any write.
        await anyio.to_thread.run_sync(_indexed, app.state.gateway.store, "Reopened-1")
        first = await _answers(client, "Reopened-1")
    store = LanceStore(str(folder))
    assert store.list_collections() == ["Reopened-1"]
    assert store.describe("Reopened-1")[0] == 384 and store.analysis_of("Reopened-1") == "snowball_multi"
    async with open_gateway(db, index_engine="lance", lance_uri=str(folder)) as (client, _):
        assert await _answers(client, "Reopened-1") == first
        ready = await client.get("/readyz")  # the check is named after the engine (it said "milvus")
        assert ready.status_code == 200 and ready.json()["checks"] == {"model": "ok", "lance": "ok"}, ready.text


def _indexed(store: LanceStore, name: str) -> None:
    table = store._table(name)
    deadline = time.monotonic() + 60
    while lance_upkeep.unindexed_rows(table):
        assert time.monotonic() < deadline, "the upkeep did not index the rows within 60 s"
        time.sleep(0.2)


def ivf_partitions(table: Any, vector: list[float]) -> int:
    """The IVF partitions of a table's vector index, as a search that may probe them all ranks them (Lance's plan
    metrics are the one place that shows them without the pylance package)."""
    plan = table.search(vector, vector_column_name="vector").distance_type("cosine").nprobes(10_000)
    ranked = re.findall(r"partitions_ranked=(\d+)", plan.limit(1).analyze_plan())
    assert len(ranked) == 1, ranked
    return int(ranked[0])


def test_upkeep_builds_the_vector_index_and_new_rows_stay_searchable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lance_upkeep, "VECTOR_INDEX_MIN_ROWS", 300)
    monkeypatch.setattr(lance_upkeep, "ROWS_PER_PARTITION", 25)  # 16 partitions
    monkeypatch.setattr(lance_store, "PROBED_PARTITIONS", 1)
    monkeypatch.setattr(lance_upkeep, "KEEP_VERSIONS", timedelta(seconds=1))
    monkeypatch.setattr(lance_upkeep, "UPKEEP_CHECK_S", 0.5)
    writer = LanceStore(str(tmp_path / "lance"), maintain=False)  # a bulk writer, no upkeep of its own
    writer.create_collection("big", 4, "test-model")

    def row(i: int) -> dict[str, Any]:
        angle = i / 400
        vector = [1.0 - angle, angle, (i % 7) / 7, 0.1]
        return {"chunk_id": f"c{i}", "doc_id": f"d{i // 10}", "version": "v1", "chunk_index": i % 10,
                "text": f"row {i}", "search_text": f"row w{i} common", "vector": vector, "page": 0,
                "page_end": 0, "start": 0, "end": 5, "token_count": 2, "tags": [], "metadata": {},
                "heading_path": [], "source": "s", "title": "t", "file_type": "md", "last_modified": ""}  # fmt: skip

    for start in range(0, 400, 100):  # four commits, four fragments
        writer.insert("big", [row(i) for i in range(start, start + 100)])
    query = row(123)["vector"]
    exact = [
        r["chunk_id"] for _, r in writer.search("big", mode="semantic", vector=query, text="", limit=5, where=None)
    ]
    assert lance_upkeep.needs_vector_index(writer._table("big"))  # 400 rows >= 300 and no vector index yet
    store = LanceStore(str(tmp_path / "lance"))  # a server opens the folder: its upkeep builds the index
    table = store._table("big")
    deadline = time.monotonic() + 60
    while not any(i.columns == ["vector"] for i in table.list_indices()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert any(i.columns == ["vector"] for i in table.list_indices())
    # The fragments the compaction replaced leave the disk soon after (a timer), not at the next upkeep.
    data_files = lambda: list((tmp_path / "lance" / "big.lance" / "data").iterdir())  # noqa: E731
    deadline = time.monotonic() + 60
    while len(data_files()) > 1 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert len(data_files()) == 1 and table.count_rows() == 400
    # The compaction and the index optimisation after the build kept its 16 partitions (Lance re-partitioned an
    # index made with a partition count to its own default size: 16 became 1, and 1M rows' 1,000 became 33).
    assert ivf_partitions(table, row(5)["vector"]) == 16
    indexed = [
        r["chunk_id"] for _, r in store.search("big", mode="semantic", vector=query, text="", limit=5, where=None)
    ]
    assert indexed[0] == exact[0] == "c123"
    # A narrow filter far from the query: its chunks lie in other partitions than the probed one, and are found.
    narrow = store.search("big", mode="semantic", vector=row(390)["vector"], text="", limit=5, where=Eq("doc_id", "d2"))
    assert len(narrow) == 5 and {r["doc_id"] for _, r in narrow} == {"d2"}
    store.insert("big", [row(1000) | {"vector": [0.0, 0.0, 0.0, 1.0], "search_text": "zebra"}])  # after the index
    found = store.search("big", mode="semantic", vector=[0.0, 0.0, 0.0, 1.0], text="", limit=1, where=None)
    assert found[0][1]["chunk_id"] == "c1000"
    assert (
        store.search("big", mode="keyword", vector=None, text="zebra", limit=3, where=None)[0][1]["chunk_id"] == "c1000"
    )
    # Grown to twice the rows its index was trained on, the table is indexed again: rows added to a trained index
    # land in its old partitions, which would grow twenty-fold between 50k and 1M rows (docs/scale.md).
    assert [i.name for i in table.list_indices() if i.columns == ["vector"]] == ["vector_ivf_sq_t400"]
    writer.insert("big", [row(i) for i in range(2000, 2799)])  # 1,200 rows with c1000
    deadline = time.monotonic() + 60
    while lance_upkeep.needs_vector_index(table) and time.monotonic() < deadline:
        store.flush("big")  # what every write does: the upkeep sees the growth
        time.sleep(0.3)
    assert [i.name for i in table.list_indices() if i.columns == ["vector"]] == ["vector_ivf_sq_t1200"]
    again = store.search("big", mode="semantic", vector=query, text="", limit=5, where=None)
    assert again[0][1]["chunk_id"] == "c123" and store.count("big") == 1200


def test_a_table_left_fragmented_by_an_earlier_process_is_compacted_when_opened(tmp_path: Path) -> None:
    folder = str(tmp_path / "lance")
    writer = LanceStore(folder, maintain=False)  # a bulk writer that exits before any upkeep
    writer.create_collection("frag", 2, "m")
    for i in range(lance_upkeep.OPTIMIZE_SMALL_FRAGMENTS + 4):
        row = {"chunk_id": f"c{i}", "doc_id": f"d{i}", "text": "t", "search_text": f"w{i}", "vector": [1.0, float(i)]}
        writer.insert("frag", [row | {"tags": [], "metadata": {}, "heading_path": []}])
    data = tmp_path / "lance" / "frag.lance" / "data"
    assert len(list(data.iterdir())) == lance_upkeep.OPTIMIZE_SMALL_FRAGMENTS + 4
    server = LanceStore(folder)  # the next process that opens the folder
    assert server.count("frag") == lance_upkeep.OPTIMIZE_SMALL_FRAGMENTS + 4
    deadline = time.monotonic() + 60
    while server._table("frag").stats()["fragment_stats"]["num_fragments"] > 1 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert server._table("frag").stats()["fragment_stats"]["num_fragments"] == 1
    assert server.count("frag") == lance_upkeep.OPTIMIZE_SMALL_FRAGMENTS + 4


def test_rows_outside_the_indexes_are_indexed_soon_without_another_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A few rows searched flat cost every BM25 ranking ~10-20 ms: a server's upkeep indexes them soon after an
    ingest, not only once 20,000 rows or 200 commits piled up (the last ~40 documents of any ingest stayed flat)."""
    monkeypatch.setattr(lance_upkeep, "UPKEEP_CHECK_S", 0.5)
    store = LanceStore(str(tmp_path / "lance"))
    store.create_collection("few", 2, "m")
    table = store._table("few")

    for batch in range(3):  # an ingest: a write, its flush (as the gateway's writer calls it), the next one
        rows = [{"chunk_id": f"c{batch}-{i}", "doc_id": f"d{batch}", "text": "t", "search_text": f"w{i} heron",
                 "vector": [1.0, float(i)], "tags": [], "metadata": {}, "heading_path": []}
                for i in range(10)]  # fmt: skip
        store.insert("few", rows)
        store.flush("few")
    deadline = time.monotonic() + 60
    # Nothing else is written: the upkeep's own timer acts.
    while lance_upkeep.unindexed_rows(table) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert lance_upkeep.unindexed_rows(table) == 0 and table.count_rows() == 30
    assert len(store.search("few", mode="keyword", vector=None, text="heron", limit=50, where=None)) == 30
    store.close()


def test_opening_a_lance_folder_leaves_out_what_lancedb_never_uses_here(tmp_path: Path) -> None:
    """Issue 49 (a first search within seconds of a start, a server at rest in a few hundred MB): when a store
    opens, lancedb's REST namespace client is not initialised (~0.5 s of the start) and pandas is not imported
    (~35 MB); searches work, anything that reads the client's package gets it whole, and pandas still imports."""
    import subprocess
    import sys

    probe = (
        "import sys\n"
        "from vector_gateway.lance import LanceStore\n"
        f"store = LanceStore({str(tmp_path / 'lance')!r})\n"
        "store.list_collections()\n"
        "print(any(m.startswith('lance_namespace_urllib3_client.api') for m in sys.modules), 'pandas' in sys.modules)\n"
        "import lance_namespace_urllib3_client as client\n"
        "print(client.ApiClient.__name__, 'lance_namespace_urllib3_client.api.table_api' in sys.modules)\n"
        "import pandas\n"
        "print(pandas.DataFrame({'a': [1]}).shape)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.split() == ["False", "False", "ApiClient", "True", "(1,", "1)"]


def test_the_versions_an_ingest_left_in_lances_caches_go_once_the_process_is_quiet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each commit adds its version's manifest and fragments (and each optimisation its new BM25 index) to Lance's
    caches, and nothing evicted the superseded ones below the caches' 1,280 MB bound: the embedded server held ~250 MB
    more a minute after syncing 5,183 SciFact files than a fresh one on the same index (docs/memory.md). Once the
    process is quiet after writes, they go with the connection; the rows stay; a library only read keeps its cache."""
    monkeypatch.setattr(lance_store, "RELEASE_ABOVE_MB", 0)  # the real bound (32 MB) takes thousands of commits
    trimmer = idle_trimmer()
    monkeypatch.setattr(trimmer, "quiet_s", 0.2)
    store = LanceStore(str(tmp_path / "lance"), maintain=False)
    store.create_collection("notes", 2, "m")
    rows = [{"chunk_id": f"c{i}", "doc_id": f"d{i}", "text": "t", "search_text": f"word{i} shared", "vector": [1.0, i],
             "tags": [], "metadata": {}, "heading_path": []} for i in range(30)]  # fmt: skip

    def searched() -> list[str]:
        hits = store.search("notes", mode="keyword", vector=None, text="word7", limit=3, where=None)
        return [row["chunk_id"] for _, row in hits]

    def quiet(trims: int) -> None:
        deadline = time.monotonic() + 30
        while trimmer.trims == trims and time.monotonic() < deadline:
            time.sleep(0.05)
        assert trimmer.trims > trims, "the idle trimmer did not run within 30 s"

    with trimmer.busy():  # an ingest: one commit per batch, searched meanwhile
        for row in rows:
            store.insert("notes", [row])
            assert searched()[:1] == (["c7"] if int(row["chunk_id"][1:]) >= 7 else [])
        trims, written = trimmer.trims, store.cache_bytes
    assert written > 0
    quiet(trims)
    assert store.cache_bytes == 0  # the connection and its caches went
    assert store.count("notes") == 30 and searched() == ["c7"]  # connected again, every row there
    with trimmer.busy():  # searches only: their warm cache stays
        searched()
        trims, warm = trimmer.trims, store.cache_bytes
    quiet(trims)
    assert warm > 0 and store.cache_bytes == warm
