"""What the index holds besides the chunks: the registry and the write leases, and the fields a caller reads.

Store-neutral names: each store adapter keeps these collections its own way (milvus/schema.py).
"""

from __future__ import annotations

REGISTRY = "_documents"
# Open write leases, one row per document version being written (versions.py, docs/consistency.md).
LEASES = "_write_leases"

# Everything a search hit or a chunk listing shows; never the vectors or search_text.
CHUNK_OUTPUT_FIELDS = [
    "chunk_id",
    "doc_id",
    "version",
    "chunk_index",
    "text",
    "source",
    "title",
    "file_type",
    "page",
    "page_end",
    "heading_path",
    "start",
    "end",
    "token_count",
    "tags",
    "metadata",
    "last_modified",
]
REGISTRY_FIELDS = [
    "key",
    "collection",
    "doc_id",
    "version",
    "source",
    "title",
    "file_type",
    "content_hash",
    "chunk_count",
    "token_count",
    "created_at",
    "updated_at",
    "last_modified",
    "tags",
    "metadata",
]
