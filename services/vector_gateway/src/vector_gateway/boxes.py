"""Where a chunk lies on its pages, kept with the chunk in compact form.

Under the reserved metadata key of the chunk's row, like its page starts (citations.py): the JSON field every row
has on both engines, so collections made before need no new field, and a relabel copies it with the rest. Lists of
numbers rather than objects (they multiply by the chunk count; docs/evidence.md):

- ``boxes``: ``[page, start, end, x0, top, x1, bottom]`` per printed line (offsets in the chunk's text, points); a
  run of lines one under the other with the same edges, height and spacing (a paragraph's body) is one entry
  ``[page, start, end, x0, top, x1, bottom, height, [end of each line but the last]]``: its lines are equally
  spaced from ``top`` to ``bottom``, ``height`` high (a fifth of the bytes of a line each, at 12 lines);
- ``units``: ``[kind, page, start, end, x0, top, x1, bottom, caption]`` per table or figure (document offsets);
- ``sizes``: ``[page, width, height]`` per page they name;
- ``furniture``: ``[page, place, text, x0, top, x1, bottom]`` per running head, foot or page number of the pages the
  chunk holds (place ``h`` or ``f``): not in the chunk's text, shown with its page's (outline.py).

A row written before boxes were kept has no ``boxes`` key: it answers None (not located; re-ingest to locate it),
which a located chunk without any box (``[]``) is not.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from ingestion_contracts.gateway import RESERVED_METADATA_KEY, ChunkIn, SearchHit
from ingestion_contracts.regions import Furniture, PageSize, Region, Unit

from .passages import ChunkSpan, Layout


def _number(value: float) -> float | int:
    return int(value) if float(value).is_integer() else round(float(value), 1)


def _box(box: Sequence[float]) -> list[float | int]:
    return [_number(v) for v in box]


EDGE = 0.6  # points: lines of one run agree on their edges and height within this
PITCH = 0.3  # and their spacing


def _joins(run: list[Region], line: Region) -> bool:
    last = run[-1]
    a, b = last.box, line.box
    same = abs(a[0] - b[0]) <= EDGE and abs(a[2] - b[2]) <= EDGE and abs((a[3] - a[1]) - (b[3] - b[1])) <= EDGE
    if line.page != last.page or not same or b[1] <= a[3] - 0.1 or line.start < last.end:
        return False
    pitch = b[1] - a[1]
    return pitch < 3 * (b[3] - b[1]) and (len(run) < 2 or abs(pitch - (a[1] - run[-2].box[1])) <= PITCH)


def _runs(boxes: Sequence[Region]) -> list[list[Region]]:
    runs: list[list[Region]] = []
    for line in boxes:
        if runs and _joins(runs[-1], line):
            runs[-1].append(line)
        else:
            runs.append([line])
    return runs


def _entry(run: list[Region]) -> list[Any]:
    first, last = run[0], run[-1]
    box = (first.box[0], first.box[1], first.box[2], last.box[3])
    entry: list[Any] = [first.page, first.start, last.end, *_box(box)]
    if len(run) > 1:
        height = statistics.fmean(r.box[3] - r.box[1] for r in run)
        entry += [_number(height), [r.end for r in run[:-1]]]
    return entry


def _lines(entry: Sequence[Any]) -> list[Region]:
    page, start, end, x0, top, x1, bottom = entry[:7]
    if len(entry) < 9:
        return [Region(page=page, start=start, end=end, box=(x0, top, x1, bottom))]
    height, ends = entry[7], [*entry[8], end]
    pitch = (bottom - top - height) / max(len(ends) - 1, 1)
    lines, begin = [], start
    for index, stop in enumerate(ends):
        line_top = round(top + index * pitch, 1)
        lines.append(Region(page=page, start=begin, end=stop, box=(x0, line_top, x1, round(line_top + height, 1))))
        begin = stop
    return lines


def compact(chunk: ChunkIn, sizes: dict[int, PageSize]) -> dict[str, Any]:
    """What a chunk's row keeps of its boxes, units, page sizes and furniture (nothing for a chunk that was not
    located)."""
    if chunk.boxes is None:
        return {}
    kept: dict[str, Any] = {"boxes": [_entry(run) for run in _runs(chunk.boxes)]}
    if chunk.furniture:
        kept["furniture"] = [[f.page, f.place[0], f.text, *_box(f.box)] for f in chunk.furniture]
    if chunk.units:
        kept["units"] = [[u.kind, u.page, u.start, u.end, *_box(u.box), u.caption] for u in chunk.units]
    pages = sorted({b.page for b in chunk.boxes} | {u.page for u in chunk.units})
    kept["sizes"] = [[p, _number(sizes[p].width), _number(sizes[p].height)] for p in pages if p in sizes]
    return kept


def with_boxes(stored: dict[str, Any], kept: dict[str, Any]) -> dict[str, Any]:
    """A chunk row's metadata (upsert.stored_metadata) plus what ``compact`` (or a stored row) kept."""
    if kept:
        stored[RESERVED_METADATA_KEY] = {**stored[RESERVED_METADATA_KEY], **kept}
    return stored


def kept_boxes(stored: dict[str, Any] | None) -> dict[str, Any]:
    """The compact boxes, units, sizes and furniture of a stored row, as ``compact`` made them (for a relabel to
    copy)."""
    ingest = (stored or {}).get(RESERVED_METADATA_KEY) or {}
    return {key: ingest[key] for key in ("boxes", "units", "sizes", "furniture") if key in ingest}


def stored_boxes(stored: dict[str, Any] | None) -> list[Region] | None:
    ingest = (stored or {}).get(RESERVED_METADATA_KEY) or {}
    if "boxes" not in ingest:
        return None
    return [line for entry in ingest["boxes"] for line in _lines(entry)]


def stored_units(stored: dict[str, Any] | None) -> list[Unit] | None:
    ingest = (stored or {}).get(RESERVED_METADATA_KEY) or {}
    if "boxes" not in ingest:
        return None
    return [Unit(kind=u[0], page=u[1], start=u[2], end=u[3], box=(u[4], u[5], u[6], u[7]), caption=u[8])
            for u in ingest.get("units") or []]  # fmt: skip


def stored_furniture(stored: dict[str, Any] | None) -> list[Furniture]:
    ingest = (stored or {}).get(RESERVED_METADATA_KEY) or {}
    return [Furniture(page=f[0], place="header" if f[1] == "h" else "footer", text=f[2], box=(f[3], f[4], f[5], f[6]))
            for f in ingest.get("furniture") or []]  # fmt: skip


def stored_sizes(stored: dict[str, Any] | None) -> list[PageSize] | None:
    ingest = (stored or {}).get(RESERVED_METADATA_KEY) or {}
    if "boxes" not in ingest:
        return None
    return [PageSize(page=s[0], width=s[1], height=s[2]) for s in ingest.get("sizes") or []]


def _overlap(a: Region, b: Region) -> bool:
    """The same printed line(s) seen by two chunks (an overlap): same page, offsets and boxes that meet."""
    return a.page == b.page and b.start < a.end and a.start < b.end and a.box[1] < b.box[3] and b.box[1] < a.box[3]


def _joined(a: Region, b: Region) -> Region:
    box = (min(a.box[0], b.box[0]), min(a.box[1], b.box[1]), max(a.box[2], b.box[2]), max(a.box[3], b.box[3]))
    return Region(page=a.page, start=min(a.start, b.start), end=max(a.end, b.end), box=box)


def content_regions(hits: Sequence[SearchHit], laid: Layout) -> tuple[list[Region], list[Unit], list[PageSize]] | None:
    """The boxes of a document's chunks as offsets in its rebuilt text (passages.layout), each printed line once
    (two chunks that overlap both hold its lines); None when its chunks were stored without boxes."""
    if not hits or any(hit.boxes is None for hit in hits):
        return None
    placed: list[Region] = []
    for hit in hits:
        span = ChunkSpan(hit.chunk_index, hit.text, hit.start, hit.end)
        for box in hit.boxes or []:
            start = laid.position(span, box.start)
            end = max(laid.position(span, box.end), start)
            placed.append(Region(page=box.page, start=start, end=end, box=box.box))
    placed.sort(key=lambda r: (r.start, r.end))
    regions: list[Region] = []
    for region in placed:
        match = next((i for i in range(len(regions) - 1, max(len(regions) - 8, -1), -1)
                      if _overlap(regions[i], region)), None)  # fmt: skip
        if match is None:
            regions.append(region)
        else:
            regions[match] = _joined(regions[match], region)
    units: dict[tuple[str, int, tuple[float, ...]], Unit] = {}
    sizes: dict[int, PageSize] = {}
    for hit in hits:
        for unit in hit.units or []:
            shift = laid.origin if laid.by_offsets else unit.start
            units.setdefault((unit.kind, unit.page, unit.box), unit.model_copy(
                update={"start": max(unit.start - shift, 0), "end": max(unit.end - shift, 0)}))  # fmt: skip
        sizes.update({size.page: size for size in hit.page_sizes or []})
    return regions, sorted(units.values(), key=lambda u: u.start), [sizes[p] for p in sorted(sizes)]
