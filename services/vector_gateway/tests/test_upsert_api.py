"""Writing documents through HTTP against real Milvus Lite and the real model."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from vector_gateway.service import GatewayService


async def test_indexed_then_skipped_then_replaced(client, unique, make_doc, upsert, search) -> None:
    name = unique("upsert")
    first = make_doc("notes/a.md", ["The aardvark burrows at dusk.", "Termites are its dinner."], title="Aardvark")
    indexed = await upsert(client, name, first)
    assert (indexed["status"], indexed["chunk_count"], indexed["collection"]) == ("indexed", 2, name)
    assert indexed["timings"]["embedding_ms"] > 0

    again = await upsert(client, name, first)
    assert (again["status"], again["doc_id"], again["chunk_count"]) == ("skipped", indexed["doc_id"], 2)
    assert again["timings"]["embedding_ms"] == 0

    second = make_doc("notes/a.md", ["Pangolins roll into a ball.", "Their scales are keratin.", "Ants too."])
    replaced = await upsert(client, name, second)
    assert (replaced["status"], replaced["doc_id"], replaced["chunk_count"]) == ("replaced", indexed["doc_id"], 3)

    old = await search(client, query="aardvark burrows dusk", collections=[name], mode="keyword")
    assert old["hits"] == []
    new = await search(client, query="pangolins", collections=[name], mode="keyword")
    assert [h["doc_id"] for h in new["hits"]] == [indexed["doc_id"]]
    info = (await client.get(f"/v1/collections/{name}")).json()
    assert (info["document_count"], info["chunk_count"]) == (1, 3)


async def test_force_reindexes_an_unchanged_document(client, unique, make_doc, upsert) -> None:
    name = unique("force")
    body = make_doc("x.txt", ["Same text twice."])
    await upsert(client, name, body)
    assert (await upsert(client, name, body | {"force": True}))["status"] == "replaced"
    assert (await client.get(f"/v1/collections/{name}")).json()["chunk_count"] == 1


async def test_doc_id_is_stable_per_collection_and_source(client, unique, make_doc, upsert) -> None:
    a, b = unique("ida"), unique("idb")
    body = make_doc("shared/source.md", ["Stable identifiers."])
    first, other = await upsert(client, a, body), await upsert(client, b, body)
    assert first["doc_id"] != other["doc_id"]
    explicit = await upsert(client, a, make_doc("other.md", ["Own id."], doc_id="my-doc_1"))
    assert explicit["doc_id"] == "my-doc_1"


async def test_batch_embeds_all_documents_in_one_pass(client, unique, make_doc) -> None:
    name = unique("batch")
    docs = [make_doc(f"batch/{i}.md", [f"Document {i} first part.", f"Document {i} second part."]) for i in range(5)]
    response = await client.post(f"/v1/collections/{name}/documents/batch", json={"documents": docs})
    assert response.status_code == 200, response.text
    body = response.json()
    assert [r["status"] for r in body["results"]] == ["indexed"] * 5
    assert body["timings"]["embedding_ms"] > 0
    shares = sum(r["timings"]["embedding_ms"] for r in body["results"])
    assert abs(shares - body["timings"]["embedding_ms"]) < 1e-6 * body["timings"]["embedding_ms"] + 1e-9
    docs[2] = make_doc("batch/2.md", ["Changed content."])
    again = (await client.post(f"/v1/collections/{name}/documents/batch", json={"documents": docs})).json()
    assert [r["status"] for r in again["results"]] == ["skipped", "skipped", "replaced", "skipped", "skipped"]
    assert (await client.get(f"/v1/collections/{name}")).json()["chunk_count"] == 9


async def test_same_document_twice_in_a_batch_is_refused(client, unique, make_doc) -> None:
    docs = [make_doc("dup.md", ["one"]), make_doc("dup.md", ["two"])]
    response = await client.post(f"/v1/collections/{unique('dup')}/documents/batch", json={"documents": docs})
    assert response.status_code == 422
    assert "documents[1] and documents[0] are the same document" in response.json()["error"]


async def test_invalid_chunks_are_refused_before_anything_is_written(client, service: GatewayService, make_doc) -> None:
    name = "never_created_by_bad_chunks"
    repeated = make_doc("r.md", ["a", "b"])
    repeated["chunks"][1]["index"] = 0
    too_big = make_doc("big.md", ["é" * 40_000])
    backwards = make_doc("b.md", ["text"], chunk0={"start": 10, "end": 2})
    for body, message in [(repeated, "appears twice"), (too_big, "bytes of UTF-8"), (backwards, "before it starts")]:
        response = await client.post(f"/v1/collections/{name}/documents", json=body)
        assert response.status_code == 422 and message in response.json()["error"], response.text
    assert name not in service.store.list_collections()


async def test_bad_collection_names_and_bodies_are_422(client, make_doc) -> None:
    body = make_doc("a.md", ["text"])
    for name in ["_documents", "_n_x", "-starts-with-dash", ".hidden", "x" * 256, "a%20b", "a%3Fb"]:
        response = await client.post(f"/v1/collections/{name}/documents", json=body)
        assert response.status_code == 422, name
    response = await client.post("/v1/collections/ok_name/documents", json=body | {"content_hash": "nothex"})
    assert response.status_code == 422
    assert "nothex" not in response.text  # errors do not echo the payload


async def test_concurrent_upserts_of_one_source_end_with_one_document(client, unique, make_doc) -> None:
    name = unique("race")
    await client.post("/v1/collections", json={"name": name})
    bodies = [make_doc("race.md", [f"Version {i} of the racing document."]) for i in range(4)]
    responses = await asyncio.gather(*(client.post(f"/v1/collections/{name}/documents", json=b) for b in bodies))
    assert all(r.status_code == 200 for r in responses)
    assert sorted(r.json()["status"] for r in responses) == ["indexed", "replaced", "replaced", "replaced"]
    info = (await client.get(f"/v1/collections/{name}")).json()
    assert (info["document_count"], info["chunk_count"]) == (1, 1)


async def test_upsert_creates_the_collection(
    client: httpx.AsyncClient, unique, make_doc, upsert, request: pytest.FixtureRequest, embedder
) -> None:
    name = unique("created")
    await upsert(client, name, make_doc("c.md", ["Creates its collection."]))
    listed = (await client.get("/v1/collections")).json()["collections"]
    entry = next(c for c in listed if c["name"] == name)
    assert entry == {
        "name": name,
        "document_count": 1,
        "chunk_count": 1,
        # The embedder's identity: the model, marked with its int8 scheme ("+int8pc") where the CPU embeds int8.
        "embedding_model": embedder.model_name,
        # The vectors' precision, said on its own (issue 50): int8 exactly where the identity carries a scheme.
        "precision": "int8" if "+int8" in embedder.model_name else "fp32",
        "dimension": 384,
        # The index it lives in, as get_collections and the console show it beside the counts.
        "engine": {"milvus": "milvus-lite", "lance": "lance"}[request.node.callspec.params["gateway_app"]],
    }
    assert not any(c["name"].startswith("_") for c in listed)
    assert embedder.model_name.startswith("sentence-transformers/all-MiniLM-L6-v2")
