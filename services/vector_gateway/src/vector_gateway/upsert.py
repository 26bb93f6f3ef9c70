"""Write documents: dedup by content hash, new version, chunks, registry commit, old version out.

The registry row is the commit point. Chunks of a version become visible to searches only once
the registry names that version, so a write that dies half-way leaves the index as it was.
How versions are committed and retired across gateway replicas: versions.py, docs/consistency.md.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar

from ingestion_contracts.gateway import (
    RESERVED_METADATA_KEY,
    RelabelRequest,
    StageTimings,
    UpsertDocumentRequest,
    UpsertDocumentResponse,
    UpsertStatus,
)

from . import names
from .boxes import compact, kept_boxes, with_boxes
from .citations import stored_page_starts, with_page_starts
from .embedder import Embedder
from .errors import commit_deadline_passed, invalid
from .heading_levels import stored_heading_levels, with_heading_levels
from .index import DocumentIndex
from .lexical import Analysis, document_language
from .orders import LocalOrders, OrderSource
from .passages import MAX_VARCHAR_BYTES, passage_text, search_text
from .records import CHUNK_OUTPUT_FIELDS, REGISTRY
from .versions import (
    CommitDeadline,
    DeadlinePassed,
    LeasePolicy,
    NewVersion,
    VersionWriter,
    chunk_id,
    content_order,
    content_status,
    content_version,
    order_of,
    version_for,
    write_conflict,
)
from .where import And, In

log = logging.getLogger("vector_gateway.upsert")
T = TypeVar("T")
MAX_HEADING_PATH_BYTES = 16_384
SUPERSEDED = "A newer write of this document was committed while this one was stored; the newer one is kept."
OUTRUN = "A newer write of this document was committed before this one arrived; the newer one is kept."


def derive_doc_id(collection: str, key: str) -> str:
    """Stable id for a document key in a collection: re-indexing the same key replaces it.

    Documents written before keys existed were identified by their source, which was then the key."""
    return uuid.uuid5(uuid.NAMESPACE_URL, f"vector-gateway:{collection}:{key}").hex


def stored_metadata(metadata: dict[str, Any], **ingest: str) -> dict[str, Any]:
    """User metadata plus the gateway's own bookkeeping under the reserved key."""
    return {**metadata, RESERVED_METADATA_KEY: ingest}


def split_metadata(stored: dict[str, Any] | None, source: str) -> tuple[dict[str, Any], dict[str, str]]:
    """(user metadata, bookkeeping) of a stored row; rows written before 0.3 have no bookkeeping."""
    user = dict(stored or {})
    ingest = user.pop(RESERVED_METADATA_KEY, None) or {}
    found = {"key": ingest.get("key") or source, "chunking": ingest.get("chunking", "")}
    if ingest.get("pages"):  # kept by a relabel, which copies this bookkeeping
        found["pages"] = ingest["pages"]
    return user, found


def page_count_of(request: UpsertDocumentRequest) -> int | None:
    """The source's pages as the converter counted them, else the last page a chunk names."""
    named = [page for chunk in request.chunks for page in (chunk.page, chunk.page_end) if page is not None]
    return request.page_count or (max(named) if named else None)


def labels_of(row: dict[str, Any]) -> tuple[str, str, frozenset[str], str]:
    """What a re-ingest may change without re-embedding, in a comparable form."""
    user, _ = split_metadata(row.get("metadata"), row["source"])
    return row["source"], row["title"], frozenset(row.get("tags") or []), json.dumps(user, sort_keys=True)


def registry_key(collection: str, doc_id: str) -> str:
    """A document's registry row: its collection's Milvus name (names.py), '/', its id."""
    return f"{names.collection(collection)}/{doc_id}"


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def validate_document(position: int, request: UpsertDocumentRequest) -> None:
    """Refuse what Milvus would refuse half-way through a write (422 before anything is written)."""
    where = f"documents[{position}]"
    seen: set[int] = set()
    for chunk in request.chunks:
        if chunk.index in seen:
            raise invalid(
                f"{where}: chunk index {chunk.index} appears twice.",
                "Number the chunks 0..n-1 once each.",
                chunk_index=chunk.index,
            )
        seen.add(chunk.index)
        size = len(chunk.text.encode("utf-8"))
        if size > MAX_VARCHAR_BYTES:
            raise invalid(
                f"{where}: chunk {chunk.index} is {size} bytes of UTF-8; the limit is {MAX_VARCHAR_BYTES}.",
                "Chunk the text into smaller windows (the chunker's presets stay far below the limit).",
                chunk_index=chunk.index,
            )
        if chunk.end < chunk.start:
            raise invalid(
                f"{where}: chunk {chunk.index} ends ({chunk.end}) before it starts ({chunk.start}).",
                "Send the chunk's character offsets in the source text, or leave both at 0.",
                chunk_index=chunk.index,
            )
        if len(json.dumps(chunk.heading_path, ensure_ascii=False).encode()) > MAX_HEADING_PATH_BYTES:
            raise invalid(f"{where}: chunk {chunk.index} has a heading path over 16 KiB.", "Send shorter headings.")


@dataclass
class PlannedDocument:
    request: UpsertDocumentRequest
    doc_id: str
    key: str
    existing: dict[str, Any] | None = None
    version: str = ""
    status: UpsertStatus = "skipped"
    wrote: bool = False  # this call committed the document's content (its chunks are the request's)
    response: UpsertDocumentResponse | None = None
    warnings: list[str] = field(default_factory=list)


def plan(collection: str, requests: list[UpsertDocumentRequest]) -> list[PlannedDocument]:
    planned: list[PlannedDocument] = []
    positions: dict[str, int] = {}
    for position, request in enumerate(requests):
        validate_document(position, request)
        doc_id = request.doc_id or derive_doc_id(collection, request.identity)
        if doc_id in positions:
            raise invalid(
                f"documents[{position}] and documents[{positions[doc_id]}] are the same document ({doc_id}).",
                "Send each document (doc_id, or source without doc_id) once per batch.",
                doc_id=doc_id,
            )
        positions[doc_id] = position
        planned.append(PlannedDocument(request, doc_id, registry_key(collection, doc_id)))
    return planned


def _chunk_rows(doc: PlannedDocument, vectors: list[list[float]], analysis: Analysis) -> list[dict[str, Any]]:
    req = doc.request
    language = _language(analysis, [chunk.text for chunk in req.chunks])
    rows = []
    sizes = {size.page: size for size in req.page_sizes}
    for chunk, vector in zip(req.chunks, vectors, strict=True):
        rows.append(
            {
                "chunk_id": chunk_id(doc.doc_id, doc.version, chunk.index),
                "doc_id": doc.doc_id,
                "version": doc.version,
                "chunk_index": chunk.index,
                "text": chunk.text,
                "search_text": search_text(req.title, chunk.heading_path, chunk.text, analysis, language),
                "vector": vector,
                "source": req.source,
                "title": req.title,
                "file_type": req.file_type,
                "page": chunk.page or 0,
                "page_end": chunk.page_end or chunk.page or 0,
                "heading_path": list(chunk.heading_path),
                "start": chunk.start,
                "end": chunk.end,
                "token_count": chunk.token_count,
                "tags": list(dict.fromkeys(req.tags)),
                "metadata": with_boxes(
                    with_heading_levels(
                        with_page_starts(
                            stored_metadata(req.metadata, key=req.identity),
                            [(s.offset, s.page) for s in chunk.page_starts],
                        ),
                        chunk.heading_levels,
                    ),
                    compact(chunk, sizes),
                ),
                "last_modified": req.last_modified,
            }
        )
    return rows


def _registry_row(collection: str, doc: PlannedDocument, stamp: str) -> dict[str, Any]:
    req = doc.request
    return {
        "key": doc.key,
        "collection": names.collection(collection),
        "doc_id": doc.doc_id,
        "version": doc.version,
        "source": req.source,
        "title": req.title,
        "file_type": req.file_type,
        "content_hash": req.content_hash,
        "chunk_count": len(req.chunks),
        "token_count": sum(c.token_count for c in req.chunks),
        "created_at": doc.existing["created_at"] if doc.existing else stamp,
        "updated_at": stamp,
        "last_modified": req.last_modified,
        "tags": list(dict.fromkeys(req.tags)),
        # The version that brought this content and what its write answered: a relabel keeps both, so they order
        # content writes and answer a retry of this write (versions.py).
        "metadata": stored_metadata(
            req.metadata,
            key=req.identity,
            chunking=req.chunking,
            content_version=doc.version,
            content_status=doc.status,
            **({"pages": str(pages)} if (pages := page_count_of(req)) else {}),
        ),
    }


class DocumentWriter:
    """One batch of documents into one collection. Blocking: runs in a worker thread.

    Each changed document gets a new version, stored and committed under a write lease (versions.py), so
    writers on any number of replicas never leave the registry naming a version whose rows are gone. The
    version carries the write's order: the request's, else one taken here above the stored content's."""

    def __init__(
        self,
        store: DocumentIndex,
        embedder: Embedder,
        observe: Callable[[str, float], None],
        leases: LeasePolicy | None = None,
        *,
        orders: OrderSource | None = None,
        deadline: CommitDeadline | None = None,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.observe = observe
        self.leases = leases or LeasePolicy()
        self.orders = orders or LocalOrders()
        self.deadline = deadline
        self.versions = VersionWriter(store, self.leases, deadline)

    def write(self, collection: str, docs: list[PlannedDocument]) -> StageTimings:
        if self.deadline is not None and self.deadline.passed():
            raise commit_deadline_passed([])  # before any work: the caller's lease is over already
        existing = self.store.registry_get([d.key for d in docs])
        plans = {d.doc_id: self._plan(d, existing.get(d.key)) for d in docs}
        todo = [d for d in docs if plans[d.doc_id] == "write"]
        timings = StageTimings()
        if todo:
            vectors = self._vectors(todo, timings)
            started = time.perf_counter()
            self._committing(docs, self._store, collection, todo, vectors)
            timings.storing_ms = (time.perf_counter() - started) * 1000
            self.observe("storing", timings.storing_ms / 1000)
        for doc in docs:
            if plans[doc.doc_id] == "relabel":
                labels = _relabel_request(doc.request)
                doc.status = self._committing(docs, self.relabel, collection, doc, labels, doc.request.order)
        self._answer(collection, docs, timings)
        return timings

    def _plan(self, doc: PlannedDocument, stored: dict[str, Any] | None) -> str:
        """write (new content: order and version set), relabel, or done (status and warnings set)."""
        doc.existing, order, stored_order = stored, doc.request.order, content_order(stored) if stored else 0
        for seen in (order, stored_order):
            if seen:
                self.orders.observe(seen)
        if stored is not None and order is not None and order <= stored_order:
            if order == stored_order:  # another try of the write that stored this content: answer what it did
                doc.status = _answered(stored)
            else:
                doc.warnings.append(OUTRUN)
            return "done"
        if stored is None or doc.request.force or not _same_content(stored, doc.request):
            # Taken now, above the stored content: a write that starts after another was committed is newer.
            doc.version = version_for(order or self.orders.take(stored_order))
            doc.status = "replaced" if stored else "indexed"
            return "write"
        return "relabel" if labels_of(stored) != labels_of(_request_labels(doc.request)) else "done"

    def _committing(self, docs: list[PlannedDocument], step: Callable[..., T], *args: Any) -> T:
        """``step(*args)``; a commit deadline that passes on the way says which documents were committed before."""
        try:
            return step(*args)
        except DeadlinePassed:
            raise commit_deadline_passed([d.doc_id for d in docs if d.wrote or d.status == "updated"]) from None

    def relabel(
        self, collection: str, doc: PlannedDocument, labels: RelabelRequest, order: int | None = None
    ) -> UpsertStatus:
        """Write the stored chunks again under new labels, as a new version, with the vectors they have.

        The same commit point as any write (the registry row names the new version), so a search sees
        either the old labels or the new ones, never a mix. ``order``: the write's, when it came with one;
        else a fresh one. Returns the status: updated or skipped."""
        existing = doc.existing or self.store.registry_get([doc.key]).get(doc.key)
        if existing is None or existing["content_hash"] != labels.content_hash:
            raise invalid(
                f"Document {doc.doc_id} is not stored with that content hash.",
                "Ingest the document again with its chunks (its content changed, or it was deleted).",
            )
        doc.existing = existing
        _, ingest = split_metadata(existing.get("metadata"), existing["source"])
        title = existing["title"] if labels.title is None else labels.title
        wanted = {"source": labels.source, "title": title, "tags": list(dict.fromkeys(labels.tags)),
                  "metadata": labels.metadata}  # fmt: skip
        if labels_of(existing) == labels_of(wanted) and labels.last_modified in (None, existing["last_modified"]):
            return "skipped"
        doc.version = version_for(order or self.orders.take(order_of(existing["version"])))
        rows = self.store.query(collection, _version_of(existing), [*CHUNK_OUTPUT_FIELDS, "vector"])
        if len(rows) != int(existing["chunk_count"]):
            raise write_conflict(doc.doc_id)  # the version was retired under us: a newer one is committed
        analysis = self.store.analysis_of(collection)
        last_modified = existing["last_modified"] if labels.last_modified is None else labels.last_modified
        changes = {**wanted, "last_modified": last_modified}
        language = _language(analysis, [row["text"] for row in sorted(rows, key=lambda r: r["chunk_index"])])
        new_rows = [_relabelled_row(row, doc, changes, ingest["key"], analysis, language) for row in rows]
        kept = {**ingest, "content_version": content_version(existing), "content_status": content_status(existing)}
        registry = {**existing, **changes, "version": doc.version, "updated_at": now_iso(),
                    "metadata": stored_metadata(labels.metadata, **kept)}  # fmt: skip
        registry.pop("vector", None)
        # Copied from the committed version: commit only while the registry still names it.
        new = NewVersion(doc.doc_id, doc.key, doc.version, registry, based_on=existing["version"])
        self.versions.write(collection, [new], new_rows)
        if new.outcome != "committed":
            raise write_conflict(doc.doc_id)
        self._retire(collection, [doc])
        return "updated"

    def _store(self, collection: str, todo: list[PlannedDocument], vectors: list[list[float]]) -> None:
        rows: list[dict[str, Any]] = []
        analysis = self.store.analysis_of(collection)
        for doc in todo:
            rows.extend(_chunk_rows(doc, vectors[len(rows) : len(rows) + len(doc.request.chunks)], analysis))
        stamp = now_iso()
        news = [
            NewVersion(d.doc_id, d.key, d.version, _registry_row(collection, d, stamp),
                       submitted=d.request.order is not None)
            for d in todo
        ]  # fmt: skip
        self.versions.write(collection, news, rows)
        for doc, new in zip(todo, news, strict=True):
            doc.wrote = new.outcome == "committed"
            if new.outcome == "superseded":  # a newer write of it committed first: that one stays
                doc.status, doc.existing = "skipped", new.current
                doc.warnings.append(SUPERSEDED)
            elif new.outcome == "duplicate" and new.current is not None:  # another try of it committed first
                doc.status, doc.existing = _answered(new.current), new.current
        self._retire(collection, todo)

    def _retire(self, collection: str, docs: list[PlannedDocument]) -> None:
        if not self.versions.retire(collection, [d.doc_id for d in docs]):
            for doc in docs:
                doc.warnings.append("Old chunks could not be deleted yet; searches ignore them.")
        self.store.flush(collection, REGISTRY)

    def _vectors(self, todo: list[PlannedDocument], timings: StageTimings) -> list[list[float]]:
        """Vectors the caller embedded (checked against the collection's model), else embedded here."""
        missing = [d for d in todo if d.request.vectors is None]
        for position, doc in enumerate(todo):
            if doc.request.vectors is not None:
                check_vectors(position, doc.request, self.embedder)
        embedded = iter(self._embed(missing, timings) if missing else [])
        vectors: list[list[float]] = []
        for doc in todo:
            given = doc.request.vectors
            vectors.extend(given if given is not None else (next(embedded) for _ in doc.request.chunks))
        return vectors

    def _embed(self, todo: list[PlannedDocument], timings: StageTimings) -> list[list[float]]:
        texts = [passage_text(d.request.title, c.heading_path, c.text) for d in todo for c in d.request.chunks]
        started = time.perf_counter()
        vectors = self.embedder.embed_documents(texts)
        timings.embedding_ms = (time.perf_counter() - started) * 1000
        self.observe("embedding", timings.embedding_ms / 1000)
        return vectors

    @staticmethod
    def _answer(collection: str, docs: list[PlannedDocument], timings: StageTimings) -> None:
        written = sum(len(d.request.chunks) for d in docs if d.wrote) or 1
        for doc in docs:
            status = doc.status
            if doc.wrote:
                chunk_count, share = len(doc.request.chunks), len(doc.request.chunks) / written
            else:  # skipped, updated, or a retry of a write that stored it: the stored chunks stay
                chunk_count, share = int(doc.existing["chunk_count"]), 0.0  # type: ignore[index]  # a skipped or updated document was found stored: existing is set
            doc.response = UpsertDocumentResponse(
                doc_id=doc.doc_id,
                collection=collection,
                source=doc.request.source,
                status=status,
                chunk_count=chunk_count,
                timings=StageTimings(embedding_ms=timings.embedding_ms * share, storing_ms=timings.storing_ms * share),
                warnings=doc.warnings,
            )


def _answered(stored: dict[str, Any]) -> UpsertStatus:
    """What the write that stored this content answered (skipped for content stored before 0.6)."""
    return content_status(stored) or "skipped"


def _same_content(existing: dict[str, Any], request: UpsertDocumentRequest) -> bool:
    _, ingest = split_metadata(existing.get("metadata"), existing["source"])
    return existing["content_hash"] == request.content_hash and ingest["chunking"] == request.chunking


def _request_labels(request: UpsertDocumentRequest) -> dict[str, Any]:
    return {"source": request.source, "title": request.title, "tags": request.tags, "metadata": request.metadata}


def _relabel_request(request: UpsertDocumentRequest) -> RelabelRequest:
    return RelabelRequest(
        content_hash=request.content_hash, source=request.source, title=request.title,
        last_modified=request.last_modified, tags=request.tags, metadata=request.metadata,
    )  # fmt: skip


def _version_of(row: dict[str, Any]) -> And:
    return And((In("doc_id", (row["doc_id"],)), In("version", (row["version"],))))


def _language(analysis: Analysis, texts: list[str]) -> str:
    """The language a document's BM25 text is analysed in: its own under snowball_multi (lexical.py)."""
    return document_language(texts) if analysis == "snowball_multi" else "en"


def _relabelled_row(
    row: dict[str, Any], doc: PlannedDocument, changes: dict[str, Any], key: str, analysis: Analysis, language: str
) -> dict[str, Any]:
    new = {**row, **changes, "version": doc.version, "chunk_id": chunk_id(doc.doc_id, doc.version, row["chunk_index"])}
    pages = stored_page_starts(row.get("metadata"))  # the text is the same: so are its pages and headings
    levels = stored_heading_levels(row.get("metadata"), row.get("heading_path") or []) or []
    new["metadata"] = with_boxes(
        with_heading_levels(with_page_starts(stored_metadata(changes["metadata"], key=key), pages), levels),
        kept_boxes(row.get("metadata")),
    )
    new["search_text"] = search_text(changes["title"], row.get("heading_path") or [], row["text"], analysis, language)
    return new


def check_vectors(position: int, request: UpsertDocumentRequest, embedder: Embedder) -> None:
    """Caller-made vectors must come from this collection's model, one per chunk, of its dimension."""
    vectors = request.vectors or []
    where = f"documents[{position}]"
    if request.embedding_model != embedder.model_name:
        raise invalid(
            f"{where}: vectors made by {request.embedding_model!r}, but this gateway embeds with "
            f"{embedder.model_name!r}.",
            "Embed with /v1/embed/passages of this gateway, or omit vectors.",
        )
    if len(vectors) != len(request.chunks) or any(len(v) != embedder.dimension for v in vectors):
        raise invalid(
            f"{where}: give one vector of dimension {embedder.dimension} per chunk ({len(request.chunks)}).",
            "Embed the chunks with /v1/embed/passages, in order, or omit vectors.",
        )
