"""Which page a hit cites: the page that holds the passage the query matched, or most of the chunk.

A chunk may span a page break (a paragraph that flows onto the next page). Its row keeps the range
(page, page_end) and, under the reserved metadata key, where each page begins in its text (upsert.py).
Citing the first page named the wrong page for every match past the break (issue 21). So the chunk is cut
into pieces (sentences and lines, which never cross a page break: docling ends a block at each page) and
the piece sharing the most query words names the page, each word weighed by 1 / (pieces of the chunk that
hold it): a word found all over the chunk says nothing about where the match is. A query that shares no
word with the chunk (a semantic hit on a paraphrase) cites the page holding most of the chunk's text.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import Counter
from collections.abc import Sequence
from typing import Any

from ingestion_contracts.gateway import RESERVED_METADATA_KEY

from .lexical import ENGLISH_STOP_WORDS, stem

PageStarts = Sequence[tuple[int, int]]  # (offset in the chunk's text, page), in order of offset
_PIECE = re.compile(r"[^\n.!?]+[.!?]*")  # a sentence, or a line of one (a heading, a table row)
_WORD = re.compile(r"\w+")


def with_page_starts(stored: dict[str, Any], starts: PageStarts) -> dict[str, Any]:
    """A chunk row's metadata (upsert.stored_metadata) plus, for a chunk across a page break, where each page
    begins in its text: kept in the JSON field every row has, so collections made before need no new field."""
    if starts:
        stored[RESERVED_METADATA_KEY] = {**stored[RESERVED_METADATA_KEY], "pages": [[o, p] for o, p in starts]}
    return stored


def stored_page_starts(stored: dict[str, Any] | None) -> list[tuple[int, int]]:
    """The page starts a row was written with; none for a chunk on one page, or one written before they were."""
    ingest = (stored or {}).get(RESERVED_METADATA_KEY) or {}
    return [(int(offset), int(page)) for offset, page in ingest.get("pages") or []]


def terms(text: str) -> set[str]:
    """Content words of ``text``, stemmed as BM25 sees them (lexical.py), whatever a collection's analysis."""
    return {stem(word) for word in _WORD.findall(text.lower()) if word not in ENGLISH_STOP_WORDS}


def page_at(starts: PageStarts, offset: int) -> int | None:
    """Page of the character at ``offset``; None before the first start (a repeated table header)."""
    i = bisect_right([o for o, _ in starts], offset) - 1
    return starts[i][1] if i >= 0 else None


def page_sizes(starts: PageStarts, length: int) -> Counter[int]:
    """Characters of the chunk's text on each page."""
    ends = [o for o, _ in starts[1:]] + [length]
    sizes: Counter[int] = Counter()
    for (offset, page), end in zip(starts, ends, strict=True):
        sizes[page] += max(0, end - offset)
    return sizes


def matched_pages(text: str, starts: PageStarts, query: str) -> dict[int, float]:
    """Each page's best piece score against the query's words (pages without a shared word left out)."""
    wanted = terms(query)
    if not wanted:
        return {}
    pieces = [(page_at(starts, m.start()), terms(m.group()) & wanted) for m in _PIECE.finditer(text)]
    spread = Counter(word for _, found in pieces for word in found)
    best: dict[int, float] = {}
    for page, found in pieces:
        if page is not None and found:
            score = sum(1 / spread[word] for word in found)
            best[page] = max(best.get(page, 0.0), score)
    return best


def cited_page(text: str, starts: PageStarts, query: str, first: int | None) -> int | None:
    """The page to cite for a hit on a chunk: ``first`` (its first page) when it lies on one page or was
    stored without page starts (written before they were kept); else the page of the best-matching piece;
    on a tie, or with no word in common, the page holding most of the chunk (the earlier one of two equal)."""
    if len(starts) < 2:
        return first
    sizes = page_sizes(starts, len(text))
    scores = matched_pages(text, starts, query) if query else {}
    top = max(scores.values(), default=0.0)
    candidates = [page for page, score in scores.items() if score == top] if top else list(sizes)
    return max(candidates, key=lambda page: (sizes[page], -page))
