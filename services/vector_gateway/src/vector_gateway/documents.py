"""Read and delete documents through the registry. Blocking: runs in worker threads."""

from __future__ import annotations

import builtins
from typing import Any, Literal

from ingestion_contracts.gateway import (
    MAX_CHUNK_RANGE,
    DeleteDocumentResponse,
    DocumentChunks,
    DocumentContent,
    DocumentInfo,
    DocumentList,
    DocumentStamp,
    DocumentStamps,
    DocumentStructure,
)

from .errors import document_not_found, invalid
from .filters import in_collection
from .fusion import Fused
from .hits import hit_from_entity
from .index import DocumentIndex
from .orders import OrderSource
from .outline import document_structure
from .passages import ChunkSpan, rebuild_text
from .records import CHUNK_OUTPUT_FIELDS, REGISTRY
from .upsert import derive_doc_id, registry_key, split_metadata
from .versions import LeasePolicy, content_order, content_status, dead_versions, delete_versions
from .where import And, Cmp, Eq, Where

DocumentOrder = Literal["updated", "source"]
READ_RETRIES = 3
# A document's text is rebuilt from these; one query call reads them (an iterator costs several round trips).
CONTENT_FIELDS = ["chunk_index", "text", "start", "end"]


def document_info(collection: str, row: dict[str, Any]) -> DocumentInfo:
    """``collection`` is the user's name: the row records the Milvus name (names.py)."""
    metadata, ingest = split_metadata(row.get("metadata"), row["source"])
    return DocumentInfo(
        doc_id=row["doc_id"],
        collection=collection,
        source=row["source"],
        key=ingest["key"],
        chunking=ingest["chunking"],
        title=row["title"],
        file_type=row["file_type"],
        content_hash=row["content_hash"],
        chunk_count=int(row["chunk_count"]),
        token_count=int(row["token_count"]),
        page_count=int(ingest["pages"]) if ingest.get("pages", "").isdigit() else None,
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        last_modified=row["last_modified"],
        tags=list(row.get("tags") or []),
        metadata=metadata,
        content_order=content_order(row),
        content_status=content_status(row),
    )


def _live(row: dict[str, Any]) -> And:
    return And((Eq("doc_id", row["doc_id"]), Eq("version", row["version"])))


class DocumentReader:
    def __init__(
        self, store: DocumentIndex, leases: LeasePolicy | None = None, orders: OrderSource | None = None
    ) -> None:
        self.store = store
        self.leases = leases or LeasePolicy()
        self.orders = orders

    def _info(self, collection: str, row: dict[str, Any]) -> DocumentInfo:
        info = document_info(collection, row)
        if self.orders is not None:  # a write order taken here after this read is larger (a Lamport clock)
            self.orders.observe(info.content_order)
        return info

    def registry_row(self, collection: str, doc_id: str) -> dict[str, Any]:
        row = self.store.registry_get([registry_key(collection, doc_id)]).get(registry_key(collection, doc_id))
        if row is None:
            raise document_not_found(collection, doc_id)
        return row

    def list(
        self,
        collection: str,
        *,
        offset: int,
        limit: int,
        source: str | None,
        order: DocumentOrder,
        key: str | None = None,
    ) -> DocumentList:
        if key is not None:
            return self._by_key(collection, key, source)
        where: Where = And((in_collection(collection), Eq("source", source))) if source else in_collection(collection)
        keys = self.store.registry_query(where, ["key", "doc_id", "source", "updated_at"])
        if order == "source":
            keys.sort(key=lambda r: (r["source"], r["doc_id"]))
        else:
            keys.sort(key=lambda r: (r["updated_at"], r["doc_id"]), reverse=True)
        page = [r["key"] for r in keys[offset : offset + limit]]
        rows = self.store.registry_get(page)
        documents = [self._info(collection, rows[k]) for k in page if k in rows]
        return DocumentList(documents=documents, total=len(keys), offset=offset, limit=limit)

    def stamps(self, collection: str, prefix: str, meta: builtins.list[str]) -> DocumentStamps:
        """Key, id, hash and the asked metadata of every document whose key starts with ``prefix``: one registry
        read (paging `list` re-reads and sorts the whole registry for every page)."""
        rows = self.store.registry_query(in_collection(collection), ["doc_id", "source", "content_hash", "metadata"])
        found = []
        for row in rows:
            metadata, ingest = split_metadata(row.get("metadata"), row["source"])
            if ingest["key"].startswith(prefix):
                picked = {k: metadata[k] for k in meta if k in metadata}
                found.append(DocumentStamp(key=ingest["key"], doc_id=row["doc_id"], content_hash=row["content_hash"],
                                           metadata=picked))  # fmt: skip
        return DocumentStamps(stamps=found)

    def _by_key(self, collection: str, key: str, source: str | None) -> DocumentList:
        """The document with this identity (0 or 1)."""
        found = [d for d in self.find(collection, [key]) if source is None or d.source == source]
        return DocumentList(documents=found, total=len(found), offset=0, limit=1)

    def find(self, collection: str, keys: builtins.list[str]) -> builtins.list[DocumentInfo]:
        """The stored documents with these identities (ids derive from (collection, key)), in no order."""
        wanted = {registry_key(collection, derive_doc_id(collection, key)): key for key in keys}
        rows = self.store.registry_get(list(wanted))
        return [info for k, row in rows.items() if (info := self._info(collection, row)).key == wanted[k]]

    def _live_chunks(
        self, collection: str, doc_id: str, fields: builtins.list[str]
    ) -> tuple[dict[str, Any], builtins.list[dict[str, Any]]]:
        """A document's registry row and the chunks of the version it names (read again when a newer version
        was committed and this one retired between the two reads)."""
        row = self.registry_row(collection, doc_id)
        chunks = self.store.query_few(collection, _live(row), fields)
        for _ in range(READ_RETRIES):
            if len(chunks) == int(row["chunk_count"]):
                break
            fresh = self.registry_row(collection, doc_id)
            if fresh["version"] == row["version"]:
                break
            row = fresh
            chunks = self.store.query_few(collection, _live(row), fields)
        return row, chunks

    def content(self, collection: str, doc_id: str) -> DocumentContent:
        row, chunks = self._live_chunks(collection, doc_id, CONTENT_FIELDS)
        spans = [ChunkSpan(c["chunk_index"], c["text"], c["start"], c["end"]) for c in chunks]
        return DocumentContent(**self._info(collection, row).model_dump(), content=rebuild_text(spans))

    def structure(self, collection: str, doc_id: str) -> DocumentStructure:
        """The Markdown (as ``content`` rebuilds it) with its sections and page starts (outline.py)."""
        row, chunks = self._live_chunks(collection, doc_id, CHUNK_OUTPUT_FIELDS)
        hits = [hit_from_entity(collection, c, Fused(0.0, 0.0)) for c in chunks]
        return document_structure(self._info(collection, row), hits, chunks)

    def chunks(self, collection: str, doc_id: str, start: int, end: int | None) -> DocumentChunks:
        row = self.registry_row(collection, doc_id)
        last = int(row["chunk_count"]) - 1 if end is None else end
        if last < start:
            raise invalid(f"end ({end}) is before start ({start}).", "Give start <= end (both inclusive).")
        if last - start + 1 > MAX_CHUNK_RANGE:
            raise invalid(
                f"The range {start}..{last} has more than {MAX_CHUNK_RANGE} chunks.",
                f"Ask for at most {MAX_CHUNK_RANGE} chunks per call.",
            )
        where = And((*_live(row).parts, Cmp("chunk_index", ">=", start), Cmp("chunk_index", "<=", last)))
        found = self.store.query(collection, where, CHUNK_OUTPUT_FIELDS, limit=MAX_CHUNK_RANGE)
        found.sort(key=lambda c: c["chunk_index"])
        hits = [hit_from_entity(collection, c, Fused(0.0, 0.0)) for c in found]
        return DocumentChunks(doc_id=doc_id, collection=collection, chunks=hits, chunk_count=int(row["chunk_count"]))

    def delete(self, collection: str, doc_id: str) -> DeleteDocumentResponse:
        row = self.registry_row(collection, doc_id)
        # Registry first: the document is gone for searches even if the chunk delete fails.
        self.store.registry_delete(Eq("key", row["key"]))
        # Every version nobody can commit any more; a write in flight on another replica keeps its rows, and
        # if it commits after this delete, the document is back, complete (the last commit wins).
        dead = dead_versions(self.store, collection, [doc_id], self.leases.now_ms())
        deleted = delete_versions(self.store, collection, dead, count=True)
        self.store.flush(collection, REGISTRY)
        return DeleteDocumentResponse(doc_id=doc_id, collection=collection, deleted_chunks=deleted)
