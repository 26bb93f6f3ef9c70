"""The reading order of OCR lines on a page laid out in columns (geometry only, no I/O).

RapidOCR returns a page's lines sorted top to bottom, left to right: on a two-column page that reads across the
columns, a line of the left column then the line beside it in the right one. Here a page's lines are cut at a
column gutter: an x-range, well inside the text, that no line crosses but a few spanning ones (a title, a running
head, a full-width caption), with a column of text lines on each side side by side. The spanning lines cut the page
into bands, top to bottom; in each band the left column is read before the right one. Each column is cut again the
same way (three columns), a band at most four times. A page with no such gutter (one column, a table whose first
column holds short cells, a list of short lines) keeps the order it came in.

Born-digital pages never come here: their lines come in the PDF's own order (segments.document_lines).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

Box = tuple[float, float, float, float]  # left, top, right, bottom (y grows downwards)

# The gutter is looked for in the middle of the text: this share of its width on either side is left out.
EDGE_SHARE = 0.15
# A gutter is at least this many (median) line heights wide: a word gap is ~0.3, a column gutter 1.5-3.
MIN_GUTTER_HEIGHTS = 1.0
# At most this share of the lines may cross a gutter (the spanning ones).
MAX_SPANNING_SHARE = 0.2
# Each side is a column of text: at least this many lines, of a median width of at least this share of the text's.
MIN_COLUMN_LINES = 3
MIN_COLUMN_WIDTH_SHARE = 0.2
# The two sides stand side by side: their vertical extents overlap by at least this share of the shorter one's.
MIN_SIDE_BY_SIDE = 0.5
MAX_DEPTH = 4


def column_order(boxes: Sequence[Box]) -> list[int]:
    """The indices of ``boxes`` in reading order: column by column where the page has columns, else as given."""
    return _order(list(range(len(boxes))), boxes, MAX_DEPTH)


def _order(indices: list[int], boxes: Sequence[Box], depth: int) -> list[int]:
    cut = _gutter(indices, boxes) if depth > 0 else None
    if cut is None:
        return indices
    spanning = sorted((i for i in indices if boxes[i][0] < cut < boxes[i][2]), key=lambda i: boxes[i][1])
    ordered: list[int] = []
    rest = [i for i in indices if not boxes[i][0] < cut < boxes[i][2]]
    for bottom in [*(boxes[i][1] for i in spanning), float("inf")]:
        band = [i for i in rest if (boxes[i][1] + boxes[i][3]) / 2 < bottom]
        rest = [i for i in rest if (boxes[i][1] + boxes[i][3]) / 2 >= bottom]
        left = [i for i in band if boxes[i][2] <= cut]
        right = [i for i in band if boxes[i][0] >= cut]
        ordered += _order(left, boxes, depth - 1) + _order(right, boxes, depth - 1)
        if spanning:
            ordered.append(spanning.pop(0))
    return ordered


def _gutter(indices: list[int], boxes: Sequence[Box]) -> float | None:
    """Where the lines are cut into two columns (an x), or None when they are not in columns."""
    if len(indices) < 2 * MIN_COLUMN_LINES:
        return None
    lefts = np.array([boxes[i][0] for i in indices])
    rights = np.array([boxes[i][2] for i in indices])
    heights = np.array([boxes[i][3] - boxes[i][1] for i in indices])
    start, end = float(lefts.min()), float(rights.max())
    width = end - start
    if width <= 0:
        return None
    # How many lines cross each x, in steps of a quarter unit (point or pixel), or of 1/2000 of the width.
    xs = np.arange(start + EDGE_SHARE * width, end - EDGE_SHARE * width, max(width / 2000, 0.25))
    if len(xs) == 0:
        return None
    crossing = ((lefts[None, :] < xs[:, None]) & (xs[:, None] < rights[None, :])).sum(axis=1)
    fewest = int(crossing.min())
    if fewest > MAX_SPANNING_SHARE * len(indices):
        return None
    # The widest run of x where only the fewest lines cross: the gutter; the cut is at its middle.
    edges = np.flatnonzero(np.diff(np.concatenate(([0], (crossing == fewest).astype(int), [0]))))
    starts, ends = edges[::2], edges[1::2] - 1
    widest = int(np.argmax(xs[ends] - xs[starts]))
    best = float(xs[starts[widest]]), float(xs[ends[widest]])
    if best[1] - best[0] < MIN_GUTTER_HEIGHTS * float(np.median(heights)):
        return None
    cut = (best[0] + best[1]) / 2
    left = [i for i in indices if boxes[i][2] <= cut]
    right = [i for i in indices if boxes[i][0] >= cut]
    return cut if _column(left, boxes, width) and _column(right, boxes, width) and _beside(left, right, boxes) else None


def _column(indices: list[int], boxes: Sequence[Box], width: float) -> bool:
    if len(indices) < MIN_COLUMN_LINES:
        return False
    return float(np.median([boxes[i][2] - boxes[i][0] for i in indices])) >= MIN_COLUMN_WIDTH_SHARE * width


def _beside(left: list[int], right: list[int], boxes: Sequence[Box]) -> bool:
    def extent(indices: list[int]) -> tuple[float, float]:
        return min(boxes[i][1] for i in indices), max(boxes[i][3] for i in indices)

    (a0, a1), (b0, b1) = extent(left), extent(right)
    shorter = min(a1 - a0, b1 - b0)
    return shorter > 0 and min(a1, b1) - max(a0, b0) >= MIN_SIDE_BY_SIDE * shorter
