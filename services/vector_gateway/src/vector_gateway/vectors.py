"""Raw vector stores: caller-supplied embeddings stored and searched by id. Knows nothing of HTTP.

Store ``name`` lives in the Milvus collection names.vector_store(name), ``_vs_<name>`` for a plain name:
the leading underscore keeps it out of the document collections (list_collections, search, list_libraries).
Its dimension is fixed by its first vector and its metric is recorded on the collection (a property and the
index), so a store keeps both across restarts and configuration changes. A vector's primary key is "<namespace>/<id>"
(namespaces never contain '/'): the same id in two namespaces is two vectors.
"""

from __future__ import annotations

import functools
import math
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
from .filters import FilterError, combine, field_condition, quote
from .locks import KeyedLocks
from .store import MilvusStore

T = TypeVar("T")
METRIC_PROPERTY = "vector_store_metric"
MILVUS_METRICS: dict[str, str] = {"cosine": "COSINE", "dot": "IP", "euclidean": "L2"}
OUTPUT_FIELDS = ["id", "namespace", "metadata"]
KEY_BYTES = 2304  # namespace (128) + '/' + id (512 characters, up to 4 bytes each)


@dataclass(frozen=True)
class StoreShape:
    dimension: int
    metric: VectorMetric


def collection_name(store: str) -> str:
    return names.vector_store(store)


def vector_key(namespace: str | None, vector_id: str) -> str:
    return f"{namespace or ''}/{vector_id}"


def _schema(client: Any, dimension: int) -> Any:
    from pymilvus import DataType

    schema = client.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field("pk", DataType.VARCHAR, max_length=KEY_BYTES, is_primary=True)
    schema.add_field("id", DataType.VARCHAR, max_length=KEY_BYTES)
    schema.add_field("namespace", DataType.VARCHAR, max_length=512)
    schema.add_field("metadata", DataType.JSON)
    schema.add_field("vector", DataType.FLOAT_VECTOR, dim=dimension)
    return schema


def _scope(namespace: str | None, metadata_filter: dict[str, Any] | None = None) -> str:
    """Milvus filter for a namespace (None = all) and metadata equalities, every value escaped."""
    parts = [f"namespace == {quote(namespace, what='namespace')}"] if namespace is not None else []
    try:
        parts += [field_condition(f"metadata.{key}", value) for key, value in (metadata_filter or {}).items()]
    except FilterError as exc:
        raise errors.invalid(str(exc), "Filter values must be strings, numbers or booleans.") from exc
    return combine(*parts)


class VectorStores:
    """Blocking Milvus work runs in worker threads; writes to one vector are serialized."""

    def __init__(self, store: MilvusStore) -> None:
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
        if not self.store.has_collection(name):
            return None
        info = self.store.client.describe_collection(name)
        dimension = next(int(f["params"]["dim"]) for f in info["fields"] if f["name"] == "vector")
        metric = (info.get("properties") or {}).get(METRIC_PROPERTY, "cosine")
        self._shapes[name] = StoreShape(dimension, cast(VectorMetric, metric))
        return self._shapes[name]

    def _create(self, store: str, dimension: int, metric: VectorMetric) -> StoreShape:
        name = collection_name(store)
        with self._create_lock:
            shape = self._shape(name)
            if shape is not None:
                return shape
            client = self.store.client
            index = client.prepare_index_params()
            # FLAT: exact scores, so a search ranks every vector in scope (the stores are caller-sized).
            index.add_index("vector", index_type="FLAT", metric_type=MILVUS_METRICS[metric])
            client.create_collection(
                name,
                schema=_schema(client, dimension),
                index_params=index,
                properties={METRIC_PROPERTY: metric, names.USER_NAME_PROPERTY: store},
                consistency_level="Strong",
            )
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
        return bool(self.store.query(name, f"pk == {quote(key, what='id')}", ["pk"], limit=1))

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
        self.store.client.upsert(name, [row])
        self.store.flush(name)
        return VectorAddResponse(
            status="updated" if existed else "added", id=request.id, store=store, namespace=request.namespace,
            dimension=shape.dimension, metric=shape.metric,
        )  # fmt: skip

    def _search(self, store: str, request: VectorSearchRequest) -> VectorSearchResponse:
        name = collection_name(store)
        expr = _scope(request.namespace, request.metadata_filter)
        shape = self._shape(name)
        if shape is None:
            return VectorSearchResponse(results=[], total_searched=0, metric=None)
        self._check(store, shape, request.query, "query embedding")
        self.store.ensure_loaded(name)  # a reopened Lite database serves nothing until loaded
        found = self.store.client.search(
            name,
            data=[request.query],
            anns_field="vector",
            search_params={"metric_type": MILVUS_METRICS[shape.metric]},
            limit=request.k,
            filter=expr,
            output_fields=OUTPUT_FIELDS,
        )
        hits = [self._hit(hit, shape.metric) for hit in (found[0] if found else [])]
        return VectorSearchResponse(results=hits, total_searched=self.store.count(name, expr), metric=shape.metric)

    @staticmethod
    def _hit(hit: dict[str, Any], metric: VectorMetric) -> VectorHit:
        entity = hit["entity"]
        score = float(hit["distance"])
        if metric == "euclidean":  # Milvus' L2 is the squared distance
            score = math.sqrt(max(score, 0.0))
        return VectorHit(id=entity["id"], score=score, metadata=entity.get("metadata") or {},
                         namespace=entity.get("namespace") or None)  # fmt: skip

    def _delete(self, store: str, vector_id: str, namespace: str | None) -> VectorDeleteResponse:
        """Delete the id in its namespace, or (no namespace given) wherever a search without one finds it."""
        name = collection_name(store)
        try:
            expr = (
                f"id == {quote(vector_id, what='id')}"
                if namespace is None
                else f"pk == {quote(vector_key(namespace, vector_id), what='id')}"
            )
        except FilterError as exc:
            raise errors.invalid(str(exc), "Give the id exactly as it was added.") from exc
        if self._shape(name) is None or not self.store.query(name, expr, ["pk"], limit=1):
            return VectorDeleteResponse(deleted=False, id=vector_id)
        self.store.delete(name, expr)
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
