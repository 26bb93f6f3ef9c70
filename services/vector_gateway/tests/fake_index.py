"""A DocumentIndex in memory: dense cosine search, a plain BM25, filters evaluated in Python.

Enough of a store for domain tests to run on it as well as on Milvus Lite (test_index.py); it shows what
another adapter must provide (docs/consistency.md, "Store interface"). Not for production: no persistence,
every search scans every row.
"""

from __future__ import annotations

import copy
import math
import re
import threading
from collections import Counter
from typing import Any

from vector_gateway.index import Row
from vector_gateway.lexical import DEFAULT_ANALYSIS, ENGLISH_STOP_WORDS, Analysis
from vector_gateway.records import CHUNK_OUTPUT_FIELDS, LEASES, REGISTRY, REGISTRY_FIELDS
from vector_gateway.where import And, Cmp, Contains, Eq, In, Ne, Not, Or, Where

K1, B = 1.2, 0.75  # BM25 as Milvus sets it
_COMPARE = {"<": float.__lt__, "<=": float.__le__, ">": float.__gt__, ">=": float.__ge__}


def matches(row: Row, where: Where | None) -> bool:
    match where:
        case None:
            return True
        case Eq(field, value):
            return _value(row, field) == value
        case Ne(field, value):
            return _value(row, field) != value
        case In(field, values):
            return _value(row, field) in values
        case Cmp(field, op, value):
            found = _value(row, field)
            return isinstance(found, int) and _COMPARE[op](float(found), float(value))
        case Contains(field, value):
            return value in (_value(row, field) or [])
        case And(parts):
            return all(matches(row, p) for p in parts)
        case Or(parts):
            return any(matches(row, p) for p in parts)
        case Not(part):
            return not matches(row, part)
    raise TypeError(f"not a filter: {where!r}")


def _value(row: Row, field: str) -> Any:
    column, _, key = field.partition(".")
    value = row.get(column)
    return (value or {}).get(key) if key else value


def _tokens(text: str) -> list[str]:
    return [t for t in re.findall(r"\w+", text.lower()) if t not in ENGLISH_STOP_WORDS]


def _cosine(a: list[float], b: list[float]) -> float:
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return sum(x * y for x, y in zip(a, b, strict=True)) / norm if norm else 0.0


class FakeIndex:
    uri = "memory"
    engine = "memory"

    def __init__(self, analysis: Analysis = DEFAULT_ANALYSIS) -> None:
        self.analysis = analysis
        self._lock = threading.RLock()
        self._rows: dict[str, dict[str, Row]] = {REGISTRY: {}, LEASES: {}}
        self._shapes: dict[str, tuple[int, str]] = {}  # collection -> (dimension, model or metric)

    @staticmethod
    def _pk(name: str, row: Row) -> str:
        return str(row["key"] if name in (REGISTRY, LEASES) else row.get("chunk_id") or row["pk"])

    def _select(self, name: str, where: Where | None) -> list[Row]:
        return [r for r in self._rows.get(name, {}).values() if matches(r, where)]

    @staticmethod
    def _project(row: Row, fields: list[str] | None, pk: str) -> Row:
        if not fields or "*" in fields:
            return copy.deepcopy(row)
        return {f: copy.deepcopy(row[f]) for f in {*fields, pk} if f in row}

    # -- the store and its collections
    def ping(self) -> None:
        return None

    def close(self) -> None:
        return None

    def list_collections(self) -> list[str]:
        return sorted(n for n in self._rows if not n.startswith("_"))

    def has_collection(self, name: str) -> bool:
        return name in self._rows and name not in (REGISTRY, LEASES)

    def create_collection(self, name: str, dimension: int, model_name: str) -> bool:
        with self._lock:
            if name in self._rows:
                return False
            self._rows[name], self._shapes[name] = {}, (dimension, model_name)
            return True

    def describe(self, name: str) -> tuple[int, str]:
        return self._shapes[name]

    def analysis_of(self, name: str) -> Analysis:
        return self.analysis

    def drop_collection(self, name: str) -> None:
        with self._lock:
            self._rows.pop(name, None)
            self._shapes.pop(name, None)

    def ensure_loaded(self, name: str) -> None:
        return None

    def flush(self, *names: str) -> None:
        return None

    # -- rows
    def count(self, name: str, where: Where | None = None) -> int:
        with self._lock:
            return len(self._select(name, where))

    def insert(self, name: str, rows: list[Row]) -> None:
        self.upsert(name, rows)

    def upsert(self, name: str, rows: list[Row]) -> None:
        with self._lock:
            table = self._rows[name]
            for row in rows:
                table[self._pk(name, row)] = {k: copy.deepcopy(v) for k, v in row.items() if k != "sparse"}

    def delete(self, name: str, where: Where) -> None:
        with self._lock:
            table = self._rows.get(name, {})
            for row in self._select(name, where):
                table.pop(self._pk(name, row), None)

    def query(self, name: str, where: Where | None, fields: list[str], limit: int | None = None) -> list[Row]:
        with self._lock:
            pk = "key" if name in (REGISTRY, LEASES) else "chunk_id"
            return [self._project(r, fields, pk) for r in self._select(name, where)][:limit]

    def query_few(self, name: str, where: Where | None, fields: list[str]) -> list[Row]:
        return self.query(name, where, fields)

    def fetch(self, name: str, chunk_ids: list[str]) -> dict[str, Row]:
        rows = self.query(name, In("chunk_id", tuple(chunk_ids)), CHUNK_OUTPUT_FIELDS)
        return {row["chunk_id"]: row for row in rows}

    # -- rankings
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
    ) -> list[tuple[float, Row]]:
        with self._lock:
            rows = self._select(name, where)
            if mode == "semantic" and vector is not None:
                scored = [(_cosine(vector, r["vector"]), r) for r in rows]
            else:
                scored = self._bm25(rows, _tokens(text))
            scored.sort(key=lambda pair: pair[0], reverse=True)
            return [(s, self._project(r, fields or CHUNK_OUTPUT_FIELDS, "chunk_id")) for s, r in scored[:limit]]

    @staticmethod
    def _bm25(rows: list[Row], query: list[str]) -> list[tuple[float, Row]]:
        docs = [Counter(_tokens(r["search_text"])) for r in rows]
        if not docs:
            return []
        average = sum(sum(d.values()) for d in docs) / len(docs) or 1.0
        df = Counter(t for d in docs for t in set(d))
        scored = []
        for row, doc in zip(rows, docs, strict=True):
            length, score = sum(doc.values()), 0.0
            for term in query:
                if doc[term]:
                    idf = math.log(1 + (len(docs) - df[term] + 0.5) / (df[term] + 0.5))
                    score += idf * doc[term] * (K1 + 1) / (doc[term] + K1 * (1 - B + B * length / average))
            if score > 0:
                scored.append((score, row))
        return scored

    # -- registry and leases
    def registry_get(self, keys: list[str], fields: list[str] | None = None) -> dict[str, Row]:
        rows = self.query(REGISTRY, In("key", tuple(keys)), fields or REGISTRY_FIELDS)
        return {row["key"]: row for row in rows}

    def registry_upsert(self, rows: list[Row]) -> None:
        self.upsert(REGISTRY, rows)

    def registry_delete(self, where: Where) -> None:
        self.delete(REGISTRY, where)

    def registry_query(self, where: Where, fields: list[str] | None = None) -> list[Row]:
        return self.query(REGISTRY, where, fields or REGISTRY_FIELDS)

    def registry_count(self, where: Where) -> int:
        return self.count(REGISTRY, where)

    def leases_open(self, rows: list[Row]) -> None:
        self.upsert(LEASES, rows)

    def leases_end(self, keys: list[str]) -> None:
        self.delete(LEASES, In("key", tuple(keys)))

    def leases_query(self, where: Where) -> list[Row]:
        return self.query(LEASES, where, ["key", "doc_id", "version", "writer", "expires_ms"])

    def leases_delete(self, where: Where) -> None:
        self.delete(LEASES, where)

    # -- raw vector stores
    def vector_store_shape(self, name: str) -> tuple[int, str] | None:
        return self._shapes.get(name) if name in self._rows else None

    def create_vector_store(self, name: str, user_name: str, dimension: int, metric: str) -> None:
        self.create_collection(name, dimension, metric)

    def vector_search(
        self, name: str, vector: list[float], *, metric: str, limit: int, where: Where | None, fields: list[str]
    ) -> list[tuple[float, Row]]:
        with self._lock:
            rows = self._select(name, where)
        if metric == "euclidean":
            scored = [(math.dist(vector, r["vector"]), r) for r in rows]
            scored.sort(key=lambda pair: pair[0])
        else:
            score = _cosine if metric == "cosine" else lambda a, b: sum(x * y for x, y in zip(a, b, strict=True))
            scored = sorted(((score(vector, r["vector"]), r) for r in rows), key=lambda pair: pair[0], reverse=True)
        return [(s, self._project(r, fields, "pk")) for s, r in scored[:limit]]
