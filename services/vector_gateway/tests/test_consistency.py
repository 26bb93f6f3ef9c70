"""The registry is the commit point: failed writes, orphans and restarts leave a consistent index."""

from __future__ import annotations

from typing import Any

import pytest
from vector_gateway.index import DocumentIndex
from vector_gateway.service import GatewayService
from vector_gateway.where import Eq


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


def _orphan_rows(store: DocumentIndex, template: dict[str, Any], doc_id: str, version: str, n: int) -> list[dict]:
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
    assert service.store.count(name, Eq("doc_id", live)) == 1  # the replace cleared the orphans too


async def test_a_search_asks_the_registry_only_about_the_hits_it_returns(
    client, service: GatewayService, monkeypatch, unique, upsert, make_doc, search
) -> None:
    name = unique("window")
    for i in range(12):
        await upsert(client, name, make_doc(f"k{i}.md", [f"Kestrel note {i}: kestrels hover over fields."]))
    asked: list[list[str]] = []
    real_get = service.store.registry_get

    def counting_get(keys: list[str], fields: list[str] | None = None) -> dict[str, dict[str, Any]]:
        asked.append(keys)
        return real_get(keys, fields)

    monkeypatch.setattr(service.store, "registry_get", counting_get)
    result = await search(client, query="kestrels hover", collections=[name], mode="hybrid", top_k=3)
    # All twelve documents are candidates of both rankings; only the three returned are looked up.
    assert len(result["hits"]) == 3
    assert len(asked) == 1 and sorted(k.split("/")[1] for k in asked[0]) == sorted(h["doc_id"] for h in result["hits"])


async def test_a_chunk_deleted_between_ranking_and_fetch_is_skipped(
    client, service: GatewayService, monkeypatch, unique, upsert, make_doc, search
) -> None:
    name = unique("race")
    ids = [
        (await upsert(client, name, make_doc(f"o{i}.md", [f"Osprey fact {i}: ospreys dive for fish."])))["doc_id"]
        for i in range(4)
    ]
    real_fetch = service.store.fetch
    gone: list[str] = []

    def fetch_after_a_delete(collection: str, chunk_ids: list[str]) -> dict[str, dict[str, Any]]:
        # A concurrent replace that finished between the ranking and this fetch: cannot be timed for real.
        if not gone:
            gone.append(chunk_ids[0])
            service.store.delete(collection, Eq("chunk_id", chunk_ids[0]))
        return real_fetch(collection, chunk_ids)

    monkeypatch.setattr(service.store, "fetch", fetch_after_a_delete)
    result = await search(client, query="ospreys dive", collections=[name], mode="hybrid", top_k=4)
    returned = [h["chunk_id"] for h in result["hits"]]
    assert gone and gone[0] not in returned
    assert len(returned) == 3 and {h["doc_id"] for h in result["hits"]} < set(ids)


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

    def slow_load(settings: GatewaySettings, stored: Any = None) -> Any:
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
            assert early.json()["checks"] == {"model": "loading", "lance": "ok"}  # the default engine
            embed = await client.post("/v1/embed", json={"texts": ["x"]})
            assert embed.status_code == 503 and embed.json()["code"] == "MODEL_LOADING"
            assert embed.headers["Retry-After"]
            gate.set()
            with anyio.fail_after(30):
                while (await client.get("/readyz")).status_code != 200:
                    await anyio.sleep(0.05)
            assert (await client.post("/v1/embed", json={"texts": ["x"]})).status_code == 200


async def test_with_a_model_wait_a_call_made_while_the_model_loads_waits_for_it(
    tmp_path, monkeypatch, embedder
) -> None:
    """VECTOR_GATEWAY_MODEL_WAIT_S (the embedded server's default: it answers MCP clients before its model is
    loaded, issue 49): an embedding asked for meanwhile is answered once the model is there, not refused."""
    import threading

    import anyio
    import httpx
    from asgi_lifespan import LifespanManager
    from vector_gateway import embedder as embedder_module
    from vector_gateway.main import create_app
    from vector_gateway.settings import GatewaySettings

    gate = threading.Event()

    def slow_load(settings: GatewaySettings, stored: Any = None) -> Any:
        assert gate.wait(60)
        return embedder

    monkeypatch.setattr(embedder_module, "create_embedder", slow_load)
    app = create_app(GatewaySettings(milvus_uri=str(tmp_path / "m.db"), model_wait_s=30))
    async with LifespanManager(app) as manager:
        transport = httpx.ASGITransport(app=manager.app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as client:
            answers: list[httpx.Response] = []

            async def embed() -> None:
                answers.append(await client.post("/v1/embed", json={"texts": ["x"]}))

            async with anyio.create_task_group() as group:
                group.start_soon(embed)
                await anyio.sleep(0.5)
                assert answers == [] and (await client.get("/readyz")).json()["checks"]["model"] == "loading"
                gate.set()
            assert answers[0].status_code == 200 and len(answers[0].json()["vectors"]) == 1


async def test_a_keyword_search_answers_without_the_model(
    tmp_path, monkeypatch, open_gateway, make_doc, upsert, search
) -> None:
    """Keyword mode needs no embedding model, but judging its answer by meaning (relevance.off_topic: an answer under
    its floor, or one that reaches it on words alone) embeds the query: with the model failed to load (or still
    loading), such a keyword search was refused (503). It is now judged by its score alone, as an answer from a
    collection of another model is; semantic mode is refused as before."""
    import anyio
    import httpx
    from asgi_lifespan import LifespanManager
    from vector_gateway import embedder as embedder_module
    from vector_gateway.main import create_app
    from vector_gateway.settings import GatewaySettings

    db = tmp_path / "m.db"
    texts = ["You may charge a fee for each copy you convey.", "Lions sleep most of the day in the shade."]
    async with open_gateway(db) as (client, _app):
        await upsert(client, "nomodel", make_doc("license.md", texts))

    def broken(settings: GatewaySettings, stored: Any = None) -> Any:
        raise RuntimeError("no model in this test")

    monkeypatch.setattr(embedder_module, "create_embedder", broken)
    app = create_app(GatewaySettings(milvus_uri=str(db), lance_uri=str(db.with_suffix(".lance"))))
    async with LifespanManager(app) as manager:
        transport = httpx.ASGITransport(app=manager.app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as client:
            with anyio.fail_after(30):
                while (await client.get("/readyz")).json()["checks"]["model"] == "loading":
                    await anyio.sleep(0.05)
            for query in ("best bank account without a monthly fee", "fee"):  # meaning asked for; words decide
                found = await search(client, query=query, collections=["nomodel"], mode="keyword", top_k=5)
                assert found["hits"] and "fee" in found["hits"][0]["text"], found
            assert found["on_topic"] is True  # a passage holds the query's word
            refused = await client.post("/v1/search", json={"query": "fee", "collections": ["nomodel"]})
            assert refused.status_code == 503 and refused.json()["code"] == "MODEL_UNAVAILABLE", refused.text
