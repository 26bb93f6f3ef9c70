"""Milvus Lite's keyword rankings scored with the collection's BM25 statistics (milvus/lite_bm25.py, issue 52 point 3).

Lite scores each segment with its own statistics; the gateway writes a segment per document. The passages are the
GPL-3 text every Debian system carries."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ingestion_contracts.gateway import SearchRequest, UpsertDocumentRequest
from test_exact_phrase_api import NETTLE
from vector_gateway.embedder import Embedder, EmbedderHolder
from vector_gateway.milvus import MilvusStore, lite_bm25
from vector_gateway.milvus.store import milvus_name
from vector_gateway.service import GatewayService
from vector_gateway.settings import GatewaySettings

GPL = Path("/usr/share/common-licenses/GPL-3")
PARAGRAPHS = [p.strip() for p in GPL.read_text(encoding="utf-8").split("\n\n") if len(p.strip()) > 200]
QUERIES = ["convey object code", "installation information user product", "patent license royalty"]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MilvusStore]:
    opened = MilvusStore(str(tmp_path / "milvus.db"))
    yield opened
    opened.close()


def service(store: MilvusStore, embedder: Embedder) -> GatewayService:
    return GatewayService(store, EmbedderHolder(GatewaySettings(milvus_uri="unused.db"), embedder))


async def write(gateway: GatewayService, name: str, make_doc: Any, source: str, texts: list[str]) -> None:
    await gateway.upsert(name, [UpsertDocumentRequest.model_validate(make_doc(source, texts, title="GPL-3"))])


async def keyword(gateway: GatewayService, name: str, query: str) -> list[tuple[str, float]]:
    request = SearchRequest(query=query, collections=[name], mode="keyword", top_k=10, min_score=0)
    return [(hit.chunk_id, round(hit.score, 6)) for hit in (await gateway.search(request)).hits]


def lite_scores(store: MilvusStore, name: str, query: str) -> list[tuple[float, dict[str, Any]]]:
    return store.search(name, mode="keyword", vector=None, text=query, limit=20, where=None)


async def test_one_segment_scores_as_lite_scores_it(store: MilvusStore, embedder: Embedder, make_doc: Any) -> None:
    """Written in one piece, a collection is one segment, whose statistics are the collection's: the scores kept
    here are Lite's own (its analyzer, formula and constants)."""
    gateway = service(store, embedder)
    await write(gateway, "whole", make_doc, "gpl.txt", PARAGRAPHS[:40])
    assert store.lite_bm25 is not None
    for query in QUERIES:
        analysed = store.search("whole", mode="keyword", vector=None, text=query, limit=20, where=None)
        raw = store.client.search(
            milvus_name("whole"), data=[query], anns_field="sparse", search_params={"metric_type": "BM25"}, limit=20
        )[0]
        lite = {h["chunk_id"]: abs(h["distance"]) for h in raw}
        assert analysed and [e["chunk_id"] for _, e in analysed] == [h["chunk_id"] for h in raw], query
        for score, entity in analysed:
            assert score == pytest.approx(lite[entity["chunk_id"]], rel=1e-5), query
            assert lite_bm25.SEARCH_TEXT not in entity


async def test_a_passage_written_alone_scores_with_the_collections_statistics(
    store: MilvusStore, embedder: Embedder, make_doc: Any, tmp_path: Path
) -> None:
    """The statistics kept through inserts, a replace and a delete score as statistics read afresh (a new store on
    the same database), and a passage written in a segment of its own scores as it would among the others."""
    gateway = service(store, embedder)
    await write(gateway, "grown", make_doc, "alone.txt", PARAGRAPHS[:1])
    first = await keyword(gateway, "grown", QUERIES[0])  # the statistics are read here, then kept
    for i in range(1, 30, 5):
        await write(gateway, "grown", make_doc, f"part-{i}.txt", PARAGRAPHS[i : i + 5])
    await write(gateway, "grown", make_doc, "part-1.txt", PARAGRAPHS[1:3])  # a replace: a delete, then inserts
    listed = await gateway.list_documents("grown", offset=0, limit=50, source="part-6.txt", order="updated")
    await gateway.delete_document("grown", listed.documents[0].doc_id)
    kept = {query: await keyword(gateway, "grown", query) for query in QUERIES}
    store.close()
    fresh = MilvusStore(str(tmp_path / "milvus.db"))
    try:
        again = service(fresh, embedder)
        assert {query: await keyword(again, "grown", query) for query in QUERIES} == kept
    finally:
        fresh.close()
    assert first != kept[QUERIES[0]]  # the one-passage library scored otherwise

    # The same passages written in one piece: the passage written alone scores as it does there.
    store2 = MilvusStore(str(tmp_path / "one.db"))
    await write(
        service(store2, embedder), "one", make_doc, "all.txt", [PARAGRAPHS[0], *PARAGRAPHS[1:3], *PARAGRAPHS[11:31]]
    )
    try:
        alone = dict(await keyword(service(store2, embedder), "one", QUERIES[0]))
        grown = dict(kept[QUERIES[0]])
        assert sorted(alone.values()) == sorted(grown.values())
    finally:
        store2.close()


async def test_another_writers_rows_are_read_within_the_count_check(
    tmp_path: Path, embedder: Embedder, make_doc: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two stores on one database (a `milvus-lite server` shared by several processes): what one writes, the other's
    statistics hold once its count check runs."""
    monkeypatch.setattr(lite_bm25, "COUNT_CHECK_S", 0.0)
    one, two = MilvusStore(str(tmp_path / "shared.db")), MilvusStore(str(tmp_path / "shared.db"))
    try:
        await write(service(one, embedder), "shared", make_doc, "a.txt", PARAGRAPHS[:10])
        before = await keyword(service(two, embedder), "shared", QUERIES[1])
        await write(service(one, embedder), "shared", make_doc, "b.txt", PARAGRAPHS[10:30])
        after = await keyword(service(two, embedder), "shared", QUERIES[1])
        assert after == await keyword(service(one, embedder), "shared", QUERIES[1]) and after != before
    finally:
        one.close()
        two.close()


async def test_a_collection_over_the_limit_keeps_lites_scores(
    store: MilvusStore, embedder: Embedder, make_doc: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Over MAX_ROWS the scan would take too long and Lite's segments are large: its own scores are kept."""
    monkeypatch.setattr(lite_bm25, "MAX_ROWS", 5)
    gateway = service(store, embedder)
    await write(gateway, "large", make_doc, "alone.txt", PARAGRAPHS[:1])
    await write(gateway, "large", make_doc, "rest.txt", PARAGRAPHS[1:20])
    kept = lite_scores(store, "large", QUERIES[0])
    store.lite_bm25 = None
    assert kept == lite_scores(store, "large", QUERIES[0])


async def test_a_chunk_lite_ranks_low_in_a_segment_of_its_own_is_found(
    store: MilvusStore, embedder: Embedder, make_doc: Any
) -> None:
    """Lite picks its candidates by its own scores: a passage written alone (one-chunk statistics) ranked below 300
    GPL paragraphs on the query's common words and never reached the gateway. Every chunk holding a rare query
    term is now read too, and the passage that holds the rare word ranks first."""
    gateway = service(store, embedder)
    texts = [f"{PARAGRAPHS[i % len(PARAGRAPHS)]} ({i})" for i in range(300)]
    distinct = embedder.embed_documents(texts[:40])
    body = make_doc("gpl.txt", texts, title="GPL-3") | {
        "vectors": [distinct[i % 40] for i in range(300)],
        "embedding_model": embedder.model_name,
    }
    await gateway.upsert("deep", [UpsertDocumentRequest.model_validate(body)])
    await write(gateway, "deep", make_doc, "nettle.txt", [NETTLE[3]])
    request = SearchRequest(query="software license program gcm_encrypt", collections=["deep"], mode="keyword", top_k=1)
    assert [hit.source for hit in (await gateway.search(request)).hits] == ["nettle.txt"]


async def test_a_collection_this_store_made_is_never_scanned(
    store: MilvusStore, embedder: Embedder, make_doc: Any, tmp_path: Path
) -> None:
    """A collection the store creates keeps its statistics from its first insert, through a replace and a delete
    (the rows read just before it): no scan, and the scores of a store that scans it afresh."""
    assert store.client is not None and store.lite_bm25 is not None
    scans: list[str] = []
    scan = store.lite_bm25._scan
    store.lite_bm25._scan = lambda name: (scans.append(name), scan(name))[1]
    gateway = service(store, embedder)
    await write(gateway, "made", make_doc, "alone.txt", PARAGRAPHS[:1])
    await keyword(gateway, "made", QUERIES[0])
    for i in range(1, 30, 5):
        await write(gateway, "made", make_doc, f"part-{i}.txt", PARAGRAPHS[i : i + 5])
    await write(gateway, "made", make_doc, "part-1.txt", PARAGRAPHS[1:3])  # a replace: inserts, then a delete
    listed = await gateway.list_documents("made", offset=0, limit=50, source="part-6.txt", order="updated")
    await gateway.delete_document("made", listed.documents[0].doc_id)
    kept = {query: await keyword(gateway, "made", query) for query in QUERIES}
    assert scans == []
    fresh = MilvusStore(str(tmp_path / "milvus.db"))
    try:
        assert {query: await keyword(service(fresh, embedder), "made", query) for query in QUERIES} == kept
    finally:
        fresh.close()


async def test_a_search_answers_with_lites_scores_while_a_long_scan_goes_on(
    store: MilvusStore, embedder: Embedder, make_doc: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A store that did not make the collection scans it on its first keyword search, waiting up to SCAN_WAIT_S;
    past that, Lite's own scores answer until the scan is done."""
    import asyncio

    gateway = service(store, embedder)
    await write(gateway, "bg", make_doc, "alone.txt", PARAGRAPHS[:1])
    await write(gateway, "bg", make_doc, "rest.txt", PARAGRAPHS[1:30])
    exact = await keyword(gateway, "bg", QUERIES[0])
    monkeypatch.setattr(lite_bm25, "SCAN_WAIT_S", 0.0)
    reopened = MilvusStore(str(tmp_path / "milvus.db"))
    try:
        again = service(reopened, embedder)
        meanwhile = await keyword(again, "bg", QUERIES[0])  # Lite's own; the scan starts
        scored = meanwhile
        for _ in range(300):
            await asyncio.sleep(0.1)
            if (scored := await keyword(again, "bg", QUERIES[0])) != meanwhile:
                break
        assert meanwhile != exact and scored == exact
    finally:
        reopened.close()
