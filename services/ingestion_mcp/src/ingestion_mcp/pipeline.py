"""The ingest pipeline: source bytes -> docling -> chunker -> vector gateway, with dedup by hash.

Every tool profile calls this one core; none of them has ingest logic of its own.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import anyio
from ingestion_contracts.chunker import ChunkRequest, ChunkResponse
from ingestion_contracts.docling import EXTENSIONS, SUPPORTED_FILE_TYPES, PageSpan
from ingestion_contracts.gateway import ChunkIn, UpsertDocumentRequest

from .backend import Backend
from .errors import ToolFailure, UpstreamError, failure_from
from .settings import McpSettings
from .sources import SourcePolicy, fetch_url, html_to_markdown
from .sources.paths import resolve_allowed

Progress = Callable[[float, str], Awaitable[None]]
Status = Literal["indexed", "replaced", "skipped"]


async def _no_progress(_: float, __: str) -> None:
    return None


@dataclass
class IngestOutcome:
    status: Status
    doc_id: str
    collection: str
    source: str
    title: str
    file_type: str
    chunks: int
    tokens: int
    stages: dict[str, float] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    page_count: int | None = None
    pipeline: str | None = None
    started: float = field(default_factory=time.perf_counter)

    @property
    def processing_ms(self) -> float:
        return round((time.perf_counter() - self.started) * 1000, 1)


@dataclass
class BatchItem:
    """One document of a batch: a file path or a text."""

    file_path: str | None = None
    text: str | None = None
    name: str | None = None
    source: str | None = None
    metadata: dict[str, Any] | None = None
    key: str = ""  # the dedup key (source), set while preparing

    @property
    def label(self) -> str:
        return self.name or self.file_path or self.source or "text"


@dataclass
class Converted:
    """A document as Markdown, from docling or given as text."""

    markdown: str
    title: str
    file_type: str
    page_spans: list[PageSpan] = field(default_factory=list)
    page_count: int | None = None
    pipeline: str | None = None
    warnings: list[str] = field(default_factory=list)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def supported_types_text() -> str:
    return ", ".join(t.upper() for t in SUPPORTED_FILE_TYPES)


def file_type_of(path: Path) -> str:
    file_type = EXTENSIONS.get(path.suffix.lower())
    if file_type is None:
        raise ToolFailure(
            f"Unsupported file type: {path.suffix or '(no extension)'}. Supported types: {supported_types_text()}.",
            "Convert the file to a supported format or use ingest_text with pre-extracted content.",
            code="UNSUPPORTED_FORMAT",
        )
    return file_type


class Ingestor:
    def __init__(self, backend: Backend, settings: McpSettings) -> None:
        self.backend = backend
        self.settings = settings

    # -- entry points ---------------------------------------------------------------------
    async def ingest_file(
        self,
        file_path: str,
        *,
        collection: str,
        source: str | None = None,
        tags: list[str] | None = None,
        chunking: str = "default",
        metadata: dict[str, Any] | None = None,
        progress: Progress = _no_progress,
    ) -> IngestOutcome:
        path = resolve_allowed(file_path, self.settings.allowed_roots)
        file_type_of(path)
        data = await anyio.to_thread.run_sync(self._read_limited, path)
        modified = datetime.fromtimestamp(path.stat().st_mtime, UTC).isoformat(timespec="seconds")
        return await self.ingest_bytes(
            data, path.name, collection=collection, source=source or str(path), tags=tags,
            chunking=chunking, metadata=metadata, last_modified=modified, progress=progress,
        )  # fmt: skip

    async def ingest_bytes(
        self,
        data: bytes,
        file_name: str,
        *,
        collection: str,
        source: str,
        tags: list[str] | None = None,
        chunking: str = "default",
        metadata: dict[str, Any] | None = None,
        last_modified: str = "",
        progress: Progress = _no_progress,
    ) -> IngestOutcome:
        content_hash = sha256(data)
        outcome = await self._skip_if_unchanged(collection, source, content_hash)
        if outcome:
            return outcome
        await progress(0.1, "converting")
        started = time.perf_counter()
        converted = await self.backend.convert(data, file_name)
        parsing_ms = (time.perf_counter() - started) * 1000
        doc = Converted(
            markdown=converted.markdown, title=converted.title, file_type=converted.file_type,
            page_spans=converted.page_spans, page_count=converted.page_count,
            pipeline=converted.pipeline, warnings=list(converted.warnings),
        )  # fmt: skip
        outcome = await self._chunk_and_store(
            doc, collection=collection, source=source, content_hash=content_hash, tags=tags,
            chunking=chunking, metadata=metadata, last_modified=last_modified, progress=progress,
        )  # fmt: skip
        outcome.stages = {"parsing_ms": round(parsing_ms, 1), **outcome.stages}
        return outcome

    async def ingest_text(
        self,
        text: str,
        *,
        collection: str,
        name: str | None = None,
        source: str | None = None,
        tags: list[str] | None = None,
        chunking: str = "default",
        metadata: dict[str, Any] | None = None,
        file_type: str | None = None,
        progress: Progress = _no_progress,
    ) -> IngestOutcome:
        self._check_text(text)
        content_hash = sha256(text.encode("utf-8"))
        name = name or f"text-{content_hash[:12]}"
        key = source or name
        outcome = await self._skip_if_unchanged(collection, key, content_hash)
        if outcome:
            return outcome
        doc = Converted(markdown=text, title=name, file_type=file_type or ("md" if _looks_markdown(text) else "txt"))
        modified = datetime.now(UTC).isoformat(timespec="seconds")
        return await self._chunk_and_store(
            doc, collection=collection, source=key, content_hash=content_hash, tags=tags,
            chunking=chunking, metadata=metadata, last_modified=modified, progress=progress,
        )  # fmt: skip

    async def ingest_url(
        self,
        url: str,
        *,
        policy: SourcePolicy,
        collection: str,
        tags: list[str] | None = None,
        chunking: str = "default",
        metadata: dict[str, Any] | None = None,
        progress: Progress = _no_progress,
    ) -> IngestOutcome:
        """Fetch safely, then route by what the bytes are: documents to docling, HTML to main-content
        extraction, text as-is. The final URL (after redirects) is the source and the dedup key."""
        await progress(0.05, "downloading")
        fetched = await fetch_url(url, policy=policy)
        common = {"collection": collection, "tags": tags, "chunking": chunking, "metadata": metadata}
        if fetched.kind in ("pdf", "docx", "pptx", "xlsx"):
            name = fetched.filename or f"download.{fetched.kind}"
            if not name.lower().endswith(f".{fetched.kind}"):
                name = f"{name}.{fetched.kind}"
            return await self.ingest_bytes(fetched.data, name, source=fetched.final_url, progress=progress, **common)
        if fetched.kind == "html":
            page = html_to_markdown(fetched.data, url=fetched.final_url)
            title = page.title or fetched.final_url
            return await self.ingest_text(
                page.markdown, name=title, source=fetched.final_url, file_type="html", progress=progress, **common
            )
        return await self.ingest_text(
            fetched.text(), name=fetched.filename or fetched.final_url, source=fetched.final_url,
            file_type=fetched.kind, progress=progress, **common,
        )  # fmt: skip

    async def ingest_many(
        self,
        items: list[BatchItem],
        *,
        collection: str,
        tags: list[str] | None = None,
        chunking: str = "default",
        progress: Progress = _no_progress,
    ) -> list[IngestOutcome | ToolFailure]:
        """Ingest many documents with one chunker call and one gateway call (embedding batched across
        documents). A bad item fails alone; the others land."""
        prepared: list[tuple[BatchItem, Converted, str] | IngestOutcome | ToolFailure] = []
        for number, item in enumerate(items):
            await progress(0.5 * number / len(items), "converting")
            try:
                prepared.append(await self._prepare(item, collection))
            except Exception as exc:  # noqa: BLE001 - reported per item
                prepared.append(failure_from(exc))
        ready = [p for p in prepared if isinstance(p, tuple)]
        stored: dict[int, IngestOutcome] = {}
        if ready:
            await progress(0.5, "chunking")
            chunked = await self.backend.chunk_batch([self.chunk_request(doc, chunking) for _, doc, _ in ready])
            await progress(0.6, "embedding")
            requests = [
                self._upsert_request(doc, item.key, content_hash, tags, item.metadata, chunks)
                for (item, doc, content_hash), chunks in zip(ready, chunked.results, strict=True)
            ]
            answer = await self.backend.upsert_batch(collection, requests)
            for (item, doc, _), chunks, saved in zip(ready, chunked.results, answer.results, strict=True):
                stored[id(item)] = IngestOutcome(
                    status=saved.status, doc_id=saved.doc_id, collection=collection, source=item.key,
                    title=doc.title, file_type=doc.file_type, chunks=saved.chunk_count, tokens=chunks.total_tokens,
                    warnings=[*doc.warnings, *chunks.warnings, *saved.warnings],
                )  # fmt: skip
        await progress(1.0, "done")
        return [stored[id(p[0])] if isinstance(p, tuple) else p for p in prepared]

    async def _prepare(self, item: BatchItem, collection: str) -> tuple[BatchItem, Converted, str] | IngestOutcome:
        if item.text is not None:
            self._check_text(item.text)
            content_hash = sha256(item.text.encode("utf-8"))
            item.key = item.source or item.name or f"text-{content_hash[:12]}"
            title = item.name or item.key
            return item, Converted(markdown=item.text, title=title, file_type="md"), content_hash
        path = resolve_allowed(item.file_path or "", self.settings.allowed_roots)
        file_type_of(path)
        data = await anyio.to_thread.run_sync(self._read_limited, path)
        content_hash = sha256(data)
        item.key = item.source or str(path)
        skipped = await self._skip_if_unchanged(collection, item.key, content_hash)
        if skipped:
            return skipped
        converted = await self.backend.convert(data, path.name)
        doc = Converted(
            markdown=converted.markdown, title=converted.title, file_type=converted.file_type,
            page_spans=converted.page_spans, page_count=converted.page_count, pipeline=converted.pipeline,
            warnings=list(converted.warnings),
        )  # fmt: skip
        if not doc.markdown.strip():
            raise _no_text()
        return item, doc, content_hash

    # -- steps ----------------------------------------------------------------------------
    def _read_limited(self, path: Path) -> bytes:
        limit = self.settings.max_file_mb * 1024 * 1024
        size = path.stat().st_size
        if size > limit:
            raise ToolFailure(
                f"File too large: {path.name} is {size / 1048576:.1f} MB; the limit is {self.settings.max_file_mb} MB.",
                "Split the document, or raise INGESTION_MCP_MAX_FILE_MB if the services allow it.",
                code="FILE_TOO_LARGE",
            )
        if size == 0:
            raise ToolFailure(f"File is empty: {path.name}.", "Check the file was written completely.", code="EMPTY")
        with path.open("rb") as handle:
            return handle.read(limit + 1)

    def _check_text(self, text: str) -> None:
        stripped = text.strip()
        if len(stripped) < self.settings.min_text_chars:
            raise ToolFailure(
                f"Text too short ({len(stripped)} characters). Minimum is {self.settings.min_text_chars} "
                "characters for meaningful chunking.",
                "Provide more content or combine with other text before ingesting.",
                code="TEXT_TOO_SHORT",
            )
        if not any(character.isalnum() for character in stripped):
            raise ToolFailure(
                "Text has no letters or digits (only punctuation, symbols or control characters).",
                "Send the readable text of the document; if it came from a file, try ingest_document instead.",
                code="NO_TEXT",
            )
        if len(text) > self.settings.max_text_chars:
            raise ToolFailure(
                f"Text too long ({len(text)} characters). Maximum is {self.settings.max_text_chars}.",
                "Split the text into several ingest_text calls, or save it as a file and use ingest_document.",
                code="TEXT_TOO_LONG",
            )

    async def _skip_if_unchanged(self, collection: str, source: str, content_hash: str) -> IngestOutcome | None:
        try:
            listing = await self.backend.list_documents(collection, source=source, limit=1)
        except UpstreamError as exc:
            if exc.status == 404:  # the collection does not exist yet
                return None
            raise
        for doc in listing.documents:
            if doc.content_hash == content_hash:
                return IngestOutcome(
                    status="skipped", doc_id=doc.doc_id, collection=collection, source=doc.source,
                    title=doc.title, file_type=doc.file_type, chunks=doc.chunk_count, tokens=doc.token_count,
                )  # fmt: skip
        return None

    async def _chunk_and_store(
        self,
        doc: Converted,
        *,
        collection: str,
        source: str,
        content_hash: str,
        tags: list[str] | None,
        chunking: str,
        metadata: dict[str, Any] | None,
        last_modified: str,
        progress: Progress,
    ) -> IngestOutcome:
        await progress(0.4, "chunking")
        chunked = await self._chunk(doc, chunking)
        await progress(0.6, "embedding")
        request = self._upsert_request(doc, source, content_hash, tags, metadata, chunked, last_modified)
        stored = await self.backend.upsert(collection, request)
        await progress(1.0, "done")
        return IngestOutcome(
            status=stored.status, doc_id=stored.doc_id, collection=stored.collection, source=source,
            title=doc.title, file_type=doc.file_type, chunks=stored.chunk_count, tokens=chunked.total_tokens,
            page_count=doc.page_count, pipeline=doc.pipeline,
            warnings=[*doc.warnings, *chunked.warnings, *stored.warnings],
            stages={
                "chunking_ms": round(chunked.chunking_ms, 1),
                "embedding_ms": round(stored.timings.embedding_ms, 1),
                "storing_ms": round(stored.timings.storing_ms, 1),
            },
        )  # fmt: skip

    @staticmethod
    def chunk_request(doc: Converted, chunking: str) -> ChunkRequest:
        return ChunkRequest(text=doc.markdown, preset=chunking, page_spans=doc.page_spans)  # type: ignore[arg-type]

    @staticmethod
    def _upsert_request(
        doc: Converted,
        source: str,
        content_hash: str,
        tags: list[str] | None,
        metadata: dict[str, Any] | None,
        chunked: ChunkResponse,
        last_modified: str = "",
    ) -> UpsertDocumentRequest:
        return UpsertDocumentRequest(
            source=source, title=doc.title[:1024], file_type=doc.file_type, content_hash=content_hash,
            last_modified=last_modified, tags=tags or [], metadata=metadata or {},
            chunks=[ChunkIn(**c.model_dump()) for c in chunked.chunks],
        )  # fmt: skip

    async def _chunk(self, doc: Converted, chunking: str) -> ChunkResponse:
        if not doc.markdown.strip():
            raise _no_text()
        chunked = await self.backend.chunk(self.chunk_request(doc, chunking))
        if not chunked.chunks:
            raise _no_text()
        return chunked


def _no_text() -> ToolFailure:
    return ToolFailure(
        "The document has no extractable text (it may be scanned images or empty).",
        "Provide the text via ingest_text, or enable OCR in the docling service.",
        code="NO_TEXT",
    )


def _looks_markdown(text: str) -> bool:
    return any(line.lstrip().startswith(("#", "- ", "* ", "|", "```")) for line in text.splitlines()[:200])
