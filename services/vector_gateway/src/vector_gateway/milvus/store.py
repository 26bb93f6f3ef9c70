"""Milvus access: collections, rows, searches and flushes. Blocking: call it off the event loop.

The gateway's DocumentIndex (index.py) on Milvus: filters arrive typed (where.py) and become Milvus
expressions here only (expressions.py).

The same code talks to Milvus Lite (a .db path, in-process) and to a Milvus server (http://...).
Callers name a document collection as its user does; the store maps that to its Milvus name (names.py).
Names that start with '_' are the gateway's own (registry, leases, vector stores) and pass as they are:
user names never start with '_' (the contracts refuse it).
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Iterator
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from servicekit import DependencyUnavailable

from .. import lexical, names
from ..index import MAX_TOPK
from ..lexical import DEFAULT_ANALYSIS, Analysis
from ..records import CHUNK_OUTPUT_FIELDS, LEASES, REGISTRY, REGISTRY_FIELDS
from ..where import In, Where
from . import lite_bm25, schema, vector_stores
from .expressions import expression
from .lite_bm25 import LiteBm25
from .lite_guard import LiteClient
from .reload import ReloadingClient

log = logging.getLogger("vector_gateway.store")

INSERT_SLICE_BYTES = 16 * 1024 * 1024  # stay well under the 64 MiB gRPC message limit
ITERATOR_BATCH = 4096


def bm25_search() -> dict[str, Any]:
    """A BM25 search's parameters, new each call (pymilvus writes into the dict it is given)."""
    return {"metric_type": "BM25", "params": {}}


def milvus_name(name: str) -> str:
    return name if name.startswith("_") else names.collection(name)


def _row_bytes(row: dict[str, Any]) -> int:
    size = 4 * len(row.get("vector", ()))
    return size + sum(len(v) * 2 for v in row.values() if isinstance(v, str)) + 512


class MilvusStore:
    engine = "milvus"

    def __init__(
        self,
        uri: str,
        *,
        token: str = "",
        dense_index: str = "HNSW",
        flush: bool = True,
        stop_words: str = "english",
        analysis: Analysis = DEFAULT_ANALYSIS,
    ) -> None:
        self.uri = uri
        self.stop_words = stop_words
        self.analysis = analysis
        self.dense_index = dense_index
        self.flush_after_write = flush
        self._token = token
        self._client: Any = None
        self._lock = threading.Lock()
        self._loaded: set[str] = set()
        self._dimensions: dict[str, tuple[int, str]] = {}
        self._analyses: dict[str, Analysis] = {}
        # Lite scores BM25 per segment: its keyword rankings are scored again with the collection's statistics.
        self.lite_bm25: LiteBm25 | None = None

    # -- connection ---------------------------------------------------------------------
    @property
    def client(self) -> Any:
        if self._client is None:
            with self._lock:
                if self._client is None:
                    self._client = self._connect()
        return self._client

    def _connect(self) -> Any:
        from pymilvus import MilvusClient
        from servicekit.logging import adopt_library_logs

        adopt_library_logs()  # pymilvus installs plain-text handlers at import: its errors become JSON lines

        is_lite = "://" not in self.uri
        if is_lite:
            Path(self.uri).expanduser().parent.mkdir(parents=True, exist_ok=True)
            # Lite has no server clock for iterators; pymilvus warns on every paged query.
            logging.getLogger("pymilvus.client.iterator.query_iterator").setLevel(logging.ERROR)
        try:
            client = MilvusClient(self.uri, token=self._token) if self._token else MilvusClient(self.uri)
        except Exception as exc:  # any connect failure is a 503 the caller can retry
            hint = (
                "Another process may hold this Milvus Lite database (one process per .db file): stop it, or use a "
                "Milvus server."
                if is_lite
                else "Check that Milvus runs at this address and that VECTOR_GATEWAY_MILVUS_TOKEN is right."
            )
            raise DependencyUnavailable(
                f"Cannot open Milvus at {self.uri}: {type(exc).__name__}: {exc}", suggestion=hint
            ) from exc
        if is_lite:  # Lite loses rows from reads during a flush unless calls are serialised (lite_guard.py)
            client = LiteClient(client, self.uri)
        # A restarted server releases every collection: reads load theirs again (reload.py).
        client = ReloadingClient(client)
        self._ensure_registry(client)
        if is_lite or lite_bm25.is_lite(client):  # in process, or `milvus-lite server`
            self.lite_bm25 = LiteBm25(
                describe=lambda name: client.describe_collection(milvus_name(name)),
                scan=lambda name: self._iterate(name, "", [lite_bm25.SEARCH_TEXT], lite_bm25.SCAN_BATCH),
            )
        return client

    def _ensure_registry(self, client: Any) -> None:
        # The registry is the commit point, the leases say which versions may still be committed: every read
        # of either must see the last write. An index made before leases existed gains the collection here.
        for name, make_schema in ((REGISTRY, schema.registry_schema), (LEASES, schema.lease_schema)):
            if not client.has_collection(name):
                client.create_collection(
                    name,
                    schema=make_schema(client),
                    index_params=schema.registry_index_params(client),
                    consistency_level="Strong",
                )
            client.load_collection(name)
            self._loaded.add(name)

    def ping(self) -> None:
        # A read of the registry, the commit point every search goes through: an answer from the server alone
        # would say "ready" while every search failed (a restarted server releases its collections; this read
        # loads the registry again).
        self.client.query(REGISTRY, filter=expression(None), output_fields=["key"], limit=1)

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None
                self._loaded.clear()

    # -- collections --------------------------------------------------------------------
    def list_collections(self) -> list[str]:
        """The document collections, by their users' names (never the gateway's own collections)."""
        found = (
            names.user_collection(n, functools.partial(self._properties, n)) for n in self.client.list_collections()
        )
        return sorted(name for name in found if name is not None)

    def _properties(self, milvus: str) -> dict[str, str]:
        return dict(self.client.describe_collection(milvus).get("properties") or {})

    def has_collection(self, name: str) -> bool:
        return bool(self.client.has_collection(milvus_name(name)))

    def create_collection(self, name: str, dimension: int, model_name: str) -> bool:
        client = self.client
        try:
            client.create_collection(
                milvus_name(name),
                schema=schema.chunk_schema(client, dimension, self.stop_words),
                index_params=schema.chunk_index_params(client, self.dense_index),
                properties={
                    schema.MODEL_PROPERTY: model_name,
                    lexical.PROPERTY: self.analysis,
                    names.USER_NAME_PROPERTY: name,
                },
                consistency_level="Strong",  # a document is searchable as soon as its upsert answers
            )
        except Exception:
            # Two replicas creating one collection: Milvus refuses the second ("already exists").
            if self.has_collection(name):
                log.info("collection %s was created by another writer meanwhile", name)
                return False
            raise
        self._loaded.add(name)
        self._dimensions[name] = (dimension, model_name)
        self._analyses[name] = self.analysis
        if self.lite_bm25 is not None:
            self.lite_bm25.created(name)
        return True

    def describe(self, name: str) -> tuple[int, str]:
        """(vector dimension, embedding model) the collection was created with."""
        if name not in self._dimensions:
            self._describe(name)
        return self._dimensions[name]

    def analysis_of(self, name: str) -> Analysis:
        """How the collection's BM25 text was analysed ("raw" for collections made before stemming)."""
        if name not in self._analyses:
            self._describe(name)
        return self._analyses[name]

    def _describe(self, name: str) -> None:
        info = self.client.describe_collection(milvus_name(name))
        properties = info.get("properties") or {}
        dim = next(int(f["params"]["dim"]) for f in info["fields"] if f["name"] == "vector")
        self._dimensions[name] = (dim, properties.get(schema.MODEL_PROPERTY, "unknown"))
        self._analyses[name] = lexical.known_analysis(properties.get(lexical.PROPERTY))

    def drop_collection(self, name: str) -> None:
        self.client.drop_collection(milvus_name(name))
        if self.lite_bm25 is not None:
            self.lite_bm25.forget(name)
        self._loaded.discard(name)
        self._dimensions.pop(name, None)
        self._analyses.pop(name, None)

    def ensure_loaded(self, name: str) -> None:
        # A reopened Lite database (or a restarted server) serves nothing until loaded.
        if name not in self._loaded:
            self.client.load_collection(milvus_name(name))
            self._loaded.add(name)

    # -- rows -----------------------------------------------------------------------------
    def count(self, name: str, where: Where | None = None) -> int:
        self.ensure_loaded(name)
        result = self.client.query(milvus_name(name), filter=expression(where), output_fields=["count(*)"])
        return int(result[0]["count(*)"]) if result else 0

    def insert(self, name: str, rows: list[dict[str, Any]]) -> None:
        with self.lite_bm25.inserting(name, rows) if self.lite_bm25 is not None else nullcontext():
            self._insert(milvus_name(name), rows)

    def _insert(self, name: str, rows: list[dict[str, Any]]) -> None:
        batch: list[dict[str, Any]] = []
        size = 0
        for row in rows:
            row_size = _row_bytes(row)
            if batch and size + row_size > INSERT_SLICE_BYTES:
                self.client.insert(name, batch)
                batch, size = [], 0
            batch.append(row)
            size += row_size
        if batch:
            self.client.insert(name, batch)

    def delete(self, name: str, where: Where) -> None:
        expr = expression(where)
        texts = functools.partial(self._deleted_texts, name, expr)
        with self.lite_bm25.deleting(name, texts) if self.lite_bm25 is not None else nullcontext():
            self.client.delete(milvus_name(name), filter=expr)

    def _deleted_texts(self, name: str, expr: str) -> list[str] | None:
        """The BM25 text of the rows a delete is about to remove (None when more than lite_bm25.DELETE_READ)."""
        rows = self.client.query(
            milvus_name(name), filter=expr, output_fields=[lite_bm25.SEARCH_TEXT], limit=lite_bm25.DELETE_READ + 1
        )
        return None if len(rows) > lite_bm25.DELETE_READ else [row.get(lite_bm25.SEARCH_TEXT) or "" for row in rows]

    def query(
        self, name: str, where: Where | None, fields: list[str], limit: int | None = None
    ) -> list[dict[str, Any]]:
        """Rows matching ``where``; every one of them when ``limit`` is None (paged by an iterator)."""
        self.ensure_loaded(name)
        expr = expression(where)
        if limit is not None:
            # A collection Milvus calls released (a reopen, a restart, the sweep loading it meanwhile) is loaded
            # again by the client itself (reload.py).
            return list(
                self.client.query(milvus_name(name), filter=expr, output_fields=fields, limit=min(limit, MAX_TOPK))
            )
        return list(self._iterate(name, expr, fields))

    def query_few(self, name: str, where: Where | None, fields: list[str]) -> list[dict[str, Any]]:
        """Every row matching ``where``, in one call when they fit in one answer (an iterator costs several)."""
        self.ensure_loaded(name)
        expr = expression(where)
        rows = list(self.client.query(milvus_name(name), filter=expr, output_fields=fields, limit=MAX_TOPK))
        return rows if len(rows) < MAX_TOPK else list(self._iterate(name, expr, fields))

    def scan(self, name: str, fields: list[str]) -> Iterator[dict[str, Any]]:
        """Every row of a collection (a user's name or one of the gateway's own), a batch at a time."""
        self.ensure_loaded(name)
        return self._iterate(name, "", fields)

    def milvus_collections(self) -> list[str]:
        """Every collection of the database by its Milvus name: users', the registry, leases, vector stores."""
        return sorted(self.client.list_collections())

    def _iterate(self, name: str, expr: str, fields: list[str], page: int = ITERATOR_BATCH) -> Iterator[dict[str, Any]]:
        iterator = self.client.query_iterator(milvus_name(name), batch_size=page, filter=expr, output_fields=fields)
        try:
            while batch := iterator.next():
                yield from batch
        finally:
            iterator.close()

    def flush(self, *names: str) -> None:
        if self.flush_after_write:
            for name in names:
                self.client.flush(milvus_name(name))

    # -- searches -------------------------------------------------------------------------
    def _dense_request(self, vector: list[float], limit: int, expr: str) -> Any:
        from pymilvus import AnnSearchRequest

        params = {"metric_type": "COSINE", "params": schema.dense_search_params(self.dense_index, limit)}
        return AnnSearchRequest(data=[vector], anns_field="vector", param=params, limit=limit, expr=expr or None)

    @staticmethod
    def _sparse_request(text: str, limit: int, expr: str) -> Any:
        from pymilvus import AnnSearchRequest

        return AnnSearchRequest(data=[text], anns_field="sparse", param=bm25_search(), limit=limit, expr=expr or None)

    def search(
        self,
        name: str,
        *,
        mode: str,
        vector: list[float] | None,
        text: str,
        limit: int,
        where: Where | None,
        fields: list[str] | None = None,
    ) -> list[tuple[float, dict[str, Any]]]:
        """(raw score, entity) pairs of one ranking, best first: cosine (semantic) or BM25 (keyword).

        Each entity carries ``chunk_id`` and ``fields`` (default: everything a hit shows). Hybrid search runs
        both rankings with a few fields and fuses them (search.py), so the fusion is ours to tune and measure."""
        if mode not in ("semantic", "keyword"):
            raise ValueError(f"store.search ranks by one field, semantic or keyword, not {mode!r} (see search.py)")
        self.ensure_loaded(name)
        expr = expression(where)
        if mode == "semantic" and vector is None:
            raise ValueError("store.search: a semantic ranking needs the query vector")
        request = self._dense_request(vector, limit, expr) if mode == "semantic" and vector is not None else None
        if mode == "keyword" and self.lite_bm25 is not None:
            return self._lite_keyword(self.lite_bm25, name, text, limit, expr, fields or CHUNK_OUTPUT_FIELDS)
        request = request or self._sparse_request(text, limit, expr)
        result = self.client.search(
            milvus_name(name),
            data=request.data,
            anns_field=request.anns_field,
            search_params=request.param,
            limit=min(limit, MAX_TOPK),
            filter=expr,
            output_fields=fields or CHUNK_OUTPUT_FIELDS,
        )
        hits = result[0] if result else []
        # Lite returns BM25 distances negated; the order is right, the magnitude is the score.
        sign = (lambda d: abs(float(d))) if mode == "keyword" else float
        return [(sign(h["distance"]), {**h["entity"], "chunk_id": h["chunk_id"]}) for h in hits]

    def _lite_keyword(
        self, statistics: LiteBm25, name: str, text: str, limit: int, expr: str, fields: list[str]
    ) -> list[tuple[float, dict[str, Any]]]:
        """Lite's keyword ranking scored with the collection's statistics (lite_bm25.py). Lite picks its candidates
        by its own per-segment scores, so it is asked for lite_bm25.DEPTH of them at least, and, when that many came
        back, for every chunk that holds one of the query's rare terms (those in at most lite_bm25.RARE chunks): a
        chunk in a small segment of its own scores low in Lite and could be left out."""
        count = functools.partial(self.count, name)
        depth = min(max(limit, lite_bm25.DEPTH), MAX_TOPK)
        wanted = [*fields, lite_bm25.SEARCH_TEXT]
        milvus = milvus_name(name)
        ranked = self.client.search(
            milvus, data=[text], anns_field="sparse", search_params=bm25_search(), limit=depth, filter=expr,
            output_fields=wanted,
        )  # fmt: skip
        found = [
            (abs(float(h["distance"])), {**h["entity"], "chunk_id": h["chunk_id"]})
            for h in (ranked[0] if ranked else [])
        ]
        rare = statistics.rare_terms(name, text, count) if len(found) == depth else []
        if rare:
            lists = self.client.search(
                milvus, data=rare, anns_field="sparse", search_params=bm25_search(), limit=lite_bm25.RARE, filter=expr,
                output_fields=[],
            )  # fmt: skip
            seen = {entity["chunk_id"] for _, entity in found}
            missing = list(dict.fromkeys(h["chunk_id"] for hits in lists for h in hits if h["chunk_id"] not in seen))
            found += [(0.0, row) for row in self._rows(name, missing, wanted).values()]  # scored below
        return statistics.rescore(name, text, found, count)[:limit]

    def fetch(self, name: str, chunk_ids: list[str]) -> dict[str, dict[str, Any]]:
        """Everything a hit shows, for these chunks (those deleted meanwhile are missing)."""
        return self._rows(name, chunk_ids, CHUNK_OUTPUT_FIELDS)

    def _rows(self, name: str, chunk_ids: list[str], fields: list[str]) -> dict[str, dict[str, Any]]:
        if not chunk_ids:
            return {}
        rows = self.client.query(
            milvus_name(name), filter=expression(In("chunk_id", tuple(chunk_ids))), output_fields=fields,
            limit=len(chunk_ids),
        )  # fmt: skip
        return {row["chunk_id"]: row for row in rows}

    # -- registry -------------------------------------------------------------------------
    def registry_get(self, keys: list[str], fields: list[str] | None = None) -> dict[str, dict[str, Any]]:
        if not keys:
            return {}
        rows = self.client.query(
            REGISTRY, filter=expression(In("key", tuple(keys))), output_fields=fields or REGISTRY_FIELDS,
            limit=len(keys),
        )  # fmt: skip
        return {row["key"]: row for row in rows}

    def registry_upsert(self, rows: list[dict[str, Any]]) -> None:
        filled = [{**row, "vector": [0.0] * schema.REGISTRY_DIM} for row in rows]
        self.client.upsert(REGISTRY, filled)

    def registry_delete(self, where: Where) -> None:
        self.client.delete(REGISTRY, filter=expression(where))

    def registry_query(self, where: Where, fields: list[str] | None = None) -> list[dict[str, Any]]:
        return list(self._iterate(REGISTRY, expression(where), fields or REGISTRY_FIELDS))

    def registry_count(self, where: Where) -> int:
        result = self.client.query(REGISTRY, filter=expression(where), output_fields=["count(*)"])
        return int(result[0]["count(*)"]) if result else 0

    # -- write leases (versions.py) ---------------------------------------------------------
    def leases_open(self, rows: list[dict[str, Any]]) -> None:
        self.client.upsert(LEASES, [{**row, "vector": [0.0] * schema.REGISTRY_DIM} for row in rows])

    def leases_end(self, keys: list[str]) -> None:
        if keys:
            self.client.delete(LEASES, filter=expression(In("key", tuple(keys))))

    def leases_query(self, where: Where) -> list[dict[str, Any]]:
        return self.query_few(LEASES, where, ["key", "doc_id", "version", "writer", "expires_ms"])

    def leases_delete(self, where: Where) -> None:
        self.client.delete(LEASES, filter=expression(where))

    # -- raw vector stores (vectors.py) -----------------------------------------------------
    def vector_store_shape(self, name: str) -> tuple[int, str] | None:
        """(dimension, metric) of vector store collection ``name``, or None when it does not exist yet."""
        return vector_stores.shape(self.client, name) if self.has_collection(name) else None

    def create_vector_store(self, name: str, user_name: str, dimension: int, metric: str) -> None:
        vector_stores.create(self.client, name, user_name, dimension, metric)

    def upsert(self, name: str, rows: list[dict[str, Any]]) -> None:
        try:
            self.client.upsert(milvus_name(name), rows)
        finally:
            if self.lite_bm25 is not None:
                self.lite_bm25.changed(name)

    def vector_search(
        self, name: str, vector: list[float], *, metric: str, limit: int, where: Where | None, fields: list[str]
    ) -> list[tuple[float, dict[str, Any]]]:
        """(score, entity) pairs, best first: cosine similarity, dot product or euclidean distance."""
        self.ensure_loaded(name)  # a reopened Lite database serves nothing until loaded
        found = self.client.search(
            milvus_name(name),
            data=[vector],
            anns_field="vector",
            search_params={"metric_type": vector_stores.MILVUS_METRICS[metric]},
            limit=limit,
            filter=expression(where),
            output_fields=fields,
        )
        return [(vector_stores.score(float(h["distance"]), metric), h["entity"]) for h in (found[0] if found else [])]
