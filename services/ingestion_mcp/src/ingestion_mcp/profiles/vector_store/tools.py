"""Compatibility profile: the vector_store tools (docs/specs/vector-store-tools.md).

vector_add, vector_search, vector_delete and vector_count over embeddings the caller computes, of any
dimension. Storage is the gateway's raw vector stores: one hidden Milvus collection per store_name
(its dimension fixed by its first vector, its metric by INGESTION_MCP_VECTOR_STORE_METRIC when it is
created), namespaces inside it. Errors are `{"error": "..."}` with isError=true.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from ingestion_contracts.common import NAME_PATTERN, NAME_RULE
from ingestion_contracts.vectors import (
    DEFAULT_VECTOR_STORE,
    MAX_K,
    NAMESPACE_PATTERN,
    VectorAddRequest,
    VectorSearchRequest,
)
from mcp.server import MCPServer
from mcp.types import CallToolResult
from pydantic import BaseModel, Field

from ...errors import ToolFailure
from ...state import AppState
from ...toolkit.annotations import LARGE_RESULT, READ, REMOVE, WRITE
from ...toolkit.common import ToolDecorator, profile_tools, result

_STORE_RE = re.compile(NAME_PATTERN)
_NAMESPACE_RE = re.compile(NAMESPACE_PATTERN)

StoreArg = Annotated[str, Field(description="Target store instance (letters, digits, - _ .; up to 255 characters)")]
NamespaceArg = Annotated[
    str | None,
    Field(description="Namespace within the store (letters, digits and _ . : -; up to 128 characters)"),
]


def render_error(failure: ToolFailure) -> dict[str, Any]:
    return {"error": failure.message if not failure.suggestion else f"{failure.message} {failure.suggestion}"}


class AddResult(BaseModel):
    status: Literal["added", "updated"] | None = None
    id: str | None = None
    dimension: int | None = None
    error: str | None = None


class VectorMatch(BaseModel):
    id: str
    score: float
    metadata: dict[str, Any]
    namespace: str | None = Field(default=None, description="The namespace the vector was added to (none: omitted).")


class SearchResult(BaseModel):
    results: list[VectorMatch] | None = None
    total_searched: int | None = None
    error: str | None = None


class DeleteResult(BaseModel):
    deleted: bool | None = None
    id: str | None = None
    error: str | None = None


class CountResult(BaseModel):
    count: int | None = None
    store_name: str | None = None
    error: str | None = None


def check_scope(store_name: str, namespace: str | None) -> None:
    """Store names become Milvus collection names and namespaces filter values: both are checked here."""
    if not _STORE_RE.fullmatch(store_name):
        raise ToolFailure(
            f"Invalid store_name: use {NAME_RULE}.",
            "For example 'default' or 'project-embeddings'.",
            code="INVALID_INPUT",
        )
    if namespace is not None and not _NAMESPACE_RE.fullmatch(namespace):
        raise ToolFailure(
            "Invalid namespace: use 1-128 letters, digits or the characters _ . : - (no '/').",
            "For example 'chapter-1'.",
            code="INVALID_INPUT",
        )


def register(server: MCPServer, state: AppState) -> None:
    tool = profile_tools(server, render_error)
    _register_write(tool, state)
    _register_read(tool, state)


def _register_write(tool: ToolDecorator, state: AppState) -> None:
    @tool(WRITE)
    async def vector_add(
        id: Annotated[str, Field(description="Unique identifier for the vector")],
        embedding: Annotated[list[float], Field(description="The embedding vector")],
        metadata: Annotated[dict[str, Any] | None, Field(description="Arbitrary key-value metadata")] = None,
        store_name: StoreArg = DEFAULT_VECTOR_STORE,
        namespace: NamespaceArg = None,
    ) -> Annotated[CallToolResult, AddResult]:
        """Add a vector embedding with optional metadata to the store; overwrites the vector if the id exists.

        The store's dimension is fixed by its first vector: later vectors must have the same length.
        Returns status "added" or "updated", the id and the dimension. Find vectors with vector_search.
        """
        if not embedding:
            raise ToolFailure("Embedding must be a non-empty array of numbers", code="INVALID_INPUT")
        check_scope(store_name, namespace)
        request = VectorAddRequest(
            id=id, embedding=embedding, metadata=metadata or {}, namespace=namespace,
            metric=state.settings.vector_store_metric,
        )  # fmt: skip
        added = await state.library.add_vector(store_name, request)
        return result(AddResult(status=added.status, id=added.id, dimension=added.dimension))

    @tool(REMOVE)
    async def vector_delete(
        id: Annotated[str, Field(description="Vector ID to delete")],
        store_name: StoreArg = DEFAULT_VECTOR_STORE,
        namespace: NamespaceArg = None,
    ) -> Annotated[CallToolResult, DeleteResult]:
        """Remove a vector from the store by its id: in that namespace, or in every namespace when omitted.

        Returns deleted=true, or deleted=false when no such id exists there (not an error). Permanent.
        """
        check_scope(store_name, namespace)
        deleted = await state.library.delete_vector(store_name, id, namespace)
        return result(DeleteResult(deleted=deleted.deleted, id=deleted.id))


def _register_read(tool: ToolDecorator, state: AppState) -> None:
    @tool(READ, meta=LARGE_RESULT)  # up to 1,000 matches with their callers' metadata
    async def vector_search(
        query: Annotated[list[float], Field(description="Query embedding vector")],
        k: Annotated[int, Field(ge=1, le=MAX_K, description="Number of results to return")] = 10,
        store_name: StoreArg = DEFAULT_VECTOR_STORE,
        namespace: Annotated[str | None, Field(description="Namespace to search within; omitted = all")] = None,
        metadata_filter: Annotated[
            dict[str, str | int | float | bool] | None,
            Field(description="Key-value pairs that must match in metadata (equality, all of them)"),
        ] = None,
    ) -> Annotated[CallToolResult, SearchResult]:
        """Similarity search against stored vectors with a query embedding of the store's dimension.

        Results are ordered best first: highest score for cosine and dot stores, lowest distance for
        euclidean ones. Each result has id, score and metadata (never the vector); total_searched is the
        number of vectors that were compared. An empty or unknown store gives no results.
        """
        if not query:
            raise ToolFailure("Query embedding must be a non-empty array", code="INVALID_INPUT")
        check_scope(store_name, namespace)
        request = VectorSearchRequest(query=query, k=k, namespace=namespace, metadata_filter=metadata_filter or {})
        found = await state.library.search_vectors(store_name, request)
        matches = [
            VectorMatch(id=hit.id, score=hit.score, metadata=hit.metadata, namespace=hit.namespace)
            for hit in found.results
        ]
        return result(SearchResult(results=matches, total_searched=found.total_searched))

    @tool(READ)
    async def vector_count(
        store_name: StoreArg = DEFAULT_VECTOR_STORE,
        namespace: Annotated[str | None, Field(description="Namespace to count within; omitted = all")] = None,
    ) -> Annotated[CallToolResult, CountResult]:
        """Get the number of vectors in a store, or in one namespace of it (0 for an empty or unknown store)."""
        check_scope(store_name, namespace)
        info = await state.library.vector_store(store_name, namespace)
        return result(CountResult(count=info.count, store_name=store_name))
