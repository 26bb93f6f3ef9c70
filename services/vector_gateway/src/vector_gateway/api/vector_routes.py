"""HTTP routes of the raw vector stores: validate, call VectorStores, answer. No storage logic here."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query, Request
from ingestion_contracts import NAME_PATTERN, ErrorBody
from ingestion_contracts.vectors import (
    MAX_VECTOR_ID,
    NAMESPACE_PATTERN,
    VectorAddRequest,
    VectorAddResponse,
    VectorDeleteResponse,
    VectorSearchRequest,
    VectorSearchResponse,
    VectorStoreInfo,
)

from ..vectors import VectorStores
from .routes import started

router = APIRouter(prefix="/v1/vector-stores", tags=["vector stores"])


def get_vectors(request: Request) -> VectorStores:
    return started(request, "vectors")


VectorsDep = Annotated[VectorStores, Depends(get_vectors)]
StorePath = Annotated[
    str, Path(max_length=255, pattern=NAME_PATTERN, description="Store name, e.g. project-embeddings")
]
NamespaceQuery = Annotated[
    str | None, Query(pattern=NAMESPACE_PATTERN, description="Namespace; omitted = the default namespace")
]


def _errors(*codes: int) -> dict[int | str, dict[str, object]]:
    described = {
        409: "The vector's dimension differs from the store's",
        422: "Invalid request (vector, name, metadata or filter)",
        503: "Milvus unreachable (see Retry-After)",
    }
    return {code: {"model": ErrorBody, "description": described[code]} for code in codes}


@router.post("/{store}/vectors", operation_id="add_vector", responses=_errors(409, 422, 503))
async def add_vector(store: StorePath, body: VectorAddRequest, vectors: VectorsDep) -> VectorAddResponse:
    """Add or overwrite one vector by id; the first vector creates the store and fixes its dimension."""
    return await vectors.add(store, body)


@router.post("/{store}/search", operation_id="search_vectors", responses=_errors(409, 422, 503))
async def search_vectors(store: StorePath, body: VectorSearchRequest, vectors: VectorsDep) -> VectorSearchResponse:
    """The k nearest vectors by the store's metric; empty when the store does not exist."""
    return await vectors.search(store, body)


@router.delete("/{store}/vectors", operation_id="delete_vector", responses=_errors(422, 503))
async def delete_vector(
    store: StorePath,
    vectors: VectorsDep,
    id: Annotated[str, Query(min_length=1, max_length=MAX_VECTOR_ID, description="Vector id")],
    namespace: NamespaceQuery = None,
) -> VectorDeleteResponse:
    """Delete one vector by id; deleted=false when it is not there."""
    return await vectors.delete(store, id, namespace)


@router.get("/{store}", operation_id="get_vector_store", responses=_errors(422, 503))
async def get_vector_store(
    store: StorePath,
    vectors: VectorsDep,
    namespace: Annotated[
        str | None, Query(pattern=NAMESPACE_PATTERN, description="Count one namespace; omitted = the whole store")
    ] = None,
) -> VectorStoreInfo:
    """Vector count, dimension and metric of a store (count 0 when it does not exist)."""
    return await vectors.info(store, namespace)
