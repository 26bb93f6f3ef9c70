"""The registry is the commit point: failed writes, orphans and restarts leave a consistent index."""

from __future__ import annotations

from typing import Any

import pytest
from vector_gateway.service import GatewayService
from vector_gateway.store import MilvusStore


class InjectedFault(RuntimeError):
    """A crash between two Milvus calls: cannot be produced on demand for real."""


async def _state(client, name: str, doc_id: str) -> tuple[Any, ...]:
    info = (await client.get(f"/v1/collections/{name}")).json()
    document = (await client.get(f"/v1/collections/{name}/documents/{doc_id}")).json()
    return info["document_count"], info["chunk_count"], document["content"], document["content_hash"]


@pytest.mark.parametrize("fault", ["partial_insert", "registry_upsert"])
async def test_failed_write_leaves_the_index_as_it_was(
    client, service: GatewayService, monkeypatch, unique, upsert, make_doc, search, fault: str
) -> None:
    name = unique("fault")
    doc_id = (await upsert(client, name, make_doc("f.md", ["Original gnu text.", "Original second."])))["doc_id"]
    before = await _state(client, name, doc_id)
    store = service.store

    if fault == "partial_insert":
        real_insert = store.insert

        def insert_half_then_die(collection: str, rows: list[dict[str, Any]]) -> None:
            real_insert(collection, rows[: len(rows) // 2])
            raise InjectedFault("died after writing half the rows")

        monkeypatch.setattr(store, "insert", insert_half_then_die)
    else:

        def registry_down(rows: list[dict[str, Any]]) -> None:
            raise InjectedFault("registry write failed")

        monkeypatch.setattr(store, "registry_upsert", registry_down)

    new = make_doc("f.md", ["Replacement wildebeest one.", "Replacement two.", "Replacement three.", "Four."])
    response = await client.post(f"/v1/collections/{name}/documents", json=new, headers={"X-Request-ID": "fault-1"})
    assert response.status_code == 500 and response.json()["code"] == "INTERNAL_ERROR"
    assert response.json()["request_id"] == "fault-1"  # the 500 handler runs outside the middleware
    monkeypatch.undo()

    assert await _state(client, name, doc_id) == before
    assert (await search(client, query="wildebeest replacement", collections=[name], mode="keyword"))["hits"] == []
    old = await search(client, query="original gnu", collections=[name], mode="keyword")
    assert {h["doc_id"] for h in old["hits"]} == {doc_id}
    assert (await upsert(client, name, new))["status"] == "replaced"  # and the retry goes through


def _orphan_rows(store: MilvusStore, template: dict[str, Any], doc_id: str, version: str, n: int) -> list[dict]:
    return [
        template | {"chunk_id": f"{doc_id}-{version}-{i}", "doc_id": doc_id, "version": version, "chunk_index": i}
        for i in range(n)
    ]


async def test_orphan_chunks_of_uncommitted_versions_never_show(
    client, service: GatewayService, unique, upsert, make_doc, search, embedder
) -> None:
    name = unique("orphan")
    live = (await upsert(client, name, make_doc("live.md", ["Live capybara chunk."])))["doc_id"]
    text = "Orphaned capybara chunk from a killed writer."
    template = {
        "text": text, "search_text": text, "vector": embedder.embed_query(text), "source": "live.md", "title": "",
        "file_type": "md", "page": 0, "page_end": 0, "heading_path": [], "start": 0, "end": len(text),
        "token_count": 1, "tags": [], "metadata": {}, "last_modified": "",
    }  # fmt: skip
    # Many rows of a version the registry never named, for the live document and for one it never knew,
    # so the first Milvus answer is all orphans and the search must look further.
    rows = _orphan_rows(service.store, template, live, "deadbeef", 30)
    rows += _orphan_rows(service.store, template, "never-committed", "cafe", 30)
    service.store.insert(name, rows)
    service.store.flush(name)

    for mode in ("keyword", "semantic", "hybrid"):
        result = await search(client, query=text, collections=[name], mode=mode, top_k=3)
        assert [h["doc_id"] for h in result["hits"]] == [live], mode
        assert result["hits"][0]["text"] == "Live capybara chunk."
    document = (await client.get(f"/v1/collections/{name}/documents/{live}")).json()
    assert document["content"] == "Live capybara chunk."
    assert (await upsert(client, name, make_doc("live.md", ["Next version."])))["status"] == "replaced"
    assert service.store.count(name, f'doc_id == "{live}"') == 1  # the replace cleared the orphans too


async def test_reopening_the_database_keeps_documents(open_gateway, tmp_path, make_doc, upsert, search) -> None:
    db = tmp_path / "nested" / "folder" / "milvus.db"  # parent folders are created
    async with open_gateway(db) as (client, _):
        doc_id = (await upsert(client, "persist", make_doc("p.md", ["Persistent narwhal tusk facts."])))["doc_id"]
    async with open_gateway(db) as (client, _):
        for mode in ("hybrid", "semantic", "keyword"):
            hits = (await search(client, query="narwhal tusk", collections=["persist"], mode=mode))["hits"]
            assert [h["doc_id"] for h in hits] == [doc_id], mode
        assert (await upsert(client, "persist", make_doc("p.md", ["Persistent narwhal tusk facts."])))["status"] == (
            "skipped"
        )
        listed = (await client.get("/v1/collections")).json()["collections"]
        assert [(c["name"], c["document_count"], c["chunk_count"]) for c in listed] == [("persist", 1, 1)]


async def test_model_loads_in_the_background(tmp_path, monkeypatch, embedder) -> None:
    import threading

    import anyio
    import httpx
    from asgi_lifespan import LifespanManager
    from vector_gateway import embedder as embedder_module
    from vector_gateway.main import create_app
    from vector_gateway.settings import GatewaySettings

    # The cached model loads in ~50 ms; hold the load until the test has seen the "loading" state.
    gate = threading.Event()

    def slow_load(settings: GatewaySettings) -> Any:
        assert gate.wait(60)
        return embedder

    monkeypatch.setattr(embedder_module, "create_embedder", slow_load)
    app = create_app(GatewaySettings(milvus_uri=str(tmp_path / "m.db")))
    async with LifespanManager(app) as manager:
        transport = httpx.ASGITransport(app=manager.app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as client:
            assert (await client.get("/healthz")).status_code == 200
            early = await client.get("/readyz")
            assert early.status_code == 503 and early.headers["Retry-After"]
            assert early.json()["checks"] == {"model": "loading", "milvus": "ok"}
            embed = await client.post("/v1/embed", json={"texts": ["x"]})
            assert embed.status_code == 503 and embed.json()["code"] == "MODEL_LOADING"
            assert embed.headers["Retry-After"]
            gate.set()
            with anyio.fail_after(30):
                while (await client.get("/readyz")).status_code != 200:
                    await anyio.sleep(0.05)
            assert (await client.post("/v1/embed", json={"texts": ["x"]})).status_code == 200
