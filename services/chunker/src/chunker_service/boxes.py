"""Where a chunk lies on its pages: the converter's regions (a printed line or table row each, as offsets in the
text) cut to the chunk's range and joined where they stack into one rectangle.

A chunk that starts or ends inside a line gets that line's box cut in proportion to the characters it holds (a
chunk starts at a word boundary; proportion is within a word or two of the glyphs). Lines one under the other with
the same left and right edges (a justified paragraph's middle) become one box: what a highlighter would draw, and
a few boxes a chunk instead of one per line. Offsets become the chunk's own (a table header put in front shifts
them). Units (tables, figures) are handed on whole, with the document's offsets.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence

from ingestion_contracts.regions import Region, Unit

EDGE = 1.0  # points: lines whose left and right edges agree within this stack into one box
LEADING = 0.6  # a line further below the one above than this many line heights starts another box


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


def _stacks(above: Region, below: Region) -> bool:
    a, b = above.box, below.box
    height = max(b[3] - b[1], 0.1)
    return (
        above.page == below.page
        and abs(a[0] - b[0]) <= EDGE
        and abs(a[2] - b[2]) <= EDGE
        and b[1] >= a[1]
        and b[1] - a[3] <= LEADING * height
    )


def merged(regions: Sequence[Region]) -> list[Region]:
    """Consecutive regions that stack (same page, same edges, the next line right below) as one."""
    out: list[Region] = []
    for region in regions:
        last = out[-1] if out else None
        if last is not None and _stacks(last, region):
            box = (min(last.box[0], region.box[0]), last.box[1], max(last.box[2], region.box[2]), region.box[3])
            out[-1] = Region(page=last.page, start=last.start, end=region.end, box=box)
        else:
            out.append(region)
    return out


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
        return [
            Region(page=r.page, start=r.start - start + shift, end=r.end - start + shift, box=r.box)
            for r in merged(found)
        ]

    def units(self, start: int, end: int) -> list[Unit]:
        """Tables and figures whose text lies (in part) in start..end; one without text where it is anchored."""
        return [
            u for u in self._units if (u.start < end and u.end > start) or (u.start == u.end and start <= u.start < end)
        ]
