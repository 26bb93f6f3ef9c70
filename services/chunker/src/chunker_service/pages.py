"""Which page a character offset of the text comes from."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable
from typing import Protocol


class SpanLike(Protocol):
    page: int
    start: int
    end: int


class InvalidPageSpans(ValueError):
    """The page spans do not describe ranges of the text."""


class PageIndex:
    """Page lookup by offset. Spans are sorted; where two overlap, the one that starts first wins."""

    def __init__(self, spans: Iterable[SpanLike], text_length: int) -> None:
        ordered = sorted(spans, key=lambda s: (s.start, s.end, s.page))
        self._starts: list[int] = []
        self._ends: list[int] = []
        self._pages: list[int] = []
        covered = 0
        for span in ordered:
            if span.end < span.start:
                raise InvalidPageSpans(
                    f"page span of page {span.page} ends ({span.end}) before it starts ({span.start})"
                )
            start, end = max(span.start, covered), min(span.end, text_length)
            if start >= end:
                continue
            self._starts.append(start)
            self._ends.append(end)
            self._pages.append(span.page)
            covered = end

    def __bool__(self) -> bool:
        return bool(self._starts)

    def page_at(self, offset: int) -> int | None:
        """Page of the character at ``offset``, or None when no span covers it."""
        i = bisect_right(self._starts, offset) - 1
        if i >= 0 and offset < self._ends[i]:
            return self._pages[i]
        return None

    def starts_in(self, start: int, end: int) -> list[tuple[int, int]]:
        """(offset, page) where each page covering ``start..end`` begins, clamped to ``start``; characters
        in no span are left out (they count as the page before them)."""
        first = max(bisect_right(self._starts, start) - 1, 0)
        starts: list[tuple[int, int]] = []
        for i in range(first, len(self._starts)):
            if self._starts[i] >= end:
                break
            if self._ends[i] > start and (not starts or starts[-1][1] != self._pages[i]):
                starts.append((max(self._starts[i], start), self._pages[i]))
        return starts
