"""Where a chunk lies on its pages: the converter's regions (a printed line or table row each, as offsets in the
text) cut to the chunk's range.

A chunk that starts or ends inside a line gets that line's box cut in proportion to the characters it holds (a
chunk starts at a word boundary; proportion is within a word or two of the glyphs). Lines stay one box each: one
box over a paragraph would mark the leading between its lines too (a fifth of its area in 10 on 12 pt type); the
gateway stores a run of lines compactly (vector_gateway/boxes.py). Offsets become the chunk's own (a table header
put in front shifts them). Units (tables, figures) are handed on whole, with the document's offsets.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence

from ingestion_contracts.regions import Region, Unit


def _cut(region: Region, start: int, end: int) -> Region:
    """``region`` limited to characters start..end (inside it): its box cut in proportion."""
    if start <= region.start and end >= region.end:
        return region
    first, last = max(start, region.start), min(end, region.end)
    length = max(region.end - region.start, 1)
    x0, top, x1, bottom = region.box
    left = x0 + (x1 - x0) * (first - region.start) / length
    right = x0 + (x1 - x0) * (last - region.start) / length
    return Region(page=region.page, start=first, end=last, box=(round(left, 1), top, round(right, 1), bottom))


class RegionIndex:
    """The converter's regions and units of one text, looked up by character range."""

    def __init__(self, regions: Sequence[Region], units: Sequence[Unit]) -> None:
        self._regions = sorted(regions, key=lambda r: (r.start, r.end))
        self._ends = [r.end for r in self._regions]
        self._units = list(units)

    def __bool__(self) -> bool:
        return bool(self._regions or self._units)

    def boxes(self, start: int, end: int, shift: int = 0) -> list[Region]:
        """The boxes of characters start..end, as offsets in a chunk whose text begins with character ``start``
        at offset ``shift`` (the length of what was put in front of it)."""
        found = []
        for index in range(bisect_right(self._ends, start), len(self._regions)):
            region = self._regions[index]
            if region.start >= end:
                break
            if region.end > start and region.end > region.start:
                found.append(_cut(region, start, end))
        return [Region(page=r.page, start=r.start - start + shift, end=r.end - start + shift, box=r.box) for r in found]

    def units(self, start: int, end: int) -> list[Unit]:
        """Tables and figures whose text lies (in part) in start..end; one without text where it is anchored."""
        return [
            u for u in self._units if (u.start < end and u.end > start) or (u.start == u.end and start <= u.start < end)
        ]
