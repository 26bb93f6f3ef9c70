"""Names users write (letters, digits, '-', '_', '.', up to 255) mapped to Milvus names and listed back exactly."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from ingestion_contracts import NAME_PATTERN
from vector_gateway import names
from vector_gateway.records import LEASES, REGISTRY
from vector_gateway.service import GatewayService
from vector_gateway.where import Eq

MILVUS = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,254}")
NAMES = ["legal_docs", "Docs", "my-lib", "my_lib", "my.lib", "team.docs-v2", "2026-report", "a_-_.b", "x" * 63]
NAMES += ["x" * 64, "y-" * 30, "z." * 127 + "z"]


def no_properties() -> dict[str, str]:
    raise AssertionError("only hashed names read the collection's properties")


@pytest.mark.parametrize("name", NAMES)
def test_every_user_name_maps_to_a_milvus_name_and_back(name: str) -> None:
    milvus = names.collection(name)
    assert MILVUS.fullmatch(milvus) and len(milvus) <= names.MAX_MAPPED
    recorded = (lambda: {names.USER_NAME_PROPERTY: name}) if names.is_hashed(milvus) else no_properties
    assert names.user_collection(milvus, recorded) == name
    assert MILVUS.fullmatch(names.vector_store(name))


def test_names_existing_indexes_hold_map_to_themselves() -> None:
    # The old rules: collections [A-Za-z][A-Za-z0-9_]{0,62}, stores [A-Za-z0-9][A-Za-z0-9_]{0,59} under _vs_.
    for name in ("legal_docs", "rag_gateway", "Docs", "a" * 63, "notes_2026"):
        assert names.collection(name) == name
    for name in ("default", "project_embeddings", "2026", "s" * 60):
        assert names.vector_store(name) == f"_vs_{name}"


def test_names_differing_by_case_or_separator_stay_apart() -> None:
    group = ["my-lib", "my_lib", "my.lib", "My-lib", "MY_LIB", "my--lib", "my__lib", "mylib", "my_hlib", "my_dlib"]
    assert len({names.collection(n) for n in group}) == len(group)
    assert len({names.vector_store(n) for n in group}) == len(group)


def test_long_names_are_hashed_and_read_back_from_the_recorded_name() -> None:
    long = "team.docs-" + "x" * 245
    assert len(long) == 255
    milvus = names.collection(long)
    assert names.is_hashed(milvus) and len(milvus) <= names.MAX_MAPPED
    assert names.user_collection(milvus, lambda: {names.USER_NAME_PROPERTY: long}) == long
    assert names.collection(long[:-1] + "y") != milvus
    # A recorded name that does not hash to the collection (made outside the gateway) is not shown.
    assert names.user_collection(milvus, lambda: {names.USER_NAME_PROPERTY: "other"}) is None


def test_internal_and_foreign_collections_are_never_user_collections() -> None:
    for milvus in (REGISTRY, LEASES, "_vs_default", names.vector_store("my-lib"), "_n_abc", "_n_a_x", "_other"):
        assert names.user_collection(milvus, dict) is None, milvus


def test_user_names_cannot_reach_the_reserved_forms() -> None:
    pattern = re.compile(NAME_PATTERN)
    for reserved in ("_documents", "_vs_x", "_n_my_hlib", "_h_abc", ".", "..", "../x", "a?limit=1", "a/b", "x" * 256):
        assert not pattern.fullmatch(reserved), reserved


# -- through the HTTP API -----------------------------------------------------------------------------
def unique_name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


async def listed(client: httpx.AsyncClient) -> list[str]:
    response = await client.get("/v1/collections")
    assert response.status_code == 200, response.text
    return [c["name"] for c in response.json()["collections"]]


async def test_user_names_index_search_and_list_exactly(
    client: httpx.AsyncClient, upsert: Callable[..., Any], search: Callable[..., Any], make_doc: Callable[..., Any]
) -> None:
    stem = unique_name("legal-docs.2026")
    wanted = [stem, stem.replace("-", "_"), stem.upper(), stem + "-" + "x" * (255 - len(stem) - 1)]
    for index, name in enumerate(wanted):
        answer = await upsert(client, name, make_doc(f"/n/{index}.md", [f"zebra number {index} grazes"]))
        assert answer["collection"] == name and answer["status"] == "indexed"
    shown = await listed(client)
    assert set(wanted) <= set(shown)
    assert not [n for n in shown if n.startswith("_")]
    for index, name in enumerate(wanted):  # four collections: no two names landed on one
        found = await search(client, query="zebra grazes", collections=[name], mode="keyword")
        assert [h["collection"] for h in found["hits"]] == [name]
        assert found["hits"][0]["source"] == f"/n/{index}.md"
        docs = (await client.get(f"/v1/collections/{name}/documents")).json()["documents"]
        assert [d["collection"] for d in docs] == [name]
    everywhere = await search(client, query="zebra grazes", mode="keyword", top_k=50)
    assert set(wanted) <= {h["collection"] for h in everywhere["hits"]}
    for name in wanted:
        response = await client.delete(f"/v1/collections/{name}")
        assert response.status_code == 200 and response.json()["name"] == name
    assert not set(wanted) & set(await listed(client))


async def test_vector_stores_with_user_names_stay_hidden_and_apart(client: httpx.AsyncClient) -> None:
    store = unique_name("project-embeddings")
    for name, vector in ((store, [1.0, 0.0]), (store.replace("-", "_"), [0.0, 1.0])):
        response = await client.post(f"/v1/vector-stores/{name}/vectors", json={"id": "v", "embedding": vector})
        assert response.status_code == 200 and response.json()["store"] == name
    found = await client.post(f"/v1/vector-stores/{store}/search", json={"query": [1.0, 0.0]})
    assert [round(h["score"], 6) for h in found.json()["results"]] == [1.0]
    assert not [n for n in await listed(client) if "project" in n]


@pytest.mark.parametrize("path", ["/v1/collections/" + "x" * 256, "/v1/collections/-x", "/v1/vector-stores/.x"])
async def test_names_outside_the_rule_are_refused(client: httpx.AsyncClient, path: str) -> None:
    assert (await client.get(path)).status_code == 422


async def test_registry_rows_record_the_milvus_name(
    client: httpx.AsyncClient, service: GatewayService, upsert: Callable[..., Any], make_doc: Callable[..., Any]
) -> None:
    name = unique_name("team.docs")
    await upsert(client, name, make_doc("/r.md", ["one row"]))
    rows = service.store.registry_query(Eq("collection", names.collection(name)), ["collection"])
    assert [r["collection"] for r in rows] == [names.collection(name)]
    await client.delete(f"/v1/collections/{name}")
