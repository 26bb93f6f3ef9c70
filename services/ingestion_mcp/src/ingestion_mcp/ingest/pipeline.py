"""The one ingest pipeline: acquired documents -> dedup -> docling -> chunker -> embeddings -> gateway.

Every way in (files, texts, URLs, downloads, repositories, batches, the index CLI, every profile) hands
this pipeline a list of items, each with a source adapter (ingest/acquire.py) and its labels; a single document
is a batch of one. Stages run batch-wide, so progress and cancellation behave the same everywhere:
- dedup: same key + content + chunking + labels -> skipped (nothing written); same key + content +
  chunking, new labels -> updated (stored chunks relabelled, no re-embedding); otherwise indexed/replaced;
- cancellation (the job's task cancelled) stops at the next await, at the latest between two embedding
  batches; nothing is written before the storing stage, and that stage, which commits atomically in the
  gateway, is not interrupted: a cancelled ingest leaves the index exactly as it was.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio
from ingestion_contracts.chunker import ChunkRequest, ChunkResponse
from ingestion_contracts.docling import PageSpan
from ingestion_contracts.gateway import (
    ChunkIn,
    DocumentInfo,
    PassageIn,
    RelabelRequest,
    UpsertDocumentRequest,
)
from ingestion_contracts.regions import Furniture, PageSize, Region, Unit

from ..access.audit import require
from ..backend import Backend, PageProgress
from ..errors import CollectionNotFound, ToolFailure, UpstreamError, failure_from
from ..jobs import current_job, uninterrupted
from ..settings import McpSettings
from ..sources import SourcePolicy
from ..sources.file_names import escaped
from . import acquire
from .acquire import Acquired, file_type_of, sha256, supported_types_text
from .furniture import furniture_by_chunk

Progress = Callable[[float, str], Awaitable[None]]
Status = Literal["indexed", "replaced", "updated", "skipped"]
Acquire = Callable[[], Awaitable[Acquired]]
FIND_BATCH = 1000  # keys per dedup look-up
EMBED_BATCH = 32  # chunks per embedding call: the unit of progress and of cancellation
__all__ = ["BatchItem", "IngestItem", "IngestOutcome", "Ingestor", "file_type_of", "sha256", "supported_types_text"]


async def _no_progress(_: float, __: str) -> None:
    return None


@dataclass
class IngestItem:
    """One document to ingest: how to acquire it, and the labels to store with it."""

    acquire: Acquire
    label: str  # how messages name it (file name, text name, URL)
    source: str | None = None
    tags: list[str] | None = None
    metadata: dict[str, Any] | None = None
    title: str | None = None


@dataclass
class BatchItem:
    """One document of a batch as its callers describe it: a file path or a text."""

    file_path: str | None = None
    text: str | None = None
    name: str | None = None
    source: str | None = None
    metadata: dict[str, Any] | None = None
    key: str | None = None  # identity override (the obsidian profile keys notes by vault path)
    as_text: bool = False  # a file of a text-like type the converter does not know (.rst, .tex): read as text
    walked: bool = False  # found by a folder sync: any name the file system holds (acquire.from_file)

    @property
    def label(self) -> str:
        return self.name or (escaped(self.file_path) if self.file_path else None) or self.source or "text"


@dataclass
class IngestOutcome:
    status: Status
    doc_id: str
    collection: str
    key: str
    source: str
    title: str
    file_type: str
    chunks: int
    tokens: int
    stages: dict[str, float] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    page_count: int | None = None
    pipeline: str | None = None
    processing_ms: float = 0.0


@dataclass
class Work:
    """One item's way through the stages."""

    item: IngestItem
    doc: Acquired | None = None
    existing: DocumentInfo | None = None
    legacy: DocumentInfo | None = None  # the same document stored under its pre-0.3 identity
    markdown: str = ""
    title: str = ""
    page_spans: list[PageSpan] = field(default_factory=list)
    regions: list[Region] = field(default_factory=list)  # where the Markdown lies on its pages (PDFs, images)
    units: list[Unit] = field(default_factory=list)
    page_sizes: list[PageSize] = field(default_factory=list)
    furniture: list[Furniture] = field(default_factory=list)  # running heads, feet, page numbers (not in markdown)
    page_count: int | None = None
    pipeline: str | None = None
    levels_known: bool = True  # false: the converter guessed the heading levels (a PDF without bookmarks)
    chunks: ChunkResponse | None = None
    vectors: list[list[float]] = field(default_factory=list)
    model: str | None = None  # the embedding model that made `vectors`
    outcome: IngestOutcome | ToolFailure | None = None
    stages: dict[str, float] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    @property
    def pending(self) -> bool:
        return self.outcome is None

    def fail(self, exc: BaseException) -> None:
        self.outcome = exc if isinstance(exc, ToolFailure) else failure_from(exc)

    def add_stage(self, name: str, started: float) -> None:
        self.stages[name] = round(self.stages.get(name, 0.0) + (time.perf_counter() - started) * 1000, 1)

    @property
    def source(self) -> str:
        assert self.doc is not None
        return self.item.source or self.doc.default_source

    @property
    def tags(self) -> list[str]:
        return list(dict.fromkeys(self.item.tags or []))


class Ingestor:
    def __init__(self, backend: Backend, settings: McpSettings) -> None:
        self.backend = backend
        self.settings = settings
        # One store at a time per collection from this process's ingestor (every ingest shares it; a folder sync
        # keeps two batches in flight): a store waiting in the gateway behind another would spend the commit budget
        # its job's lease gives it (2 s of a test's 3 s lease); waiting here, before the budget is taken, spends none.
        self._storing: dict[str, asyncio.Lock] = {}

    # -- the pipeline ------------------------------------------------------------------------
    async def ingest(
        self,
        items: list[IngestItem],
        *,
        collection: str,
        chunking: str = "default",
        force: bool = False,
        progress: Progress = _no_progress,
    ) -> list[IngestOutcome | ToolFailure]:
        """Ingest every item; each succeeds or fails on its own. Outcomes come back in item order."""
        # Before any download or conversion, not only at the store; a refusal is audited.
        require("ingest", collection, ", ".join(item.label for item in items))
        started = time.perf_counter()
        works = [Work(item) for item in items]
        await self._acquire(works, collection, chunking, force, progress)
        await self._convert(works, progress)
        await self._chunk(works, chunking, progress)
        await self._embed(works, progress)
        await self._store(works, collection, chunking, force, progress)
        await progress(1.0, "done")
        elapsed = round((time.perf_counter() - started) * 1000, 1)
        for work in works:
            if isinstance(work.outcome, IngestOutcome):
                work.outcome.processing_ms = elapsed
        return [w.outcome for w in works]  # type: ignore[misc]  # every work item has its outcome once the stages ran

    async def ingest_one(self, item: IngestItem, **options: Any) -> IngestOutcome:
        (outcome,) = await self.ingest([item], **options)
        if isinstance(outcome, ToolFailure):
            raise outcome
        return outcome

    # -- stages ------------------------------------------------------------------------------
    async def _acquire(
        self, works: list[Work], collection: str, chunking: str, force: bool, progress: Progress
    ) -> None:
        for number, work in enumerate(works):
            await progress(0.3 * number / len(works), "downloading")
            started = time.perf_counter()
            try:
                work.doc = await work.item.acquire()
            except Exception as exc:  # noqa: BLE001 - reported per item
                work.fail(exc)
            finally:
                work.add_stage("reading_ms", started)
        acquired = [w for w in works if w.pending]
        stored = await self.find_many(collection, [w.doc.key for w in acquired])  # type: ignore[union-attr]  # a work item past acquisition has its doc (and, past chunking, its chunks)
        order = current_job().order
        for work in acquired:
            work.existing = stored.get(work.doc.key)  # type: ignore[union-attr]  # a work item past acquisition has its doc (and, past chunking, its chunks)
            try:
                if order is not None and work.existing is not None and work.existing.content_order == order:
                    self._written_before(work, collection)
                elif not force:
                    await self._unchanged(work, collection, chunking)
            except Exception as exc:  # noqa: BLE001 - reported per item
                work.fail(exc)
        # Before 0.3 a given `source` was the identity: a copy of this same content stored that way is replaced.
        movers = [w for w in works if w.pending and w.existing is None and w.source != w.doc.key]  # type: ignore[union-attr]  # a work item past acquisition has its doc (and, past chunking, its chunks)
        legacy = await self.find_many(collection, [w.source for w in movers]) if movers else {}
        for work in movers:
            found = legacy.get(work.source)
            if found and found.chunking == "" and found.content_hash == work.doc.content_hash:  # type: ignore[union-attr]  # a work item past acquisition has its doc (and, past chunking, its chunks)
                work.legacy = found

    @staticmethod
    def _written_before(work: Work, collection: str) -> None:
        """A retried job whose earlier try committed this document: answer what that commit did, write nothing."""
        doc, existing = work.doc, work.existing
        assert doc is not None and existing is not None
        work.outcome = IngestOutcome(
            status=existing.content_status or "indexed", doc_id=existing.doc_id, collection=collection, key=doc.key,
            source=existing.source, title=existing.title, file_type=existing.file_type, chunks=existing.chunk_count,
            tokens=existing.token_count, stages=work.stages,
        )  # fmt: skip

    async def _unchanged(self, work: Work, collection: str, chunking: str) -> None:
        """Skip or relabel when the stored document has this content and chunking (the work is then done)."""
        doc, existing = work.doc, work.existing
        assert doc is not None
        if existing is None or existing.content_hash != doc.content_hash or existing.chunking != chunking:
            return
        title = work.item.title or doc.title or existing.title
        labels = RelabelRequest(
            content_hash=doc.content_hash, source=work.source, title=title, tags=work.tags,
            metadata=work.item.metadata or {},
        )  # fmt: skip
        same = (existing.source, existing.title, set(existing.tags), existing.metadata) == (
            labels.source, labels.title, set(labels.tags), labels.metadata,
        )  # fmt: skip
        status = "skipped"
        if not same:  # a write: once sent, it is seen through (a cancel must not report it unwritten)
            status = (await uninterrupted(self.backend.relabel(collection, existing.doc_id, labels))).status
        work.outcome = IngestOutcome(
            status=status, doc_id=existing.doc_id, collection=collection, key=doc.key, source=labels.source,  # type: ignore[arg-type]  # the gateway answers one of the statuses the contract names
            title=labels.title or existing.title, file_type=existing.file_type, chunks=existing.chunk_count,
            tokens=existing.token_count, stages=work.stages,
        )  # fmt: skip

    async def _convert(self, works: list[Work], progress: Progress) -> None:
        todo = [w for w in works if w.pending]
        for number, work in enumerate(todo):
            low, width = 0.3 + 0.15 * number / len(todo), 0.15 / len(todo)
            await progress(low, "converting")

            async def pages(done: int, total: int, low: float = low, width: float = width) -> None:
                await progress(low + width * done / total, f"converting page {done}/{total}")

            started = time.perf_counter()
            try:
                await self._convert_one(work, pages)
            except Exception as exc:  # noqa: BLE001 - reported per item
                work.fail(exc)
            finally:
                work.add_stage("parsing_ms", started)

    async def _convert_one(self, work: Work, pages: PageProgress) -> None:
        doc = work.doc
        assert doc is not None
        if doc.markdown is not None:
            work.markdown, work.title = doc.markdown, work.item.title or doc.title or doc.name
        else:
            converted = await self.backend.convert(doc.data or b"", doc.name, pages)
            work.markdown, work.title = converted.markdown, work.item.title or converted.title
            work.page_spans, work.page_count = converted.page_spans, converted.page_count
            work.regions, work.units, work.page_sizes = converted.regions, converted.units, converted.page_sizes
            work.furniture = converted.furniture
            work.pipeline, work.warnings = converted.pipeline, list(converted.warnings)
            work.levels_known = converted.levels_known
            doc.file_type = converted.file_type
        self.check_text(work.markdown, minimum=doc.is_text_input)

    async def _chunk(self, works: list[Work], chunking: str, progress: Progress) -> None:
        todo = [w for w in works if w.pending]
        if not todo:
            return
        await progress(0.45, "chunking")
        started = time.perf_counter()
        requests = [self.chunk_request(w.markdown, chunking, w.page_spans, w.regions, w.units) for w in todo]
        answer = await self.backend.chunk_batch(requests)
        for work, chunked in zip(todo, answer.results, strict=True):
            work.stages["chunking_ms"] = round(chunked.chunking_ms or (time.perf_counter() - started) * 1000, 1)
            if chunked.chunks:
                work.chunks = chunked
            else:
                work.fail(no_text())

    async def _embed(self, works: list[Work], progress: Progress) -> None:
        """Embed in batches of EMBED_BATCH chunks: progress after each, and a cancel takes effect between them."""
        todo = [w for w in works if w.pending and w.chunks is not None]
        passages = [(w, PassageIn(title=w.title, heading_path=c.heading_path, text=c.text))
                    for w in todo for c in w.chunks.chunks]  # type: ignore[union-attr]  # chunked work items have their chunks  # fmt: skip
        for start in range(0, len(passages), EMBED_BATCH):
            await progress(0.5 + 0.45 * start / len(passages), "embedding")
            batch = passages[start : start + EMBED_BATCH]
            started = time.perf_counter()
            answer = await self.backend.embed_passages([p for _, p in batch])
            elapsed = (time.perf_counter() - started) * 1000
            for (work, _), vector in zip(batch, answer.vectors, strict=True):
                work.vectors.append(vector)
                work.model = answer.model
                work.stages["embedding_ms"] = round(work.stages.get("embedding_ms", 0.0) + elapsed / len(batch), 1)

    async def _store(self, works: list[Work], collection: str, chunking: str, force: bool, progress: Progress) -> None:
        todo = [w for w in works if w.pending and w.chunks is not None]
        if not todo:
            return
        await progress(0.95, "storing")
        started = time.perf_counter()
        for work in todo:
            await self._keep_original(work, collection)
        job = current_job()
        requests = [self.upsert_request(w, chunking, force, job.order) for w in todo]
        async with self._storing.setdefault(collection, asyncio.Lock()):
            # The gateway commits atomically; interrupting the call would not undo it, so nothing interrupts it:
            # not an anyio cancel scope (the shield), not asyncio's Task.cancel (uninterrupted: a rollout, a timeout).
            with anyio.CancelScope(shield=True):
                answer = await uninterrupted(
                    self.backend.upsert_batch(collection, requests, commit_within_ms=job.commit_budget_ms())
                )
                for work in todo:
                    if work.legacy is not None:
                        await uninterrupted(self._drop_legacy(collection, work))
        storing = (time.perf_counter() - started) * 1000
        for work, saved in zip(todo, answer.results, strict=True):
            work.stages["storing_ms"] = round(
                storing * len(work.vectors) / max(1, sum(len(w.vectors) for w in todo)), 1
            )
            status = "replaced" if work.legacy is not None and saved.status == "indexed" else saved.status
            work.outcome = IngestOutcome(
                status=status, doc_id=saved.doc_id, collection=collection, key=work.doc.key,  # type: ignore[union-attr]  # a work item past acquisition has its doc (and, past chunking, its chunks)
                source=work.source, title=work.title, file_type=work.doc.file_type,  # type: ignore[union-attr]  # a work item past acquisition has its doc (and, past chunking, its chunks)
                chunks=saved.chunk_count, tokens=work.chunks.total_tokens,  # type: ignore[union-attr]  # a work item past acquisition has its doc (and, past chunking, its chunks)
                stages=work.stages, warnings=[*work.warnings, *work.chunks.warnings, *saved.warnings],  # type: ignore[union-attr]  # a work item past acquisition has its doc (and, past chunking, its chunks)
                page_count=work.page_count, pipeline=work.pipeline,
            )  # fmt: skip

    async def _keep_original(self, work: Work, collection: str) -> None:
        """A located document's original goes to the gateway before the document is written, so that its pages can
        be shown; one that is not kept (the folder full, originals off) leaves its text indexed, and says so."""
        doc = work.doc
        if doc is None or doc.data is None or not work.page_sizes:
            return
        try:
            await self.backend.keep_original(collection, doc.content_hash, doc.data)
        except UpstreamError as exc:
            work.warnings.append(f"Its pages cannot be shown: {exc.message}")

    async def _drop_legacy(self, collection: str, work: Work) -> None:
        try:
            await self.backend.delete_document(collection, work.legacy.doc_id)  # type: ignore[union-attr]  # this branch runs only for a work item stored under its pre-0.3 identity
        except UpstreamError as exc:
            work.warnings.append(f"The copy stored under the old identity could not be removed: {exc.message}")

    # -- helpers -----------------------------------------------------------------------------
    async def find_many(self, collection: str, keys: list[str]) -> dict[str, DocumentInfo]:
        """The stored documents with these keys ({} also when the collection does not exist yet)."""
        found: dict[str, DocumentInfo] = {}
        unique = list(dict.fromkeys(keys))
        for start in range(0, len(unique), FIND_BATCH):
            try:
                listing = await self.backend.find_documents(collection, unique[start : start + FIND_BATCH])
            except CollectionNotFound:
                return {}
            found.update({doc.key: doc for doc in listing.documents})
        return found

    def upsert_request(self, work: Work, chunking: str, force: bool, order: int | None = None) -> UpsertDocumentRequest:
        doc, chunked = work.doc, work.chunks
        assert doc is not None and chunked is not None
        # Levels the converter guessed are not stored as the document's: its outline then says levels_known false.
        dropped = set() if work.levels_known else {"heading_levels"}
        furniture = furniture_by_chunk(chunked.chunks, work.furniture)
        return UpsertDocumentRequest(
            source=work.source[:2048], key=doc.key, title=work.title[:1024], file_type=doc.file_type,
            content_hash=doc.content_hash, page_count=work.page_count or None, last_modified=doc.last_modified,
            tags=work.tags, metadata=work.item.metadata or {},
            chunks=[ChunkIn(**c.model_dump(exclude=dropped), furniture=furniture.get(c.index, []))
                    for c in chunked.chunks],
            chunking=chunking, force=force, vectors=work.vectors, embedding_model=work.model, order=order,
            page_sizes=work.page_sizes,
        )  # fmt: skip

    @staticmethod
    def chunk_request(
        markdown: str,
        chunking: str,
        page_spans: list[PageSpan] | None = None,
        regions: list[Region] | None = None,
        units: list[Unit] | None = None,
    ) -> ChunkRequest:
        return ChunkRequest(text=markdown, preset=chunking, page_spans=page_spans or [], regions=regions or [],  # type: ignore[arg-type]  # the chunking name was checked against the presets before
                            units=units or [])  # fmt: skip

    def check_text(self, text: str, *, minimum: bool) -> None:
        """Text to index must have letters or digits; text handed over directly must also be of useful length."""
        stripped = text.strip()
        if not stripped:
            raise no_text()
        if minimum and len(stripped) < self.settings.min_text_chars:
            raise ToolFailure(
                f"Text too short ({len(stripped)} characters). Minimum is {self.settings.min_text_chars} "
                "characters for meaningful chunking.",
                "Provide more content or combine with other text before ingesting.",
                code="TEXT_TOO_SHORT",
            )
        if not any(character.isalnum() for character in stripped):
            raise ToolFailure(
                "Text has no letters or digits (only punctuation, symbols or control characters).",
                "Send the readable text of the document; if it came from a file, check the file is not damaged.",
                code="NO_TEXT",
            )
        if minimum and len(text.encode()) > self.settings.max_payload_bytes:
            raise ToolFailure(
                f"Text too long ({len(text.encode()) / 2**20:.1f} MiB of UTF-8). The limit on what a call carries is "
                f"{self.settings.max_payload_mb} MiB (INGESTION_MCP_MAX_PAYLOAD_MB).",
                "Split the text into several ingest_text calls, or save it as a file and use ingest_document.",
                code="TEXT_TOO_LONG",
            )
        if not minimum and len(text) > self.settings.max_text_chars:
            raise ToolFailure(
                f"Text too long ({len(text)} characters). Maximum is {self.settings.max_text_chars} "
                "(INGESTION_MCP_MAX_TEXT_CHARS).",
                "Split the document into smaller files, or raise INGESTION_MCP_MAX_TEXT_CHARS.",
                code="TEXT_TOO_LONG",
            )

    # -- the ways in, each a batch of one ----------------------------------------------------
    async def ingest_file(
        self, file_path: str, *, collection: str, source: str | None = None, tags: list[str] | None = None,
        chunking: str = "default", metadata: dict[str, Any] | None = None, force: bool = False,
        progress: Progress = _no_progress, key: str | None = None,
    ) -> IngestOutcome:  # fmt: skip
        item = IngestItem(
            lambda: acquire.from_file(file_path, self.settings, key=key), label=file_path, source=source,
            tags=tags, metadata=metadata,
        )  # fmt: skip
        return await self.ingest_one(item, collection=collection, chunking=chunking, force=force, progress=progress)

    async def ingest_bytes(
        self, data: bytes, file_name: str, *, collection: str, key: str, source: str | None = None,
        tags: list[str] | None = None, chunking: str = "default", metadata: dict[str, Any] | None = None,
        last_modified: str = "", force: bool = False, progress: Progress = _no_progress,
    ) -> IngestOutcome:  # fmt: skip
        async def acquired() -> Acquired:
            return acquire.from_bytes(data, file_name, key=key, last_modified=last_modified or acquire.now_iso())

        item = IngestItem(acquired, label=file_name, source=source, tags=tags, metadata=metadata)
        return await self.ingest_one(item, collection=collection, chunking=chunking, force=force, progress=progress)

    async def ingest_text(
        self, text: str, *, collection: str, name: str | None = None, source: str | None = None,
        tags: list[str] | None = None, chunking: str = "default", metadata: dict[str, Any] | None = None,
        file_type: str | None = None, force: bool = False, progress: Progress = _no_progress,
    ) -> IngestOutcome:  # fmt: skip
        return await self.ingest_one(
            text_item(text, name=name, source=source, tags=tags, metadata=metadata, file_type=file_type),
            collection=collection, chunking=chunking, force=force, progress=progress,
        )  # fmt: skip

    async def ingest_url(
        self, url: str, *, policy: SourcePolicy, collection: str, source: str | None = None,
        tags: list[str] | None = None, chunking: str = "default", metadata: dict[str, Any] | None = None,
        default_source: Literal["url", "domain"] = "url", force: bool = False, progress: Progress = _no_progress,
    ) -> IngestOutcome:  # fmt: skip
        """Fetched under the SSRF policy; the key is the normalised final URL (after redirects)."""

        async def fetched() -> Acquired:
            doc = await acquire.from_url(url, policy)
            doc.default_source = acquire.url_domain(doc.key) if default_source == "domain" else doc.key
            return doc

        item = IngestItem(fetched, label=url, source=source, tags=tags, metadata=metadata)
        return await self.ingest_one(item, collection=collection, chunking=chunking, force=force, progress=progress)

    async def ingest_many(
        self, items: list[BatchItem], *, collection: str, tags: list[str] | None = None,
        chunking: str = "default", force: bool = False, progress: Progress = _no_progress,
    ) -> list[IngestOutcome | ToolFailure]:  # fmt: skip
        """Many files and texts through the same stages as one (embedding batched across documents)."""
        return await self.ingest(
            [batch_item(item, self.settings, tags) for item in items],
            collection=collection, chunking=chunking, force=force, progress=progress,
        )  # fmt: skip


def text_item(
    text: str, *, name: str | None, source: str | None = None, tags: list[str] | None = None,
    metadata: dict[str, Any] | None = None, file_type: str | None = None, key: str | None = None,
) -> IngestItem:  # fmt: skip
    async def acquired() -> Acquired:
        return acquire.from_text(text, name=name, file_type=file_type, key=key)

    return IngestItem(acquired, label=name or "text", source=source, tags=tags, metadata=metadata)


def batch_item(item: BatchItem, settings: McpSettings, tags: list[str] | None) -> IngestItem:
    if item.text is not None:
        return text_item(item.text, name=item.name, source=item.source, tags=tags, metadata=item.metadata, key=item.key)
    path = item.file_path or ""

    async def acquired() -> Acquired:
        return await acquire.from_file(path, settings, key=item.key, as_text=item.as_text, walked=item.walked)

    return IngestItem(acquired, label=item.label, source=item.source, tags=tags, metadata=item.metadata)


def no_text() -> ToolFailure:
    return ToolFailure(
        "The document has no extractable text (it may be scanned images or empty).",
        "Provide the text via ingest_text, or enable OCR in the docling service.",
        code="NO_TEXT",
    )
