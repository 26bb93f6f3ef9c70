"""LanceDB access: the gateway's DocumentIndex (index.py) on Lance tables in one folder. Blocking.

Why a second engine: Milvus Lite 3.x is pure Python and holds every segment in memory; its search cost
and memory grow with the rows (docs/scale.md). Lance keeps columnar files on disk, memory-mapped, with an
inverted index for BM25 and an IVF index for the vectors, both persisted: a table opens in milliseconds
and a search reads what it needs (docs/scale.md, "A second engine").

One process owns a folder (the embedded server's FolderLink says which). Every read sees the last write
(``read_consistency_interval=0``). A table's writes are serialised in this process (Lance commits
optimistically; concurrent merge-inserts of one table may conflict). Indexes, compaction and old versions
are upkeep.py's, started by ``flush`` when due (``maintain``).
"""

from __future__ import annotations

import functools
import logging
import threading
from datetime import timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
from servicekit import DependencyUnavailable, idle_trimmer

from .. import lexical, names
from ..index import MAX_TOPK
from ..lexical import DEFAULT_ANALYSIS, Analysis
from ..records import CHUNK_OUTPUT_FIELDS, LEASES, REGISTRY, REGISTRY_FIELDS
from ..where import In, Where
from . import lean_import, schema
from .expressions import predicate
from .upkeep import FTS_COLUMN, KEEP_VERSIONS, Upkeep, bm25_index, key_indexes

log = logging.getLogger("vector_gateway.lance")

# IVF partitions read by a dense search (upkeep.py makes rows / 1,000 of them, int8 vectors), and how many times the
# asked rows are re-ranked with their full vectors: at 1M real-structured chunks, recall@10 0.97 against an exact scan
# (96 probes, x2), 0.96 at 80 probes, 0.95 at 64; without the re-rank 0.92 (bench.experiments.lance_levers,
# docs/scale.md).
PROBED_PARTITIONS = 96
REFINE_FACTOR = 2
INDEX_CACHE_MB = 1024  # index pages kept in memory (VECTOR_GATEWAY_LANCE_CACHE_MB)
# Lance's caches after writes, once the process is quiet: above this size they are dropped with the connection
# (release_caches). Each commit and optimisation adds its version's manifest, fragments and rebuilt BM25 index to
# them, and nothing evicts the superseded ones until the caches are full (1,280 MB): 5,183 SciFact files synced left
# ~250 MB there (docs/memory.md, "Lance's caches after an ingest").
RELEASE_ABOVE_MB = 32
ENGINE_METRICS = {"cosine": "cosine", "dot": "dot", "euclidean": "l2"}


def table_name(name: str) -> str:
    return name if name.startswith("_") else names.collection(name)


class LanceStore:
    engine = "lance"

    def __init__(
        self, uri: str, *, analysis: Analysis = DEFAULT_ANALYSIS, maintain: bool = True, cache_mb: int = INDEX_CACHE_MB
    ) -> None:
        self.uri = uri
        self.cache_mb = cache_mb
        self.analysis = analysis
        self.maintain = maintain
        self._db: Any = None
        self._session: Any = None  # the connection's lancedb.Session: its caches' size
        self._wrote = False  # a commit since the connection was made (release_caches)
        self._lock = threading.Lock()
        self._tables: dict[str, Any] = {}
        self._looked_at: set[str] = set()  # tables whose upkeep was checked when first opened
        self._write_locks: dict[str, threading.Lock] = {}
        self._closed = threading.Event()  # set by close(): background upkeep stops touching the folder
        self._generation = 0  # bumped by every drop: a table opened before a drop is not cached after it
        self.upkeep = Upkeep(self._table, self._writing, self._closed, maintain=maintain, changed=self._changed)
        self._shapes: dict[str, tuple[int, str]] = {}
        self._analyses: dict[str, Analysis] = {}
        idle_trimmer().on_quiet(self.release_caches)

    # -- connection -----------------------------------------------------------------------
    @property
    def db(self) -> Any:
        if self._db is None:
            with self._lock:
                if self._db is None:
                    self._db = self._connect()
        return self._db

    def _connect(self) -> Any:
        lancedb = lean_import.lancedb()  # without its REST client's initialisation and without pandas

        try:
            Path(self.uri).expanduser().mkdir(parents=True, exist_ok=True)
            # Index pages read from disk are cached up to cache_mb (then evicted): memory stays bounded at any size.
            session = lancedb.Session(
                index_cache_size_bytes=self.cache_mb << 20, metadata_cache_size_bytes=max(64, self.cache_mb // 4) << 20
            )
            db = lancedb.connect(Path(self.uri).expanduser(), read_consistency_interval=timedelta(0), session=session)
            self._session, self._wrote = session, False
            existing = set(self._names(db))
            for name, make in ((REGISTRY, schema.registry_schema), (LEASES, schema.lease_schema)):
                if name not in existing:
                    key_indexes(db.create_table(name, schema=make(), exist_ok=True), ["key"])
        except OSError as exc:
            raise DependencyUnavailable(
                f"Cannot open the Lance index at {self.uri}: {exc.strerror or exc}",
                suggestion="Check that the folder exists and this process may write it (VECTOR_GATEWAY_LANCE_URI).",
            ) from exc
        return db

    @staticmethod
    def _names(db: Any) -> list[str]:
        found: list[str] = []
        token = None
        while True:
            page = db.list_tables(page_token=token, limit=1000)
            found.extend(page.tables)
            token = page.page_token
            if not token:
                return found

    def _table(self, name: str) -> Any:
        table_id = table_name(name)
        table = self._tables.get(table_id)
        if table is None:
            generation = self._generation
            table = self.db.open_table(table_id)
            with self._lock:
                if generation != self._generation:  # dropped meanwhile: answer this call, cache nothing
                    return table
                table = self._tables.setdefault(table_id, table)
            # A table left fragmented or half-indexed by an earlier process is tidied now (flush never raises);
            # opened again after release_caches, it was checked after each write of this process.
            if self.maintain and not self._closed.is_set() and table_id not in self._looked_at:
                self._looked_at.add(table_id)
                threading.Thread(target=self.flush, args=(name,), name=f"lance-check-{table_id}", daemon=True).start()
        return table

    @property
    def cache_bytes(self) -> int:
        """What Lance's caches hold now (index pages, manifests, fragment metadata); 0 before a connection."""
        session = self._session
        return int(session.size_bytes) if session is not None else 0

    def _changed(self, name: str) -> None:
        """A commit (a write, the upkeep's optimisation or clean-up: Upkeep tells) added a version to Lance's caches."""
        self._wrote = True

    def release_caches(self) -> bool:
        """Drop the connection, and with it Lance's caches, when commits since it was made left them above
        RELEASE_ABOVE_MB; the next call connects again (milliseconds) and reads the index pages it needs anew. Run by
        the process's idle trimmer once it is quiet (servicekit.memory.IdleTrimmer.on_quiet). True when dropped.

        The caches are keyed by version and index file: after an ingest they hold every superseded manifest and
        BM25 index it made, up to their bound, and no call asks for those again. A library only read keeps its
        warm caches. A call running meanwhile keeps the table it holds (and the old connection until it ends)."""
        with self._lock:
            session = self._session
            if self._db is None or not self._wrote or session is None:
                return False
            if session.size_bytes < RELEASE_ABOVE_MB << 20:
                return False
            self._generation += 1  # a table being opened on the old connection is not cached
            self._tables.clear()
            self._db = self._session = None
            self._wrote = False
        log.debug("released Lance's caches (%.0f MiB) after writes", session.size_bytes / 2**20)
        return True

    def _writing(self, name: str) -> threading.Lock:
        with self._lock:
            return self._write_locks.setdefault(table_name(name), threading.Lock())

    def ping(self) -> None:
        self._table(REGISTRY).count_rows()

    def close(self) -> None:
        self._closed.set()
        self.upkeep.stop()
        with self._lock:
            self._tables.clear()
            self._db = self._session = None

    # -- collections ------------------------------------------------------------------------
    def list_collections(self) -> list[str]:
        found = (names.user_collection(n, functools.partial(self._properties, n)) for n in self._names(self.db))
        return sorted(name for name in found if name is not None)

    def _properties(self, table_id: str) -> dict[str, str]:
        return schema.properties(self.db.open_table(table_id).schema)

    def has_collection(self, name: str) -> bool:
        try:
            self._table(name)
        except (ValueError, FileNotFoundError):  # lancedb: "Table 'x' was not found"
            return False
        return True

    def create_collection(
        self, name: str, dimension: int, model_name: str, *, analysis: Analysis | None = None
    ) -> bool:
        """``analysis``: the BM25 analysis of a collection copied from another index (default: this store's)."""
        analysis = analysis or self.analysis
        properties = {
            schema.MODEL: model_name,
            lexical.PROPERTY: analysis,
            names.USER_NAME_PROPERTY: name,
        }
        with self._writing(name):
            if self.has_collection(name):
                return False
            table = self.db.create_table(table_name(name), schema=schema.chunk_schema(dimension, properties))
            table.create_index(FTS_COLUMN, config=bm25_index(analysis))
            key_indexes(table, ["chunk_id", "doc_id"])  # fetches, a document's reads and deletes by key
            self._tables[table_name(name)] = table
        self._shapes[name] = (dimension, model_name)
        self._analyses[name] = analysis
        return True

    def describe(self, name: str) -> tuple[int, str]:
        if name not in self._shapes:
            self._describe(name)
        return self._shapes[name]

    def analysis_of(self, name: str) -> Analysis:
        if name not in self._analyses:
            self._describe(name)
        return self._analyses[name]

    def _describe(self, name: str) -> None:
        table_schema = self._table(name).schema
        properties = schema.properties(table_schema)
        self._shapes[name] = (schema.dimension(table_schema), properties.get(schema.MODEL, "unknown"))
        self._analyses[name] = lexical.known_analysis(properties.get(lexical.PROPERTY))

    def drop_collection(self, name: str) -> None:
        table_id = table_name(name)
        with self._writing(name):
            with self._lock:
                self._generation += 1
                self._tables.pop(table_id, None)
            if table_id in self._names(self.db):
                self.db.drop_table(table_id)
        self._shapes.pop(name, None)
        self._analyses.pop(name, None)

    def ensure_loaded(self, name: str) -> None:
        self._table(name)  # nothing to load: a table is read from its files

    # -- rows -----------------------------------------------------------------------------
    def count(self, name: str, where: Where | None = None) -> int:
        return int(self._table(name).count_rows(predicate(where)))

    def insert(self, name: str, rows: list[dict[str, Any]]) -> None:
        if rows:
            table = self._table(name)
            data = schema.to_table(rows, table.schema)
            with self._writing(name):
                table.add(data)
            self.upkeep.committed(name)

    def upsert(self, name: str, rows: list[dict[str, Any]]) -> None:
        if rows:
            table = self._table(name)
            key = self._key(name, table.schema)
            data = schema.to_table(_last_per_key(rows, key), table.schema)
            with self._writing(name):
                table.merge_insert(key).when_matched_update_all().when_not_matched_insert_all().execute(data)
            self.upkeep.committed(name)

    @staticmethod
    def _key(name: str, table_schema: pa.Schema) -> str:
        return next(k for k in ("chunk_id", "key", "pk") if k in table_schema.names)

    def delete(self, name: str, where: Where) -> None:
        table = self._table(name)
        with self._writing(name):
            table.delete(predicate(where) or "true")
        self.upkeep.committed(name)

    def _rows(self, name: str, where: Where | None, fields: list[str], limit: int | None) -> list[dict[str, Any]]:
        table = self._table(name)
        columns = table.schema.names
        wanted = columns if "*" in fields else list(dict.fromkeys(f for f in fields if f in columns))
        wanted = wanted or [self._key(name, table.schema)]
        query = table.search().select(wanted).limit(limit)
        text = predicate(where)
        if text is not None:
            query = query.where(text)
        return schema.from_table(query.to_arrow())

    def query(
        self, name: str, where: Where | None, fields: list[str], limit: int | None = None
    ) -> list[dict[str, Any]]:
        """Rows matching ``where``; every one of them when ``limit`` is None."""
        if limit is not None and limit <= 0:
            return []  # Lance reads a limit of 0 as "no limit"
        return self._rows(name, where, fields, None if limit is None else min(limit, MAX_TOPK))

    def query_few(self, name: str, where: Where | None, fields: list[str]) -> list[dict[str, Any]]:
        return self._rows(name, where, fields, None)

    def fetch(self, name: str, chunk_ids: list[str]) -> dict[str, dict[str, Any]]:
        if not chunk_ids:
            return {}
        rows = self._rows(name, In("chunk_id", tuple(chunk_ids)), CHUNK_OUTPUT_FIELDS, len(chunk_ids))
        return {row["chunk_id"]: row for row in rows}

    # -- searches -------------------------------------------------------------------------
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
        """(raw score, entity) pairs of one ranking, best first: cosine (semantic) or BM25 (keyword)."""
        if mode not in ("semantic", "keyword"):
            raise ValueError(f"store.search ranks by one field, semantic or keyword, not {mode!r} (see search.py)")
        if mode == "semantic" and vector is None:
            raise ValueError("store.search: a semantic ranking needs the query vector")
        table = self._table(name)
        wanted = list(dict.fromkeys(["chunk_id", *(fields or CHUNK_OUTPUT_FIELDS)]))
        if mode == "semantic":
            query = table.search(vector, vector_column_name="vector").distance_type("cosine")
            # PROBED_PARTITIONS partitions; with a filter, more while too few hits pass it (a narrow filter's
            # chunks sit in few partitions). Unbounded probing for every search doubles a 1M dense ranking.
            query = query.nprobes(PROBED_PARTITIONS).refine_factor(REFINE_FACTOR)
            if where is not None:
                query = query.maximum_nprobes(0)
            score_column, to_score = "_distance", lambda d: 1.0 - d
        else:
            if not text.strip():
                return []
            query = table.search(text, query_type="fts", fts_columns=FTS_COLUMN)
            score_column, to_score = "_score", float
        clause = predicate(where)
        if clause is not None:
            query = query.where(clause, prefilter=True)
        # The score is selected by name: left implicit, Lance logs a deprecation warning on every search.
        found = query.select([*wanted, score_column]).limit(min(limit, MAX_TOPK)).to_arrow()
        scores = found.column(score_column).to_pylist()
        rows = schema.from_table(found.select(wanted))
        return [(to_score(float(s)), row) for s, row in zip(scores, rows, strict=True)]

    # -- registry -------------------------------------------------------------------------
    def registry_get(self, keys: list[str], fields: list[str] | None = None) -> dict[str, dict[str, Any]]:
        if not keys:
            return {}
        rows = self._rows(REGISTRY, In("key", tuple(keys)), ["key", *(fields or REGISTRY_FIELDS)], len(keys))
        return {row["key"]: row for row in rows}

    def registry_upsert(self, rows: list[dict[str, Any]]) -> None:
        self.upsert(REGISTRY, rows)

    def registry_delete(self, where: Where) -> None:
        self.delete(REGISTRY, where)

    def registry_query(self, where: Where, fields: list[str] | None = None) -> list[dict[str, Any]]:
        return self._rows(REGISTRY, where, fields or REGISTRY_FIELDS, None)

    def registry_count(self, where: Where) -> int:
        return self.count(REGISTRY, where)

    # -- write leases -----------------------------------------------------------------------
    def leases_open(self, rows: list[dict[str, Any]]) -> None:
        self.upsert(LEASES, rows)

    def leases_end(self, keys: list[str]) -> None:
        if keys:
            self.delete(LEASES, In("key", tuple(keys)))

    def leases_query(self, where: Where) -> list[dict[str, Any]]:
        return self._rows(LEASES, where, ["key", "doc_id", "version", "writer", "expires_ms"], None)

    def leases_delete(self, where: Where) -> None:
        self.delete(LEASES, where)

    # -- raw vector stores ------------------------------------------------------------------
    def vector_store_shape(self, name: str) -> tuple[int, str] | None:
        if not self.has_collection(name):
            return None
        table_schema = self._table(name).schema
        return schema.dimension(table_schema), schema.properties(table_schema).get(schema.METRIC, "cosine")

    def create_vector_store(self, name: str, user_name: str, dimension: int, metric: str) -> None:
        properties = {schema.METRIC: metric, names.USER_NAME_PROPERTY: user_name}
        with self._writing(name):
            table = self.db.create_table(name, schema=schema.vector_store_schema(dimension, properties), exist_ok=True)
            key_indexes(table, ["pk"])

    def vector_search(
        self, name: str, vector: list[float], *, metric: str, limit: int, where: Where | None, fields: list[str]
    ) -> list[tuple[float, dict[str, Any]]]:
        """(score, entity) pairs, best first: cosine similarity, dot product or euclidean distance (exact)."""
        table = self._table(name)
        query = table.search(vector, vector_column_name="vector").distance_type(ENGINE_METRICS[metric])
        clause = predicate(where)
        if clause is not None:
            query = query.where(clause, prefilter=True)
        found = query.bypass_vector_index().select([*fields, "_distance"]).limit(min(limit, MAX_TOPK)).to_arrow()
        distances = found.column("_distance").to_pylist()
        rows = schema.from_table(found.select(fields))
        return [(_vector_score(float(d), metric), row) for d, row in zip(distances, rows, strict=True)]

    # -- upkeep (upkeep.py) ------------------------------------------------------------------
    def flush(self, *names: str) -> None:
        """Writes are durable when they answer; this starts a table's upkeep when it is due (``maintain``)."""
        for name in names:
            self.upkeep.check(name)

    def optimize(self, name: str, *, keep: timedelta = KEEP_VERSIONS) -> None:
        """Index, compact and clean the table now (a builder or a migration, which then need no background)."""
        self.upkeep.optimize(name, keep=keep)


def _last_per_key(rows: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    """One row per key, the last one (Milvus upsert semantics; a merge-insert refuses duplicate keys)."""
    return list({row[key]: row for row in rows}.values())


def _vector_score(distance: float, metric: str) -> float:
    """The metric's own score: Lance's cosine and dot are distances (1 - similarity), its l2 is squared."""
    if metric == "euclidean":
        return max(distance, 0.0) ** 0.5
    return 1.0 - distance
