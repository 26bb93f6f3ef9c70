"""Page images read by RapidOCR: PP-OCRv6 detection/recognition ONNX models shipped inside wheels (ocr_models.py).

Nothing downloads at run time (docs/pdf.md says why this engine). The engine is built on first use, so
a worker that never meets a scan never loads the models.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from PIL import Image

from .options import OcrOptions
from .pdf_lines import Line


def engine_name(model: str) -> str:
    return f"RapidOCR (PP-OCRv6 {model}, ONNX Runtime)"


# A box much taller than wide is text running vertically: the page is probably turned by 90 degrees.
_VERTICAL_RATIO = 1.5
# Without the line classifier an upside-down page still reads, as garbage scored ~0.6 a character; upright
# office scans score ~0.99. Below this mean score the page is read turned by 180 degrees as well.
UPSIDE_DOWN_SCORE = 0.75


@dataclass(frozen=True)
class OcrLine:
    text: str
    score: float
    box: tuple[float, float, float, float]  # left, top, right, bottom in pixels


def _weight(lines: list[OcrLine]) -> float:
    """How much confident text a reading found (characters weighted by recognition score)."""
    return sum(line.score * len(line.text) for line in lines)


def _height(line: OcrLine) -> float:
    return line.box[3] - line.box[1]


def _mostly_vertical(lines: list[OcrLine]) -> bool:
    tall = sum(len(line.text) for line in lines if _height(line) > _VERTICAL_RATIO * (line.box[2] - line.box[0]))
    return tall * 2 > sum(len(line.text) for line in lines)


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
        lines = []
        for box, text, score in zip(result.boxes, result.txts, result.scores, strict=True):
            xs, ys = [float(p[0]) for p in box], [float(p[1]) for p in box]
            if text.strip():
                lines.append(OcrLine(text=text.strip(), score=float(score), box=(min(xs), min(ys), max(xs), max(ys))))
        return lines

    def read(self, image: Image.Image) -> list[OcrLine]:
        """The text lines of an image in reading order; a page turned by 90 or 180 degrees is turned back first."""
        lines = self._run(image)
        if lines and _mostly_vertical(lines):
            # RapidOCR reads vertical lines upright too, as confidently, but in reverse order (a page turned
            # clockwise came out last line first): only a reading of the page turned back is kept.
            lines = max((self._run(image.rotate(angle, expand=True)) for angle in (90, 270)), key=_weight)
        elif lines and _weight(lines) < UPSIDE_DOWN_SCORE * sum(len(line.text) for line in lines):
            lines = max([lines, self._run(image.rotate(180))], key=_weight)
        return lines

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
            )
            for line in self.read(image)
        ]
