"""Raw vector stores: caller-supplied embeddings stored and searched by id. Knows nothing of HTTP.

Store ``name`` lives in the collection names.vector_store(name), ``_vs_<name>`` for a plain name:
the leading underscore keeps it out of the document collections (list_collections, search, list_libraries).
Its dimension is fixed by its first vector and its metric is recorded on the collection (a property and the
index), so a store keeps both across restarts and configuration changes. A vector's primary key is "<namespace>/<id>"
(namespaces never contain '/'): the same id in two namespaces is two vectors.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import anyio
from ingestion_contracts.vectors import (
    VectorAddRequest,
    VectorAddResponse,
    VectorDeleteResponse,
    VectorHit,
    VectorMetric,
    VectorSearchRequest,
    VectorSearchResponse,
    VectorStoreInfo,
)

from . import errors, names
from .filters import FilterError, check_text, field_condition
from .index import DocumentIndex
from .locks import KeyedLocks
from .where import Eq, Where, all_of

T = TypeVar("T")
OUTPUT_FIELDS = ["id", "namespace", "metadata"]


@dataclass(frozen=True)
class StoreShape:
    dimension: int
    metric: VectorMetric


def collection_name(store: str) -> str:
    return names.vector_store(store)


def vector_key(namespace: str | None, vector_id: str) -> str:
    return f"{namespace or ''}/{vector_id}"


def _scope(namespace: str | None, metadata_filter: dict[str, Any] | None = None) -> Where | None:
    """Filter for a namespace (None = all) and metadata equalities, every value checked."""
    parts: list[Where] = [Eq("namespace", check_text(namespace, what="namespace"))] if namespace is not None else []
    try:
        parts += [field_condition(f"metadata.{key}", value) for key, value in (metadata_filter or {}).items()]
    except FilterError as exc:
        raise errors.invalid(str(exc), "Filter values must be strings, numbers or booleans.") from exc
    return all_of(*parts)


class VectorStores:
    """Blocking store work runs in worker threads; writes to one vector are serialized."""

    def __init__(self, store: DocumentIndex) -> None:
        self.store = store
        self._shapes: dict[str, StoreShape] = {}
        self._create_lock = threading.Lock()
        self._locks = KeyedLocks()

    @staticmethod
    async def _run(fn: Callable[..., T], *args: Any) -> T:
        return await anyio.to_thread.run_sync(functools.partial(fn, *args))

    # -- collections ---------------------------------------------------------------------------
    def _shape(self, name: str) -> StoreShape | None:
        """The store's (dimension, metric), or None when it does not exist yet."""
        if name in self._shapes:
            return self._shapes[name]
        found = self.store.vector_store_shape(name)
        if found is None:
            return None
        self._shapes[name] = StoreShape(found[0], cast(VectorMetric, found[1]))
        return self._shapes[name]

    def _create(self, store: str, dimension: int, metric: VectorMetric) -> StoreShape:
        name = collection_name(store)
        with self._create_lock:
            shape = self._shape(name)
            if shape is not None:
                return shape
            self.store.create_vector_store(name, store, dimension, metric)
            self._shapes[name] = StoreShape(dimension, metric)
            return self._shapes[name]

    @staticmethod
    def _check(store: str, shape: StoreShape, vector: list[float], what: str) -> None:
        if len(vector) != shape.dimension:
            raise errors.dimension_mismatch(store, shape.dimension, len(vector), what)
        if shape.metric == "cosine" and not any(vector):
            raise errors.invalid(
                f"The {what} is all zeros: cosine similarity is undefined for a vector without direction.",
                "Send a non-zero vector.",
            )

    def _exists(self, name: str, key: str) -> bool:
        return bool(self.store.query(name, Eq("pk", check_text(key, what="id")), ["pk"], limit=1))

    # -- operations (blocking) ---------------------------------------------------------------------
    def _add(self, store: str, request: VectorAddRequest) -> VectorAddResponse:
        name = collection_name(store)
        shape = self._shape(name)
        # Checked before a new store exists: a refused first vector must not leave an empty store behind.
        self._check(store, shape or StoreShape(len(request.embedding), request.metric), request.embedding, "embedding")
        shape = shape or self._create(store, len(request.embedding), request.metric)
        key = vector_key(request.namespace, request.id)
        existed = self._exists(name, key)
        row = {
            "pk": key, "id": request.id, "namespace": request.namespace or "", "metadata": request.metadata,
            "vector": request.embedding,
        }  # fmt: skip
        self.store.upsert(name, [row])
        self.store.flush(name)
        return VectorAddResponse(
            status="updated" if existed else "added", id=request.id, store=store, namespace=request.namespace,
            dimension=shape.dimension, metric=shape.metric,
        )  # fmt: skip

    def _search(self, store: str, request: VectorSearchRequest) -> VectorSearchResponse:
        name = collection_name(store)
        where = _scope(request.namespace, request.metadata_filter)
        shape = self._shape(name)
        if shape is None:
            return VectorSearchResponse(results=[], total_searched=0, metric=None)
        self._check(store, shape, request.query, "query embedding")
        found = self.store.vector_search(
            name, request.query, metric=shape.metric, limit=request.k, where=where, fields=OUTPUT_FIELDS
        )
        hits = [self._hit(score, entity) for score, entity in found]
        return VectorSearchResponse(results=hits, total_searched=self.store.count(name, where), metric=shape.metric)

    @staticmethod
    def _hit(score: float, entity: dict[str, Any]) -> VectorHit:
        return VectorHit(id=entity["id"], score=score, metadata=entity.get("metadata") or {},
                         namespace=entity.get("namespace") or None)  # fmt: skip

    def _delete(self, store: str, vector_id: str, namespace: str | None) -> VectorDeleteResponse:
        """Delete the id in its namespace, or (no namespace given) wherever a search without one finds it."""
        name = collection_name(store)
        try:
            where = (
                Eq("id", check_text(vector_id, what="id"))
                if namespace is None
                else Eq("pk", check_text(vector_key(namespace, vector_id), what="id"))
            )
        except FilterError as exc:
            raise errors.invalid(str(exc), "Give the id exactly as it was added.") from exc
        if self._shape(name) is None or not self.store.query(name, where, ["pk"], limit=1):
            return VectorDeleteResponse(deleted=False, id=vector_id)
        self.store.delete(name, where)
        self.store.flush(name)
        return VectorDeleteResponse(deleted=True, id=vector_id)

    def _info(self, store: str, namespace: str | None) -> VectorStoreInfo:
        name = collection_name(store)
        shape = self._shape(name)
        count = self.store.count(name, _scope(namespace)) if shape else 0
        return VectorStoreInfo(
            store=store, namespace=namespace, count=count, dimension=shape.dimension if shape else None,
            metric=shape.metric if shape else None,
        )  # fmt: skip

    # -- the async API -------------------------------------------------------------------------------
    async def add(self, store: str, request: VectorAddRequest) -> VectorAddResponse:
        async with self._locks.hold([f"{store}:{vector_key(request.namespace, request.id)}"]):
            return await self._run(self._add, store, request)

    async def search(self, store: str, request: VectorSearchRequest) -> VectorSearchResponse:
        return await self._run(self._search, store, request)

    async def delete(self, store: str, vector_id: str, namespace: str | None) -> VectorDeleteResponse:
        async with self._locks.hold([f"{store}:{vector_key(namespace, vector_id)}"]):
            return await self._run(self._delete, store, vector_id, namespace)

    async def info(self, store: str, namespace: str | None) -> VectorStoreInfo:
        return await self._run(self._info, store, namespace)
