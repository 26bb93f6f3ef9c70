"""Page images read by RapidOCR: PP-OCR detection/recognition ONNX models shipped inside the rapidocr wheel.

Nothing downloads at run time (docs/pdf.md says why this engine). The engine is built on first use, so
a worker that never meets a scan never loads the models.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from PIL import Image

from .pdf_lines import Line

ENGINE_NAME = "RapidOCR (PP-OCRv6, ONNX Runtime)"
# Rendering resolution for scanned PDF pages: 200 dpi reads 9 pt type reliably, 300 dpi costs 2x for little.
RENDER_DPI = 200
# A box much taller than wide is text running vertically: the page is probably turned by 90 degrees.
_VERTICAL_RATIO = 1.5


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
    """One RapidOCR engine per process (its ONNX sessions are not shared across processes)."""

    threads: int = 1
    _engine: Any = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _get(self) -> Any:
        if self._engine is None:
            from rapidocr import RapidOCR  # lazy: ~1 s of imports only when a page needs OCR

            params = {
                "Global.log_level": "error",
                "EngineConfig.onnxruntime.intra_op_num_threads": self.threads,
                "EngineConfig.onnxruntime.inter_op_num_threads": 1,
            }
            self._engine = RapidOCR(params=params)
        return self._engine

    def _run(self, image: Image.Image) -> list[OcrLine]:
        with self._lock:
            result = self._get()(np.asarray(image.convert("RGB")))
        if result.boxes is None or not result.txts:
            return []
        lines = []
        for box, text, score in zip(result.boxes, result.txts, result.scores, strict=True):
            xs, ys = [float(p[0]) for p in box], [float(p[1]) for p in box]
            if text.strip():
                lines.append(OcrLine(text=text.strip(), score=float(score), box=(min(xs), min(ys), max(xs), max(ys))))
        return lines

    def read(self, image: Image.Image) -> list[OcrLine]:
        """The text lines of an image in reading order; a page turned by 90 degrees is turned back first."""
        lines = self._run(image)
        if lines and _mostly_vertical(lines):
            readings = [self._run(image.rotate(angle, expand=True)) for angle in (90, 270)]
            lines = max([lines, *readings], key=_weight)
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
