"""A scan's skew, estimated from its own text lines, and boxes of the page read straight mapped back to the page.

The angle is the one at which the ink's projection profile is sharpest (the sum of squared ink counts per row, as
Leptonica's pixFindSkew does): text lines then fall in few rows, separated by blank ones. It is searched coarse
to fine over +-MAX_SKEW degrees on the page scaled down to SEARCH_SIDE pixels, in numpy over the ink pixels'
coordinates (no image is rotated to search). The columns' profile is searched too: a page turned sideways has
its lines vertical, and the same small rotation straightens them. docs/pdf.md says why not a library.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from PIL import Image

Box = tuple[float, float, float, float]

MAX_SKEW = 5.0  # degrees either way; beyond, a page is turned, not skewed (ocr.py turns by 90 and 180)
# Below this the page is read as it is: a 0.1 degree slant lifts a 2000 px line by 3.5 px, less than its ink margin.
MIN_SKEW = 0.1
SEARCH_SIDE = 1000  # pixels of the longest side the angle is searched on
MAX_POINTS = 150_000  # ink pixels the profile counts (evenly drawn): the angle needs no more
MIN_POINTS = 500  # less ink than this: no text lines to measure by
INK_CONTRAST = 48  # grey levels between ink and paper; less: a blank or photographic page
_STEPS = ((MAX_SKEW, 0.5), (0.5, 0.05))  # (half-width, step) of each round, degrees
FIT_HALF = 0.15  # degrees either side of the best step the parabola is fitted over


def _ink(image: Image.Image) -> np.ndarray | None:
    """Coordinates (x, y) of the ink pixels of ``image`` scaled down, centred on the page; None: too little."""
    small = image.convert("L")
    factor = SEARCH_SIDE / max(small.size)
    if factor < 1:
        small = small.resize((max(round(small.width * factor), 1), max(round(small.height * factor), 1)))
    gray = np.asarray(small)
    cumulative = np.cumsum(np.bincount(gray.ravel(), minlength=256))
    dark, light = np.searchsorted(cumulative, [0.01 * gray.size, 0.99 * gray.size])
    if light - dark < INK_CONTRAST:
        return None
    ys, xs = np.nonzero(gray < (int(dark) + int(light)) / 2)
    if len(xs) < MIN_POINTS:
        return None
    step = max(len(xs) // MAX_POINTS, 1)
    points = np.stack([xs[::step], ys[::step]]).astype(np.float32)
    return points - np.array([[gray.shape[1] / 2], [gray.shape[0] / 2]], dtype=np.float32)


def _sharpness(points: np.ndarray, angle: float, rows: bool) -> float:
    """How sharply the ink falls in rows (or columns) once the page is turned counter-clockwise by ``angle``."""
    slope = math.tan(math.radians(angle))
    x, y = points
    # PIL's rotate (counter-clockwise, y down) moves a point to y' = y cos - x sin (rows), x' = x cos + y sin.
    along = (y - x * slope) if rows else (x + y * slope)
    counts = np.bincount(np.rint(along - along.min()).astype(np.int64))
    return float(np.dot(counts, counts))


def _search(points: np.ndarray, rows: bool) -> tuple[float, float]:
    """(angle, sharpness) of the best straightening of rows (or columns): coarse to fine, then the vertex of a
    parabola fitted to the sharpness around the best angle (the profile's pixel rows alone settle it to ~0.05)."""
    best = 0.0
    for half, step in _STEPS:
        count = round(2 * half / step)
        angles = [best - half + i * step for i in range(count + 1)]
        best = max((a for a in angles if abs(a) <= MAX_SKEW), key=lambda a: _sharpness(points, a, rows))
    around = np.linspace(best - FIT_HALF, best + FIT_HALF, 11)
    curve = np.polyfit(around - best, [_sharpness(points, a, rows) for a in around], 2)
    if curve[0] < 0 and abs(vertex := -curve[1] / (2 * curve[0])) <= FIT_HALF:
        best += float(vertex)
    return best, _sharpness(points, best, rows)


def skew_angle(image: Image.Image) -> float:
    """Degrees to turn ``image`` counter-clockwise (PIL's rotate) to straighten its text lines; 0.0 when it is
    straight within MIN_SKEW or has no text lines to tell by."""
    points = _ink(image)
    if points is None:
        return 0.0
    rows, columns = _search(points, rows=True), _search(points, rows=False)
    angle = max(rows, columns, key=lambda found: found[1])[0]
    return round(angle, 2) if abs(angle) >= MIN_SKEW else 0.0


@dataclass(frozen=True)
class Straightened:
    """A page image turned by ``angle`` (counter-clockwise, expanded): maps its boxes back to the page as given."""

    angle: float
    size: tuple[int, int]  # the page as given, width and height
    straight_size: tuple[int, int]  # the page turned straight (larger: expanded to keep its corners)

    def to_page(self, box: Box) -> Box:
        """The axis-aligned hull of ``box``'s four corners on the page as given."""
        cos, sin = math.cos(math.radians(self.angle)), math.sin(math.radians(self.angle))
        (width, height), (straight_width, straight_height) = self.size, self.straight_size
        xs, ys = [], []
        for x, y in ((box[0], box[1]), (box[2], box[1]), (box[0], box[3]), (box[2], box[3])):
            dx, dy = x - straight_width / 2, y - straight_height / 2
            xs.append(width / 2 + dx * cos - dy * sin)
            ys.append(height / 2 + dx * sin + dy * cos)
        return (max(min(xs), 0.0), max(min(ys), 0.0), min(max(xs), float(width)), min(max(ys), float(height)))


def straighten(image: Image.Image, angle: float) -> tuple[Image.Image, Straightened]:
    """``image`` turned straight (white where the page had no corner) and the map of its boxes back. OpenCV's warp
    (rapidocr's own dependency) turns a 200 dpi page in a tenth of the time PIL's bicubic rotate takes."""
    import cv2  # rapidocr's own dependency (opencv-python-headless)

    gray = np.asarray(image.convert("L"))
    height, width = gray.shape
    cos, sin = abs(math.cos(math.radians(angle))), abs(math.sin(math.radians(angle)))
    size = (math.ceil(width * cos + height * sin), math.ceil(width * sin + height * cos))
    matrix = cv2.getRotationMatrix2D((width / 2, height / 2), angle, 1.0)  # counter-clockwise, as PIL's
    matrix[:, 2] += (size[0] / 2 - width / 2, size[1] / 2 - height / 2)
    straight = cv2.warpAffine(gray, matrix, size, flags=cv2.INTER_CUBIC, borderValue=255)
    return Image.fromarray(straight), Straightened(angle=angle, size=(width, height), straight_size=size)
