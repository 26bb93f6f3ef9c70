"""The vector_store profile against shared/specs/vector-store-tools.md, through a real MCP client session
over the embedded services (real gateway, Milvus Lite)."""

from __future__ import annotations

import math
import uuid
from typing import Any

import pytest
from ingestion_mcp.server import build_server
from ingestion_mcp.state import AppState
from mcp import Client

from .conftest import profile_state

pytestmark = pytest.mark.timeout(300)

# Hand-checked against the query [1, 0] (see the comments for each metric's order).
VECTORS = {"v1": [1.0, 0.0], "v2": [3.0, 4.0], "v3": [0.5, 0.5], "v4": [2.0, 0.2]}
EXPECTED = {
    # cos(q, v) = v_x / |v|
    "cosine": [("v1", 1.0), ("v4", 2 / math.sqrt(4.04)), ("v3", math.sqrt(0.5)), ("v2", 0.6)],
    # q . v = v_x
    "dot": [("v2", 3.0), ("v4", 2.0), ("v1", 1.0), ("v3", 0.5)],
    # |q - v|, lowest first
    "euclidean": [("v1", 0.0), ("v3", math.sqrt(0.5)), ("v4", math.sqrt(1.04)), ("v2", math.sqrt(20.0))],
}
OPTIONAL = {"store_name": "default", "namespace": None}


def store() -> str:
    return f"vs_{uuid.uuid4().hex[:10]}"


def session(app_state: AppState, metric: str = "cosine") -> Client:
    return Client(build_server(profile_state(app_state, profiles=["vector_store"], vector_store_metric=metric)))


async def ok(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    response = await client.call_tool(tool, arguments)
    assert not response.is_error, response.content
    return response.structured_content


async def error(client: Client, tool: str, **arguments: Any) -> str:
    response = await client.call_tool(tool, arguments)
    assert response.is_error
    assert set(response.structured_content) == {"error"}, response.structured_content
    return response.structured_content["error"]


def defaults(schema: dict[str, Any]) -> dict[str, Any]:
    required = schema.get("required", [])
    return {name: prop.get("default") for name, prop in schema["properties"].items() if name not in required}


async def test_tool_names_parameters_and_defaults(app_state: AppState) -> None:
    async with session(app_state) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) == {"vector_add", "vector_search", "vector_delete", "vector_count"}
    add = tools["vector_add"].input_schema
    assert add["required"] == ["id", "embedding"]
    assert defaults(add) == {"metadata": None, **OPTIONAL}
    assert add["properties"]["embedding"]["items"]["type"] == "number"
    search = tools["vector_search"].input_schema
    assert search["required"] == ["query"]
    assert defaults(search) == {"k": 10, "metadata_filter": None, **OPTIONAL}
    delete = tools["vector_delete"].input_schema
    assert (delete["required"], defaults(delete)) == (["id"], OPTIONAL)
    count = tools["vector_count"].input_schema
    assert (count.get("required", []), defaults(count)) == ([], OPTIONAL)
    assert set(tools["vector_search"].output_schema["properties"]) == {"results", "total_searched", "error"}
    assert tools["vector_search"].annotations.read_only_hint and tools["vector_delete"].annotations.destructive_hint


@pytest.mark.parametrize("metric", ["cosine", "dot", "euclidean"])
async def test_search_orders_by_the_store_metric(app_state: AppState, metric: str) -> None:
    name = store()
    async with session(app_state, metric) as client:
        for vector_id, vector in VECTORS.items():
            added = await ok(client, "vector_add", id=vector_id, embedding=vector, store_name=name)
            assert added == {"status": "added", "id": vector_id, "dimension": 2}
        found = await ok(client, "vector_search", query=[1.0, 0.0], store_name=name)
    assert set(found) == {"results", "total_searched"} and found["total_searched"] == 4
    assert [hit["id"] for hit in found["results"]] == [vector_id for vector_id, _ in EXPECTED[metric]]
    assert [hit["score"] for hit in found["results"]] == pytest.approx([s for _, s in EXPECTED[metric]], abs=1e-5)
    assert all(set(hit) == {"id", "score", "metadata"} for hit in found["results"])


async def test_a_store_keeps_its_metric_when_the_setting_changes(app_state: AppState) -> None:
    name = store()
    async with session(app_state, "euclidean") as client:
        await ok(client, "vector_add", id="near", embedding=[1.0, 0.0], store_name=name)
    async with session(app_state, "dot") as client:
        await ok(client, "vector_add", id="far", embedding=[30.0, 40.0], store_name=name)
        found = await ok(client, "vector_search", query=[1.0, 0.0], store_name=name)
    assert [hit["id"] for hit in found["results"]] == ["near", "far"]  # by distance; dot would put "far" first


async def test_add_is_idempotent_added_then_updated(app_state: AppState) -> None:
    name = store()
    vector = {"id": "doc-abc-123", "embedding": [0.1, 0.2, 0.3, 0.4], "store_name": name}
    async with session(app_state) as client:
        first = await ok(client, "vector_add", metadata={"source": "arxiv"}, **vector)
        second = await ok(client, "vector_add", metadata={"source": "paper", "year": 2026}, **vector)
        assert (first["status"], second["status"]) == ("added", "updated")
        assert await ok(client, "vector_count", store_name=name) == {"count": 1, "store_name": name}
        found = await ok(client, "vector_search", query=[0.1, 0.2, 0.3, 0.4], k=5, store_name=name)
    assert [(h["id"], h["metadata"]) for h in found["results"]] == [("doc-abc-123", {"source": "paper", "year": 2026})]


async def test_default_store_and_namespaces_are_isolated(app_state: AppState) -> None:
    async with session(app_state) as client:
        before = (await ok(client, "vector_count"))["count"]
        await ok(client, "vector_add", id="shared-id", embedding=[1.0, 0.0, 0.0], namespace="chapter-1")
        again = await ok(client, "vector_add", id="shared-id", embedding=[0.0, 1.0, 0.0], namespace="chapter-2")
        assert again["status"] == "added"
        counts = [(await ok(client, "vector_count", **args))["count"] for args in ({}, {"namespace": "chapter-1"})]
        assert counts == [before + 2, 1]
        one = await ok(client, "vector_search", query=[0.0, 1.0, 0.0], namespace="chapter-1")
        assert [h["id"] for h in one["results"]] == ["shared-id"] and one["total_searched"] == 1
        assert one["results"][0]["score"] == pytest.approx(0.0, abs=1e-6)  # the chapter-2 vector is not visible
        # Without a namespace a search sees both; each result says which namespace it is from.
        both = await ok(client, "vector_search", query=[0.0, 1.0, 0.0], k=100)
        mine = {(h["id"], h.get("namespace")) for h in both["results"] if h["id"] == "shared-id"}
        assert mine == {("shared-id", "chapter-1"), ("shared-id", "chapter-2")}
        deleted = await ok(client, "vector_delete", id="shared-id", namespace="chapter-1")
        assert deleted == {"deleted": True, "id": "shared-id"}
        assert (await ok(client, "vector_count", namespace="chapter-1"))["count"] == 0
        assert (await ok(client, "vector_count", namespace="chapter-2"))["count"] == 1
        # Without a namespace a delete removes the id wherever a search without one finds it.
        await ok(client, "vector_add", id="shared-id", embedding=[1.0, 0.0, 0.0], namespace="chapter-1")
        everywhere = await ok(client, "vector_delete", id="shared-id")
        assert everywhere == {"deleted": True, "id": "shared-id"}
        assert (await ok(client, "vector_count"))["count"] == before
        assert (await ok(client, "vector_delete", id="shared-id")) == {"deleted": False, "id": "shared-id"}


async def test_a_refused_first_vector_creates_no_store(app_state: AppState) -> None:
    name = store()
    async with session(app_state) as client:
        assert "all zeros" in await error(client, "vector_add", id="z", embedding=[0.0, 0.0], store_name=name)
        # No store of dimension 2 was left behind: the first good vector fixes the dimension, here 3.
        added = await ok(client, "vector_add", id="a", embedding=[1.0, 0.0, 0.0], store_name=name)
        assert (added["status"], added["dimension"]) == ("added", 3)


async def test_metadata_filter_and_hostile_values(app_state: AppState) -> None:
    name = store()
    injected = 'x" or metadata["source"] != "'
    rows = {"a": {"source": "arxiv", "year": 2026}, "b": {"source": "blog", "year": 2026}, "secret": {"source": "x"}}
    async with session(app_state) as client:
        for vector_id, metadata in rows.items():
            await ok(client, "vector_add", id=vector_id, embedding=[1.0, 1.0], metadata=metadata, store_name=name)
        both = await ok(client, "vector_search", query=[1.0, 1.0], store_name=name,
                        metadata_filter={"source": "arxiv", "year": 2026})  # fmt: skip
        assert [h["id"] for h in both["results"]] == ["a"] and both["total_searched"] == 1
        hostile = await ok(client, "vector_search", query=[1.0, 1.0], store_name=name,
                           metadata_filter={"source": injected})  # fmt: skip
        assert hostile == {"results": [], "total_searched": 0}  # compared literally: nothing leaks
        await ok(client, "vector_add", id="odd", embedding=[1.0, 1.0], metadata={"source": injected}, store_name=name)
        literal = await ok(client, "vector_search", query=[1.0, 1.0], store_name=name,
                           metadata_filter={"source": injected})  # fmt: skip
        assert [h["id"] for h in literal["results"]] == ["odd"]
        bad_key = await error(client, "vector_search", query=[1.0, 1.0], store_name=name,
                              metadata_filter={'source"] != "" or metadata["a': "x"})  # fmt: skip
        assert "metadata_filter" in bad_key and "secret" not in bad_key


async def test_dimension_mismatch_names_both_dimensions(app_state: AppState) -> None:
    name = store()
    async with session(app_state) as client:
        await ok(client, "vector_add", id="four", embedding=[0.1, 0.2, 0.3, 0.4], store_name=name)
        message = await error(client, "vector_add", id="three", embedding=[0.1, 0.2, 0.3], store_name=name)
        assert "4-dimensional" in message and "3 dimensions" in message
        query = await error(client, "vector_search", query=[0.1, 0.2], store_name=name)
        assert "4-dimensional" in query and "2 dimensions" in query
        assert (await ok(client, "vector_count", store_name=name))["count"] == 1


async def test_unknown_store_counts_zero_and_searches_empty(app_state: AppState) -> None:
    name = store()
    async with session(app_state) as client:
        assert await ok(client, "vector_count", store_name=name) == {"count": 0, "store_name": name}
        assert await ok(client, "vector_search", query=[1.0], store_name=name) == {"results": [], "total_searched": 0}
        assert await ok(client, "vector_delete", id="nope", store_name=name) == {"deleted": False, "id": "nope"}
        collections = await app_state.backend.list_collections()
    assert not any(c.name.startswith("_") or "vs_" in c.name for c in collections.collections)


async def test_invalid_input_errors_have_the_spec_shape(app_state: AppState) -> None:
    async with session(app_state) as client:
        empty = await error(client, "vector_add", id="a", embedding=[])
        assert empty == "Embedding must be a non-empty array of numbers"
        assert await error(client, "vector_search", query=[]) == "Query embedding must be a non-empty array"
        assert "store_name" in await error(client, "vector_count", store_name="../etc")
        assert "namespace" in await error(client, "vector_delete", id="a", namespace='x" or 1==1')
        assert "id" in await error(client, "vector_add", id="", embedding=[1.0])
        nested = await error(client, "vector_add", id="deep", embedding=[1.0], metadata={"a": {"b": {"c": {"d": {}}}}})
        assert "nested" in nested


async def test_store_names_users_write(app_state: AppState) -> None:
    tag = uuid.uuid4().hex[:8]
    name, twin, longest = f"project-embeddings-{tag}", f"project_embeddings_{tag}", f"{tag}." + "e" * 246
    async with session(app_state) as client:
        for store_name, vector in ((name, [1.0, 0.0]), (twin, [0.0, 1.0]), (longest, [0.6, 0.8])):
            added = await ok(client, "vector_add", id="v1", embedding=vector, store_name=store_name)
            assert added["status"] == "added", store_name
        await ok(client, "vector_add", id="v2", embedding=[0.8, 0.6], store_name=name)
        found = await ok(client, "vector_search", query=[1.0, 0.0], store_name=name)
        assert [r["id"] for r in found["results"]] == ["v1", "v2"] and found["total_searched"] == 2
        assert await ok(client, "vector_count", store_name=name) == {"count": 2, "store_name": name}
        assert await ok(client, "vector_count", store_name=twin) == {"count": 1, "store_name": twin}
        assert await ok(client, "vector_count", store_name=longest) == {"count": 1, "store_name": longest}
        assert await ok(client, "vector_delete", id="v1", store_name=name) == {"deleted": True, "id": "v1"}
        assert await ok(client, "vector_count", store_name=name) == {"count": 1, "store_name": name}
        too_long = await error(client, "vector_count", store_name=longest + "e")
        assert "1-255 letters, digits, '-', '_' or '.'" in too_long and "project-embeddings" in too_long
        for hostile in ("../x", "a?limit=1", ".."):
            assert "Invalid store_name" in await error(client, "vector_count", store_name=hostile)
        collections = await app_state.backend.list_collections()
    assert not [c.name for c in collections.collections if tag in c.name]
