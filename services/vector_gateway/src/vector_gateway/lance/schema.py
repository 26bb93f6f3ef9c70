"""Arrow schemas of the Lance tables: one per user collection, the registry, the write leases, vector stores.

The fields and their meaning are milvus/schema.py's (records.py names them); JSON fields are Arrow's JSON
extension type, which Lance stores as JSONB and filters with json_extract (expressions.py). What Milvus keeps
as collection properties (the embedding model, the BM25 analysis, the user's name, a vector store's metric)
is the table schema's metadata here.
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

MODEL = "embedding_model"
METRIC = "vector_store_metric"

_JSON = pa.json_(pa.utf8())
_STRING = pa.utf8()
_INT = pa.int64()


def _vector(dimension: int) -> pa.DataType:
    return pa.list_(pa.float32(), dimension)


def _document_fields() -> list[pa.Field]:
    return [
        pa.field("doc_id", _STRING),
        pa.field("version", _STRING),
        pa.field("source", _STRING),
        pa.field("title", _STRING),
        pa.field("file_type", _STRING),
        pa.field("last_modified", _STRING),
        pa.field("tags", pa.list_(_STRING)),
        pa.field("metadata", _JSON),
    ]


def chunk_schema(dimension: int, properties: dict[str, str]) -> pa.Schema:
    fields = [
        pa.field("chunk_id", _STRING, nullable=False),
        *_document_fields(),
        pa.field("chunk_index", _INT),
        pa.field("text", _STRING),
        pa.field("search_text", _STRING),
        pa.field("vector", _vector(dimension)),
        *(pa.field(name, _INT) for name in ("page", "page_end", "start", "end", "token_count")),
        pa.field("heading_path", _JSON),
    ]
    return pa.schema(fields, metadata=properties)


def registry_schema() -> pa.Schema:
    return pa.schema(
        [
            pa.field("key", _STRING, nullable=False),
            pa.field("collection", _STRING),
            *_document_fields(),
            pa.field("content_hash", _STRING),
            pa.field("chunk_count", _INT),
            pa.field("token_count", _INT),
            pa.field("created_at", _STRING),
            pa.field("updated_at", _STRING),
        ]
    )


def lease_schema() -> pa.Schema:
    """A lease: writer ``writer`` may still commit ``version`` of ``doc_id`` until ``expires_ms`` (its clock)."""
    names = ("key", "collection", "doc_id", "version", "writer")
    return pa.schema([*(pa.field(n, _STRING, nullable=n != "key") for n in names), pa.field("expires_ms", _INT)])


def vector_store_schema(dimension: int, properties: dict[str, str]) -> pa.Schema:
    return pa.schema(
        [
            pa.field("pk", _STRING, nullable=False),
            pa.field("id", _STRING),
            pa.field("namespace", _STRING),
            pa.field("metadata", _JSON),
            pa.field("vector", _vector(dimension)),
        ],
        metadata=properties,
    )


def properties(schema: pa.Schema) -> dict[str, str]:
    return {k.decode(): v.decode() for k, v in (schema.metadata or {}).items()}


def dimension(schema: pa.Schema) -> int:
    return int(schema.field("vector").type.list_size)


def _is_json(field: pa.Field) -> bool:
    """A JSON field as created (Arrow's JSON type) or as Lance reads it back (JSONB, its own extension name)."""
    return field.type == _JSON or (field.metadata or {}).get(b"ARROW:extension:name") == b"lance.json"


def to_table(rows: list[dict[str, Any]], table_schema: pa.Schema) -> pa.Table:
    """Rows as an Arrow table for ``table_schema``: JSON fields serialised, fields it lacks (``sparse``) left out."""
    fields = [pa.field(f.name, _JSON, f.nullable) if _is_json(f) else f for f in table_schema]
    json_fields = [f.name for f in table_schema if _is_json(f)]
    if json_fields:
        rows = [{**row, **{f: _dumps(row.get(f)) for f in json_fields}} for row in rows]
    return pa.Table.from_pylist(rows, schema=pa.schema(fields))


def _dumps(value: Any) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def from_table(table: pa.Table) -> list[dict[str, Any]]:
    """Rows of an Arrow table as plain dicts: JSON fields parsed, vectors as lists of floats."""
    json_fields = [f.name for f in table.schema if _is_json(f)]
    rows = table.to_pylist()
    for row in rows:
        for name in json_fields:
            value = row.get(name)
            if isinstance(value, bytes | str):
                row[name] = json.loads(value)
    return rows
