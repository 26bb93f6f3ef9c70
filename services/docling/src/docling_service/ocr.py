"""Page images read by RapidOCR: PP-OCRv6 detection/recognition ONNX models shipped inside wheels (ocr_models.py).

Nothing downloads at run time (docs/pdf.md says why this engine). The engine is built on first use, so
a worker that never meets a scan never loads the models.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from PIL import Image

from .deskew import Straightened, skew_angle, straighten
from .options import OcrOptions
from .pdf_lines import Line
from .reading_order import column_order
from .regions import union


def engine_name(model: str) -> str:
    return f"RapidOCR (PP-OCRv6 {model}, ONNX Runtime)"


# A box much taller than wide is text running vertically: the page is probably turned by 90 degrees.
_VERTICAL_RATIO = 1.5
# Without the line classifier an upside-down page still reads, as garbage scored ~0.6 a character; upright
# office scans score ~0.99. Below this mean score the page is read turned by 180 degrees as well.
UPSIDE_DOWN_SCORE = 0.75


# The detector's boxes are the text's with a margin around it (its polygons are unclipped outwards): a line's box is
# tightened to its ink, then given back this share of its height above and below (ascenders and descenders a line
# may not use, as a font's own box has them).
INK_MARGIN = 0.04
INK_CONTRAST = 48  # grey levels between the darkest and lightest pixel of a box; less: nothing to tighten to
# A line read on a page turned straight is slanted on the page as given: mapped back whole, its box would take in
# the lines above and below (a 1000 px line at 1 degree rises 17 px, a line's height). It is cut at word gaps into
# pieces short enough that each piece's slant adds at most this share of the line's height to its box.
PIECE_SLANT = 0.15

Box = tuple[float, float, float, float]


@dataclass(frozen=True)
class OcrLine:
    text: str
    score: float
    box: tuple[float, float, float, float]  # left, top, right, bottom in pixels
    page_box: Box | None = None  # where it is on the image as given, if read turned or straightened
    turn: int = 0  # degrees the page was turned by to read it (90, 180, 270), counter-clockwise
    page_words: tuple[tuple[str, Box], ...] = ()  # on a straightened page: its pieces where they are on the page


def _unturned(
    box: tuple[float, float, float, float], angle: int, size: tuple[int, int]
) -> tuple[float, float, float, float]:
    """A box of the image turned by ``angle`` (PIL's rotate, counter-clockwise, expanded) on the image as given
    (``size``: its width and height)."""
    width, height = size
    corners = [(box[0], box[1]), (box[2], box[3])]
    if angle == 90:
        points = [(width - y, x) for x, y in corners]
    elif angle == 270:
        points = [(y, height - x) for x, y in corners]
    else:  # 180
        points = [(width - x, height - y) for x, y in corners]
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    return (min(xs), min(ys), max(xs), max(ys))


def _scaled(box: Box, scale: float) -> Box:
    return (box[0] / scale, box[1] / scale, box[2] / scale, box[3] / scale)


def _pieces(line: OcrLine, angle: float) -> list[tuple[str, Box]]:
    """``line`` cut at word gaps into pieces whose slant at ``angle`` degrees adds at most PIECE_SLANT of its height
    (each piece's box: its share of the line's width, by characters)."""
    left, top, right, bottom = line.box
    slant = (right - left) * abs(math.sin(math.radians(angle)))
    count = math.ceil(slant / max(PIECE_SLANT * (bottom - top), 1.0))
    words = line.text.split()
    if count <= 1 or len(words) <= 1:
        return [(line.text, line.box)]
    per_char = (right - left) / max(len(line.text), 1)
    pieces: list[tuple[str, Box]] = []
    start = 0  # the character the current piece starts at
    for group in np.array_split(np.arange(len(words)), min(count, len(words))):
        text = " ".join(words[i] for i in group)
        at = line.text.index(text.split()[0], start)
        end = line.text.index(text.split()[-1], at) + len(text.split()[-1])
        pieces.append((text, (left + at * per_char, top, left + end * per_char, bottom)))
        start = end
    return pieces


def _mapped_back(line: OcrLine, back: Straightened) -> OcrLine:
    """A line read on the page turned straight, located on the page as given: its pieces (_pieces) each as the hull
    of its corners. Its reading frame is moved back by the margin the turn added, to lie over the page."""
    frame_size = back.straight_size
    pieces = _pieces(line, back.angle)
    boxes = [back.to_page(_unturned(box, line.turn, frame_size) if line.turn else box) for _, box in pieces]
    dx, dy = (frame_size[0] - back.size[0]) / 2, (frame_size[1] - back.size[1]) / 2
    box = (line.box[0] - dx, line.box[1] - dy, line.box[2] - dx, line.box[3] - dy)
    words = tuple((text, place) for (text, _), place in zip(pieces, boxes, strict=True)) if len(pieces) > 1 else ()
    return replace(line, box=box, page_box=union(boxes), page_words=words)


def tightened(gray: np.ndarray, box: tuple[float, float, float, float]) -> tuple[float, float, float, float]:
    """``box`` shrunk to its line's ink: the rows of ink around its densest row up to a blank row (what the box took
    of the lines above and below lies past one), and the columns of ink in them; with INK_MARGIN of the ink's
    height above and below. The box as it was when it holds no clear ink."""
    height, width = gray.shape
    x0, y0 = max(int(box[0]), 0), max(int(box[1]), 0)
    x1, y1 = min(int(np.ceil(box[2])), width), min(int(np.ceil(box[3])), height)
    crop = gray[y0:y1, x0:x1]
    if crop.size == 0:
        return box
    darkest, lightest = int(crop.min()), int(crop.max())
    if lightest - darkest < INK_CONTRAST:
        return box
    ink = crop < (darkest + lightest) / 2
    per_row = ink.sum(axis=1)
    top = bottom = int(per_row.argmax())
    while top > 0 and per_row[top - 1]:
        top -= 1
    while bottom + 1 < len(per_row) and per_row[bottom + 1]:
        bottom += 1
    columns = np.nonzero(ink[top : bottom + 1].any(axis=0))[0]
    margin = INK_MARGIN * (bottom + 1 - top)
    return (float(x0 + columns[0]), max(y0 + top - margin, box[1]), float(x0 + columns[-1] + 1),
            min(y0 + bottom + 1 + margin, box[3]))  # fmt: skip


def _weight(lines: list[OcrLine]) -> float:
    """How much confident text a reading found (characters weighted by recognition score)."""
    return sum(line.score * len(line.text) for line in lines)


def _height(line: OcrLine) -> float:
    return line.box[3] - line.box[1]


def _mostly_vertical(lines: list[OcrLine]) -> bool:
    tall = sum(len(line.text) for line in lines if _height(line) > _VERTICAL_RATIO * (line.box[2] - line.box[0]))
    return tall * 2 > sum(len(line.text) for line in lines)


def _in_columns(lines: list[OcrLine]) -> list[OcrLine]:
    """RapidOCR's lines (top to bottom, across the page) read column by column where the page has columns."""
    return [lines[i] for i in column_order([line.box for line in lines])]


@dataclass
class OcrEngine:
    """One RapidOCR engine per process, shared by its page threads (ONNX Runtime sessions are thread-safe)."""

    options: OcrOptions = field(default_factory=OcrOptions)
    _engine: Any = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _get(self) -> Any:
        with self._lock:
            if self._engine is None:
                from rapidocr import RapidOCR  # lazy: ~1 s of imports only when a page needs OCR

                self._engine = RapidOCR(params=self.options.params())
            return self._engine

    def _run(self, image: Image.Image) -> list[OcrLine]:
        pixels = np.asarray(image.convert("RGB"))
        if self.options.despeckle:
            import cv2  # rapidocr's own dependency (opencv-python-headless)

            pixels = cv2.medianBlur(pixels, 3)
        result = self._get()(pixels)
        if result.boxes is None or not result.txts:
            return []
        gray = pixels.mean(axis=2) if pixels.ndim == 3 else pixels
        lines = []
        for box, text, score in zip(result.boxes, result.txts, result.scores, strict=True):
            xs, ys = [float(p[0]) for p in box], [float(p[1]) for p in box]
            if text.strip():
                place = (min(xs), min(ys), max(xs), max(ys))
                if place[2] - place[0] > place[3] - place[1]:  # a line read across (a tall one: a page turned)
                    place = tightened(gray, place)
                lines.append(OcrLine(text=text.strip(), score=float(score), box=place))
        return lines

    def read(self, image: Image.Image) -> list[OcrLine]:
        """The text lines of an image in reading order (column by column: reading_order.py). A skewed page is read
        turned straight (deskew.py), its lines' boxes mapped back to the page as given, cut where they slant."""
        angle = skew_angle(image) if self.options.deskew else 0.0
        if not angle:
            return self._read_turned(image)
        straight, back = straighten(image, angle)
        return [_mapped_back(line, back) for line in self._read_turned(straight)]

    def _read_turned(self, image: Image.Image) -> list[OcrLine]:
        """The text lines of an image in reading order; a page turned by 90 or 180 degrees is turned back first."""
        lines = self._run(image)
        readings: list[tuple[int, list[OcrLine]]] = []
        if lines and _mostly_vertical(lines):
            # RapidOCR reads vertical lines upright too, as confidently, but in reverse order (a page turned
            # clockwise came out last line first): only a reading of the page turned back is kept.
            readings = [(angle, self._run(image.rotate(angle, expand=True))) for angle in (90, 270)]
        elif lines and _weight(lines) < UPSIDE_DOWN_SCORE * sum(len(line.text) for line in lines):
            readings = [(0, lines), (180, self._run(image.rotate(180)))]
        if not readings:
            return _in_columns(lines)
        angle, lines = max(readings, key=lambda reading: _weight(reading[1]))
        # Read upright (the paragraph merger needs that order), located where they are on the page as given.
        lines = _in_columns(lines)
        return [replace(line, page_box=_unturned(line.box, angle, image.size), turn=angle) if angle else line
                for line in lines]  # fmt: skip

    def page_lines(self, image: Image.Image, page: int, scale: float) -> list[Line]:
        """OCR lines as page lines in points (``scale`` pixels per point), for the paragraph merger."""
        return [
            Line(
                text=line.text,
                page=page,
                left=line.box[0] / scale,
                top=line.box[1] / scale,
                right=line.box[2] / scale,
                bottom=line.box[3] / scale,
                box=tuple(v / scale for v in line.page_box) if line.page_box else None,  # type: ignore[arg-type]  # four floats
                words=tuple((text, _scaled(box, scale)) for text, box in line.page_words),
            )
            for line in self.read(image)
        ]
