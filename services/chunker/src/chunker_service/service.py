"""Requests in, responses out: presets, limits, pages and warnings around the chunker."""

from __future__ import annotations

import time
from collections.abc import Sequence

import anyio
from ingestion_contracts.chunker import (
    PRESETS,
    Chunk,
    ChunkRequest,
    ChunkResponse,
    PageStart,
    PresetInfo,
    PresetsResponse,
)
from ingestion_contracts.regions import Region
from servicekit import PayloadTooLarge, Unprocessable

from .boxes import RegionIndex
from .chunker import ChunkedText, TextChunker
from .pages import InvalidPageSpans, PageIndex
from .spans import ChunkSpan

USE_CASES = {
    "default": "General documents.",
    "dense": "High-precision retrieval: short passages, more of them.",
    "sparse": "Long-form content: fewer, longer passages.",
}


class ChunkingService:
    """Runs chunking off the event loop, at most ``max_concurrency`` jobs at once."""

    def __init__(
        self, chunker: TextChunker, *, model_max_tokens: int, max_text_chars: int, max_concurrency: int
    ) -> None:
        self.chunker = chunker
        self.tokenizer = chunker.counter.name
        self.model_max_tokens = model_max_tokens
        self.max_text_chars = max_text_chars
        self._limiter = anyio.CapacityLimiter(max_concurrency)

    def presets(self) -> PresetsResponse:
        return PresetsResponse(
            presets=[
                PresetInfo(name=name, window_tokens=window, overlap_tokens=overlap, use_case=USE_CASES[name])
                for name, (window, overlap) in PRESETS.items()
            ],
            tokenizer=self.tokenizer,
            model_max_tokens=self.model_max_tokens,
            max_text_chars=self.max_text_chars,
        )

    async def chunk(self, request: ChunkRequest) -> ChunkResponse:
        self._check_size([request])
        return await anyio.to_thread.run_sync(self.chunk_sync, request, limiter=self._limiter)

    async def chunk_batch(self, requests: Sequence[ChunkRequest]) -> list[ChunkResponse]:
        """One thread hop for the whole batch: no per-document overhead beyond the work."""
        self._check_size(requests)
        return await anyio.to_thread.run_sync(self._chunk_all, requests, limiter=self._limiter)

    def _chunk_all(self, requests: Sequence[ChunkRequest]) -> list[ChunkResponse]:
        results = []
        for i, request in enumerate(requests):
            try:
                results.append(self.chunk_sync(request))
            except Unprocessable as exc:
                exc.message = f"items[{i}]: {exc.message}"
                raise
        return results

    def chunk_sync(self, request: ChunkRequest) -> ChunkResponse:
        started = time.perf_counter()
        preset, window, overlap = request.resolved_window()
        try:
            pages = PageIndex(request.page_spans, len(request.text))
        except InvalidPageSpans as exc:
            raise Unprocessable(
                f"Invalid page_spans: {exc}.",
                code="INVALID_PAGE_SPANS",
                suggestion="Send spans with start <= end, as offsets into `text` (docling's page_spans), or none.",
            ) from exc
        chunked = self.chunker.chunk(request.text, window=window, overlap=overlap, markdown=request.markdown)
        chunks = _to_wire(request.text, chunked, pages, RegionIndex(request.regions, request.units))
        return ChunkResponse(
            chunks=chunks,
            preset=preset,
            window_tokens=window,
            overlap_tokens=overlap,
            tokenizer=self.tokenizer,
            total_tokens=chunked.total_tokens,
            model_max_tokens=self.model_max_tokens,
            chunking_ms=round((time.perf_counter() - started) * 1000, 3),
            warnings=self._warnings(window, chunks, pages),
        )

    def _check_size(self, requests: Sequence[ChunkRequest]) -> None:
        total = sum(len(r.text) for r in requests)
        if total <= self.max_text_chars:
            return
        what = "The text has" if len(requests) == 1 else f"The {len(requests)} texts have"
        raise PayloadTooLarge(
            f"{what} {total:,} characters; this service takes at most {self.max_text_chars:,} per request.",
            code="TEXT_TOO_LARGE",
            suggestion="Send fewer documents per batch, or split the text at headings or pages into several requests.",
        )

    def _warnings(self, window: int, chunks: list[Chunk], pages: PageIndex) -> list[str]:
        warnings = []
        if window > self.model_max_tokens:
            fitting = [name for name, (w, _) in PRESETS.items() if w <= self.model_max_tokens]
            limit = self.model_max_tokens
            instead = f"use the {' or '.join(fitting)} preset" if fitting else f"use window_tokens <= {limit}"
            warnings.append(
                f"window of {window} tokens is longer than the {self.model_max_tokens} tokens {self.tokenizer} reads; "
                f"the rest of each chunk is not embedded; {instead}"
            )
        if not chunks:
            warnings.append("the text has no non-whitespace characters; no chunks were made")
        if pages and (missing := sum(1 for c in chunks if c.page is None)):
            warnings.append(f"{missing} of {len(chunks)} chunks start outside every page span; their page is null")
        return warnings


def _to_wire(text: str, chunked: ChunkedText, pages: PageIndex, regions: RegionIndex) -> list[Chunk]:
    return [
        Chunk(
            index=i,
            text=span.prefix + text[span.start : span.end],
            start=span.start,
            end=span.end,
            token_count=span.token_count,
            heading_path=list(span.heading_path),
            heading_levels=list(span.heading_levels),
            page=pages.page_at(span.start) if pages else None,
            page_end=pages.page_at(span.end - 1) if pages else None,
            page_starts=_page_starts(span, pages),
            boxes=_boxes(text, span, regions) if regions else None,
            units=regions.units(span.start, span.end) if regions else [],
        )
        for i, span in enumerate(chunked.chunks)
    ]


def _boxes(text: str, span: ChunkSpan, regions: RegionIndex) -> list[Region]:
    """Where the chunk's text lies: a table header put in front of its rows (tables.py) where that header is printed."""
    header: list[Region] = []
    if span.prefix and (at := text.rfind(span.prefix, 0, span.start)) >= 0:
        header = regions.boxes(at, at + len(span.prefix))
    return header + regions.boxes(span.start, span.end, shift=len(span.prefix))


def _page_starts(span: ChunkSpan, pages: PageIndex) -> list[PageStart]:
    """Where each page begins in the chunk's text (after its prefix), when it spans more than one page:
    what lets a search cite the page of the passage it matched rather than the page the chunk starts on."""
    starts = pages.starts_in(span.start, span.end) if pages else []
    if len(starts) < 2:
        return []
    shift = len(span.prefix) - span.start
    return [PageStart(offset=offset + shift, page=page) for offset, page in starts]
