"""The domain on any DocumentIndex: the same writes, reads, searches and sweeps on the in-memory fake, Lite, Lance.

What passes on both is what the domain asks of a store (index.py); a failure on one alone points at that adapter.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fake_index import FakeIndex
from ingestion_contracts.gateway import RelabelRequest, SearchRequest, UpsertDocumentRequest
from vector_gateway import recovery
from vector_gateway.embedder import Embedder, EmbedderHolder
from vector_gateway.filters import in_collection
from vector_gateway.index import DocumentIndex
from vector_gateway.lance import LanceStore
from vector_gateway.milvus import MilvusStore
from vector_gateway.service import GatewayService
from vector_gateway.settings import GatewaySettings
from vector_gateway.where import Eq


@pytest.fixture(scope="module", params=["memory", "milvus-lite", "lance"])
def index(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[DocumentIndex]:
    if request.param == "memory":
        yield FakeIndex()
        return
    folder = tmp_path_factory.mktemp("index")
    store: DocumentIndex = (
        LanceStore(str(folder / "lance")) if request.param == "lance" else MilvusStore(str(folder / "milvus.db"))
    )
    yield store
    store.close()


@pytest.fixture
def service(index: DocumentIndex, embedder: Embedder) -> GatewayService:
    return GatewayService(index, EmbedderHolder(GatewaySettings(milvus_uri="unused.db"), embedder))


def doc(make_doc: Callable[..., dict[str, Any]], source: str, texts: list[str], **fields: Any) -> UpsertDocumentRequest:
    return UpsertDocumentRequest.model_validate(make_doc(source, texts, **fields))


async def write(service: GatewayService, collection: str, body: UpsertDocumentRequest) -> str:
    responses, _ = await service.upsert(collection, [body])
    return responses[0].status


async def hits(service: GatewayService, collection: str, query: str, mode: str = "hybrid", **more: Any) -> list[str]:
    request = SearchRequest(query=query, collections=[collection], mode=mode, top_k=5, **more)  # type: ignore[arg-type]  # mode is one of the three, as the tests call it
    return [hit.text for hit in (await service.search(request)).hits]


async def test_a_replace_leaves_one_version_and_searches_see_it(
    service: GatewayService, index: DocumentIndex, unique: Callable[[str], str], make_doc: Any
) -> None:
    name = unique("replace")
    first = doc(make_doc, "birds.md", ["Ospreys dive for fish.", "Herons wait in the shallows."])
    assert await write(service, name, first) == "indexed"
    assert await write(service, name, first) == "skipped"
    second = doc(make_doc, "birds.md", ["Kingfishers dive from a perch."])
    assert await write(service, name, second) == "replaced"

    assert index.count(name) == 1  # the old version's rows are gone
    listed = await service.list_documents(name, offset=0, limit=10, source=None, order="updated")
    assert [d.source for d in listed.documents] == ["birds.md"] and listed.documents[0].chunk_count == 1
    content = await service.get_document(name, listed.documents[0].doc_id)
    assert content.content == "Kingfishers dive from a perch."
    for mode in ("semantic", "keyword", "hybrid"):
        assert await hits(service, name, "kingfishers dive", mode) == ["Kingfishers dive from a perch."], mode
    assert await hits(service, name, "herons shallows", "keyword") == []


async def test_filters_narrow_every_mode(service: GatewayService, unique: Callable[[str], str], make_doc: Any) -> None:
    name = unique("filters")
    await write(service, name, doc(make_doc, "a.md", ["Otters float on kelp."], tags=["sea"], metadata={"year": 2024}))
    await write(
        service, name, doc(make_doc, "b.md", ["Otters build no dams."], tags=["river"], metadata={"year": 2025})
    )
    for mode in ("semantic", "keyword", "hybrid"):
        assert await hits(service, name, "otters", mode, tags=["sea"]) == ["Otters float on kelp."], mode
        assert await hits(service, name, "otters", mode, filters={"metadata.year": 2025}) == ["Otters build no dams."]
        assert await hits(service, name, "otters", mode, filters={"source": "b.md"}) == ["Otters build no dams."]
        assert await hits(service, name, "otters", mode, filters={"source": 'b.md" or source != "'}) == []


async def test_delete_and_relabel(
    service: GatewayService, index: DocumentIndex, unique: Callable[[str], str], make_doc: Any
) -> None:
    name = unique("delete")
    body = doc(make_doc, "c.md", ["Capybaras graze by rivers.", "They swim well."])
    responses, _ = await service.upsert(name, [body])
    doc_id = responses[0].doc_id
    labels = RelabelRequest(content_hash=body.content_hash, source="c.md", tags=["mammal"])
    assert (await service.relabel(name, doc_id, labels)).status == "updated"
    assert await hits(service, name, "capybaras graze", "keyword", tags=["mammal"]) == ["Capybaras graze by rivers."]
    assert index.count(name) == 2  # the relabelled version replaced the first one

    deleted = await service.delete_document(name, doc_id)
    assert deleted.deleted_chunks == 2
    assert index.count(name) == 0 and index.registry_count(in_collection(name)) == 0
    assert await hits(service, name, "capybaras", "hybrid") == []


async def test_the_sweep_removes_uncommitted_versions_only(
    service: GatewayService, index: DocumentIndex, unique: Callable[[str], str], make_doc: Any
) -> None:
    name = unique("sweep")
    responses, _ = await service.upsert(name, [doc(make_doc, "d.md", ["Live dormouse chunk."])])
    live = responses[0].doc_id
    rows = index.query(name, Eq("doc_id", live), ["*"])
    now = service.leases.now_ms()
    orphans = [r | {"chunk_id": "dead-0", "version": "dead"} for r in rows]
    leased = [r | {"chunk_id": "held-0", "version": "held"} for r in rows]
    index.insert(name, [{k: v for k, v in r.items() if k != "sparse"} for r in orphans + leased])
    index.leases_open([{"key": f"{name}/{live}/held", "collection": name, "doc_id": live, "version": "held",
                        "writer": "elsewhere", "expires_ms": now + 600_000}])  # fmt: skip
    index.flush(name)

    assert recovery.sweep_collection(index, name, now) == 1  # the leased version is a write in flight
    assert sorted(r["version"] for r in index.query(name, None, ["version"])) == sorted(["held", rows[0]["version"]])
    assert await hits(service, name, "dormouse", "keyword") == ["Live dormouse chunk."]
