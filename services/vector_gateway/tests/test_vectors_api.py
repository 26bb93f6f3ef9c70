"""Raw vector stores over HTTP: caller-supplied embeddings, metrics, namespaces, filters, hidden collections."""

from __future__ import annotations

import math
from typing import Any

import httpx
import pytest
from vector_gateway.vectors import collection_name

# Hand-checked against the query [1, 0]:
#   cosine    v1 1.0,  v4 0.995, v3 0.7071, v2 0.6
#   dot       v2 3.0,  v4 2.0,   v1 1.0,    v3 0.5
#   euclidean v1 0.0,  v3 0.7071, v4 1.0198, v2 4.4721
VECTORS = {"v1": [1.0, 0.0], "v2": [3.0, 4.0], "v3": [0.5, 0.5], "v4": [2.0, 0.2]}
EXPECTED = {
    "cosine": [("v1", 1.0), ("v4", 2 / math.sqrt(4.04)), ("v3", math.sqrt(0.5)), ("v2", 0.6)],
    "dot": [("v2", 3.0), ("v4", 2.0), ("v1", 1.0), ("v3", 0.5)],
    "euclidean": [("v1", 0.0), ("v3", math.sqrt(0.5)), ("v4", math.sqrt(1.04)), ("v2", math.sqrt(20.0))],
}


async def add(client: httpx.AsyncClient, store: str, status: int = 200, **body: Any) -> dict[str, Any]:
    response = await client.post(f"/v1/vector-stores/{store}/vectors", json=body)
    assert response.status_code == status, response.text
    return response.json()


async def search(client: httpx.AsyncClient, store: str, status: int = 200, **body: Any) -> dict[str, Any]:
    response = await client.post(f"/v1/vector-stores/{store}/search", json=body)
    assert response.status_code == status, response.text
    return response.json()


async def info(client: httpx.AsyncClient, store: str, **params: Any) -> dict[str, Any]:
    response = await client.get(f"/v1/vector-stores/{store}", params=params)
    assert response.status_code == 200, response.text
    return response.json()


@pytest.mark.parametrize("metric", ["cosine", "dot", "euclidean"])
async def test_each_metric_orders_and_scores_as_hand_computed(client, unique, metric: str) -> None:
    store = unique(f"m_{metric}")
    for vector_id, vector in VECTORS.items():
        answer = await add(client, store, id=vector_id, embedding=vector, metric=metric)
        assert (answer["status"], answer["dimension"], answer["metric"]) == ("added", 2, metric)
    found = await search(client, store, query=[1.0, 0.0], k=10)
    assert [hit["id"] for hit in found["results"]] == [vector_id for vector_id, _ in EXPECTED[metric]]
    assert [hit["score"] for hit in found["results"]] == pytest.approx([s for _, s in EXPECTED[metric]], abs=1e-5)
    assert (found["total_searched"], found["metric"]) == (4, metric)
    assert [hit["id"] for hit in (await search(client, store, query=[1.0, 0.0], k=2))["results"]] == [
        vector_id for vector_id, _ in EXPECTED[metric][:2]
    ]


async def test_store_keeps_the_metric_it_was_created_with(client, unique) -> None:
    store = unique("keeps")
    await add(client, store, id="a", embedding=[1.0, 0.0], metric="euclidean")
    later = await add(client, store, id="b", embedding=[3.0, 4.0], metric="dot")
    assert later["metric"] == "euclidean"
    assert (await info(client, store)) == {
        "store": store, "namespace": None, "count": 2, "dimension": 2, "metric": "euclidean",
    }  # fmt: skip


async def test_add_twice_is_updated_and_leaves_one_row(client, unique) -> None:
    store = unique("idem")
    first = await add(client, store, id="doc-1", embedding=[0.1, 0.2, 0.3], metadata={"v": 1})
    second = await add(client, store, id="doc-1", embedding=[0.3, 0.2, 0.1], metadata={"v": 2})
    assert (first["status"], second["status"]) == ("added", "updated")
    assert (await info(client, store))["count"] == 1
    hit = (await search(client, store, query=[0.3, 0.2, 0.1], k=5))["results"]
    assert [(h["id"], h["metadata"]) for h in hit] == [("doc-1", {"v": 2})]
    assert hit[0]["score"] == pytest.approx(1.0, abs=1e-5)


async def test_dimension_is_fixed_by_the_first_vector(client, unique) -> None:
    store = unique("dims")
    await add(client, store, id="a", embedding=[1.0, 2.0, 3.0, 4.0])
    wrong = await add(client, store, 409, id="b", embedding=[1.0, 2.0, 3.0])
    assert wrong["code"] == "DIMENSION_MISMATCH"
    assert "4-dimensional" in wrong["error"] and "3 dimensions" in wrong["error"]
    query = await search(client, store, 409, query=[1.0, 2.0])
    assert "4-dimensional" in query["error"] and "2 dimensions" in query["error"]
    assert (await info(client, store))["count"] == 1


async def test_namespaces_isolate_ids_counts_and_searches(client, unique) -> None:
    store = unique("ns")
    await add(client, store, id="same", embedding=[1.0, 0.0], namespace="chapter-1", metadata={"n": 1})
    again = await add(client, store, id="same", embedding=[0.0, 1.0], namespace="chapter-2", metadata={"n": 2})
    assert again["status"] == "added"  # another namespace, another vector
    await add(client, store, id="free", embedding=[1.0, 1.0])
    assert [(await info(client, store, **p))["count"] for p in ({}, {"namespace": "chapter-1"})] == [3, 1]
    one = await search(client, store, query=[0.0, 1.0], namespace="chapter-1")
    assert [(h["id"], h["namespace"], h["metadata"]) for h in one["results"]] == [("same", "chapter-1", {"n": 1})]
    assert one["total_searched"] == 1
    everywhere = await search(client, store, query=[0.0, 1.0])
    assert [h["namespace"] for h in everywhere["results"]] == ["chapter-2", None, "chapter-1"]
    gone = await client.delete(f"/v1/vector-stores/{store}/vectors", params={"id": "same", "namespace": "chapter-2"})
    assert gone.json() == {"deleted": True, "id": "same"}
    assert (await info(client, store, namespace="chapter-2"))["count"] == 0
    assert (await info(client, store, namespace="chapter-1"))["count"] == 1
    # No namespace: the id goes wherever a search without one sees it (as vector_search and vector_count).
    response = await client.delete(f"/v1/vector-stores/{store}/vectors", params={"id": "same"})
    assert response.json() == {"deleted": True, "id": "same"}
    assert (await info(client, store, namespace="chapter-1"))["count"] == 0


async def test_metadata_filter_matches_equal_values_only(client, unique) -> None:
    store = unique("filt")
    rows = {
        "a": {"source": "arxiv", "year": 2026},
        "b": {"source": "blog", "year": 2026, "ok": True},
        "c": {"source": "arxiv"},
    }
    for vector_id, metadata in rows.items():
        await add(client, store, id=vector_id, embedding=[1.0, 0.5], metadata=metadata)
    both = await search(client, store, query=[1.0, 0.5], metadata_filter={"source": "arxiv", "year": 2026})
    assert [h["id"] for h in both["results"]] == ["a"] and both["total_searched"] == 1
    arxiv = await search(client, store, query=[1.0, 0.5], metadata_filter={"source": "arxiv"})
    assert sorted(h["id"] for h in arxiv["results"]) == ["a", "c"]
    flagged = await search(client, store, query=[1.0, 0.5], metadata_filter={"ok": True, "year": 2026.0})
    assert [h["id"] for h in flagged["results"]] == ["b"]


async def test_a_key_holding_values_of_several_types_never_breaks_a_filter(client, unique) -> None:
    # Before: on Lance, one row whose value could not be read as the filter's type failed every search (500).
    store = unique("mixed")
    rows = {"num": {"year": 2026}, "text": {"year": "2026"}, "word": {"year": "unknown"}, "list": {"year": [2026]},
            "obj": {"year": {"v": 2026}}, "flag": {"ok": True}, "none": {}}  # fmt: skip
    for vector_id, metadata in rows.items():
        await add(client, store, id=vector_id, embedding=[1.0, 0.5], metadata=metadata)
    number = await search(client, store, query=[1.0, 0.5], metadata_filter={"year": 2026}, k=10)
    assert [h["id"] for h in number["results"]] == ["num"]
    text = await search(client, store, query=[1.0, 0.5], metadata_filter={"year": "2026"}, k=10)
    assert [h["id"] for h in text["results"]] == ["text"]
    word = await search(client, store, query=[1.0, 0.5], metadata_filter={"year": "unknown"}, k=10)
    assert [h["id"] for h in word["results"]] == ["word"]
    flag = await search(client, store, query=[1.0, 0.5], metadata_filter={"ok": True}, k=10)
    assert [h["id"] for h in flag["results"]] == ["flag"]


async def test_hostile_filters_match_literally_or_are_refused(client, unique) -> None:
    store = unique("inject")
    literal = 'x" or metadata["source"] != "'
    await add(client, store, id="secret", embedding=[1.0, 0.0], metadata={"source": "private"})
    await add(client, store, id="odd", embedding=[0.0, 1.0], metadata={"source": literal})
    found = await search(client, store, query=[1.0, 0.0], metadata_filter={"source": literal})
    assert [h["id"] for h in found["results"]] == ["odd"]
    for value in ['a\\" || 1 == 1 || "', "\\"]:
        assert (await search(client, store, query=[1.0, 0.0], metadata_filter={"source": value}))["results"] == []
    bad_key = await search(client, store, 422, query=[1.0, 0.0], metadata_filter={'source"] != "" or metadata["a': 1})
    assert bad_key["code"] == "INVALID_REQUEST" and "secret" not in str(bad_key)
    control = await search(client, store, 422, query=[1.0, 0.0], metadata_filter={"source": "a\u0000b"})
    assert "control character" in control["error"]
    nested = await search(client, store, 422, query=[1.0, 0.0], metadata_filter={"source": {"$ne": "x"}})
    assert nested["code"] == "INVALID_REQUEST"


async def test_missing_store_is_empty_not_an_error(client, unique) -> None:
    store = unique("none")
    assert (await info(client, store)) == {"store": store, "namespace": None, "count": 0, "dimension": None,
                                           "metric": None}  # fmt: skip
    assert (await search(client, store, query=[1.0]))["results"] == []
    response = await client.delete(f"/v1/vector-stores/{store}/vectors", params={"id": "x"})
    assert response.status_code == 200 and response.json() == {"deleted": False, "id": "x"}


async def test_invalid_requests_are_refused(client, unique) -> None:
    store = unique("bad")
    assert (await add(client, store, 422, id="a", embedding=[]))["code"] == "INVALID_REQUEST"
    assert (await add(client, store, 422, id="a", embedding=["x"]))["code"] == "INVALID_REQUEST"
    assert (await add(client, store, 422, id="a\nb", embedding=[1.0]))["code"] == "INVALID_REQUEST"
    zero = await add(client, store, 422, id="z", embedding=[0.0, 0.0])
    assert "all zeros" in zero["error"]
    for bad_store in ("-dash-first", "_hidden", ".dot", "x" * 256, "a%20b"):
        response = await client.post(f"/v1/vector-stores/{bad_store}/vectors", json={"id": "a", "embedding": [1.0]})
        assert response.status_code == 422, bad_store
    bad_namespace = await add(client, store, 422, id="a", embedding=[1.0], namespace="a/b")
    assert "namespace" in bad_namespace["error"]


async def test_vector_stores_stay_out_of_document_collections(client, unique, service) -> None:
    store = unique("hidden")
    await add(client, store, id="a", embedding=[1.0, 0.0])
    assert service.store.has_collection(collection_name(store))
    names = [c["name"] for c in (await client.get("/v1/collections")).json()["collections"]]
    assert not any(store in name for name in names)
    assert (await client.get(f"/v1/collections/{collection_name(store)}")).status_code == 422


async def test_a_reopened_database_serves_stores_with_their_shape(open_gateway, tmp_path) -> None:
    db = tmp_path / "milvus.db"
    async with open_gateway(db) as (client, _):
        await add(client, "kept", id="a", embedding=[3.0, 4.0], metric="euclidean", namespace="n")
    async with open_gateway(db) as (client, _):
        assert (await info(client, "kept"))["metric"] == "euclidean"
        found = await search(client, "kept", query=[0.0, 0.0])
        assert [(h["id"], round(h["score"], 4)) for h in found["results"]] == [("a", 5.0)]
