"""The sentences a search cites in a passage (the gateway's SearchHit.cited), as the console shows them: emphasised
in the passage's text, carried to the page view in its address, and scrolled to on the page picture."""

from __future__ import annotations

import re

from ingestion_contracts.gateway import SearchHit

CONTEXT_CHARS = 160  # of the passage's other text, shown around the cited sentences on the search page
_SPAN = re.compile(r"^(\d{1,7})-(\d{1,7})$")


def pieces(text: str, cited: list[list[int]] | None, *, trim: bool = False) -> list[tuple[str, bool]]:
    """``text`` as (piece, cited) pairs in order; with ``trim``, the other text cut to CONTEXT_CHARS around them."""
    found: list[tuple[str, bool]] = []
    at = 0
    for start, end in sorted(cited or []):
        if start >= at and end > start:
            found += [(text[at:start], False), (text[start:end], True)]
            at = end
    found.append((text[at:], False))
    if trim:
        last = len(found) - 1
        found = [(_cut(piece, i == 0, i == last) if not hot else piece, hot) for i, (piece, hot) in enumerate(found)]
    return [(piece, hot) for piece, hot in found if piece]


def _cut(piece: str, first: bool, last: bool) -> str:
    if len(piece) <= CONTEXT_CHARS:
        return piece
    if first:
        return "…" + piece[-CONTEXT_CHARS:]
    if last:
        return piece[:CONTEXT_CHARS] + "…"
    half = CONTEXT_CHARS // 2
    return piece[:half] + " … " + piece[-half:]


def as_param(cited: list[list[int]] | None) -> str:
    """The cited spans in a page view's address (``cited=120-240,250-300``)."""
    return ",".join(f"{start}-{end}" for start, end in cited or [])


def from_param(value: str, length: int) -> list[list[int]]:
    """Spans read back from an address: malformed or out-of-range parts are left out (an address is typed input)."""
    spans = []
    for part in value.split(",")[:4]:
        match = _SPAN.match(part.strip())
        if match and int(match[1]) < int(match[2]) <= length:
            spans.append([int(match[1]), int(match[2])])
    return spans


def cited_top(passage: SearchHit, spans: list[list[int]], page: int) -> float | None:
    """Where the first cited line lies on ``page``, as a percentage of the page's height (None: not on it)."""
    size = next((s for s in passage.page_sizes or [] if s.page == page), None)
    tops = [box.box[1] for box in passage.boxes or [] if box.page == page
            and any(box.start < end and start < box.end for start, end in spans)]  # fmt: skip
    if size is None or not tops or size.height <= 0:
        return None
    return round(100 * min(tops) / size.height, 2)
