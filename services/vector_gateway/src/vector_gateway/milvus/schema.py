"""Milvus schemas: one collection per user collection, plus the `_documents` registry and the write leases."""

from __future__ import annotations

from typing import Any

from ingestion_contracts.common import MAX_TAG_LENGTH, MAX_TAGS

from ..lexical import ENGLISH_STOP_WORDS
from ..passages import MAX_VARCHAR_BYTES

REGISTRY_DIM = 2  # Milvus wants a vector in every collection; the registry's is a constant.
MODEL_PROPERTY = "embedding_model"

# Byte lengths: the contract bounds characters; UTF-8 takes at most 4 bytes per character.
SOURCE_BYTES = 2048 * 4
TITLE_BYTES = 1024 * 4
SHORT_BYTES = 256


def _varchar(schema: Any, name: str, max_length: int, **kwargs: Any) -> None:
    from pymilvus import DataType

    schema.add_field(name, DataType.VARCHAR, max_length=max_length, **kwargs)


def _document_fields(schema: Any) -> None:
    from pymilvus import DataType

    _varchar(schema, "doc_id", 128)
    _varchar(schema, "version", 64)
    _varchar(schema, "source", SOURCE_BYTES)
    _varchar(schema, "title", TITLE_BYTES)
    _varchar(schema, "file_type", SHORT_BYTES)
    _varchar(schema, "last_modified", SHORT_BYTES)
    schema.add_field(
        "tags", DataType.ARRAY, element_type=DataType.VARCHAR, max_capacity=MAX_TAGS, max_length=MAX_TAG_LENGTH * 4
    )
    schema.add_field("metadata", DataType.JSON)


def analyzer_params(stop_words: str) -> dict[str, Any]:
    """What the BM25 field's analyzer does: standard tokens, lower-cased, English stop words removed.

    Milvus Lite has no `english` analyzer and no stemmer, but it runs a `stop` filter; stemming is done
    before the text reaches Milvus (lexical.py)."""
    filters: list[Any] = ["lowercase"]
    if stop_words == "english":
        filters.append({"type": "stop", "stop_words": sorted(ENGLISH_STOP_WORDS)})
    return {"tokenizer": "standard", "filter": filters}


def chunk_schema(client: Any, dimension: int, stop_words: str = "english") -> Any:
    from pymilvus import DataType, Function, FunctionType

    schema = client.create_schema(auto_id=False, enable_dynamic_field=False)
    _varchar(schema, "chunk_id", 256, is_primary=True)
    _document_fields(schema)
    schema.add_field("chunk_index", DataType.INT64)
    _varchar(schema, "text", MAX_VARCHAR_BYTES)
    _varchar(
        schema, "search_text", MAX_VARCHAR_BYTES, enable_analyzer=True, analyzer_params=analyzer_params(stop_words)
    )
    schema.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
    schema.add_field("vector", DataType.FLOAT_VECTOR, dim=dimension)
    for name in ("page", "page_end", "start", "end", "token_count"):
        schema.add_field(name, DataType.INT64)
    schema.add_field("heading_path", DataType.JSON)
    schema.add_function(
        Function(
            name="bm25",
            function_type=FunctionType.BM25,
            input_field_names=["search_text"],
            output_field_names=["sparse"],
        )
    )
    return schema


DENSE_INDEX_PARAMS: dict[str, dict[str, Any]] = {
    "HNSW": {"M": 16, "efConstruction": 200},
    "IVF_FLAT": {"nlist": 128},
    "FLAT": {},
    "AUTOINDEX": {},
}


def dense_search_params(index_type: str, limit: int) -> dict[str, Any]:
    if index_type == "HNSW":
        return {"ef": max(64, limit)}
    if index_type == "IVF_FLAT":
        return {"nprobe": 16}
    return {}


def chunk_index_params(client: Any, index_type: str) -> Any:
    params = client.prepare_index_params()
    params.add_index("vector", index_type=index_type, metric_type="COSINE", params=DENSE_INDEX_PARAMS[index_type])
    params.add_index("sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25")
    return params


def registry_schema(client: Any) -> Any:
    from pymilvus import DataType

    schema = client.create_schema(auto_id=False, enable_dynamic_field=False)
    _varchar(schema, "key", 256, is_primary=True)
    _varchar(schema, "collection", 64)
    _document_fields(schema)
    _varchar(schema, "content_hash", 64)
    for name in ("chunk_count", "token_count"):
        schema.add_field(name, DataType.INT64)
    _varchar(schema, "created_at", 64)
    _varchar(schema, "updated_at", 64)
    schema.add_field("vector", DataType.FLOAT_VECTOR, dim=REGISTRY_DIM)
    return schema


def lease_schema(client: Any) -> Any:
    """A lease: writer ``writer`` may still commit ``version`` of ``doc_id`` until ``expires_ms`` (its clock)."""
    from pymilvus import DataType

    schema = client.create_schema(auto_id=False, enable_dynamic_field=False)
    _varchar(schema, "key", 512, is_primary=True)
    _varchar(schema, "collection", 256)
    _varchar(schema, "doc_id", 128)
    _varchar(schema, "version", 64)
    _varchar(schema, "writer", 256)
    schema.add_field("expires_ms", DataType.INT64)
    schema.add_field("vector", DataType.FLOAT_VECTOR, dim=REGISTRY_DIM)
    return schema


def registry_index_params(client: Any) -> Any:
    params = client.prepare_index_params()
    params.add_index("vector", index_type="FLAT", metric_type="L2")
    return params
