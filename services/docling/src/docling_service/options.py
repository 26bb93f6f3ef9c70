"""What the API process hands its conversion workers, and what they answer when ready.

Kept apart from converter.py so the API process never imports docling: docling and torch load in the fork
server and the workers only (~400 MB less resident in the process serving HTTP or MCP; docs/pdf.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ingestion_contracts.docling import FormatInfo

from .html_nesting import HtmlLimits


@dataclass(frozen=True)
class ConverterOptions:
    artifacts_path: Path | None = None
    do_ocr: bool = True
    timeout_s: float = 300.0
    ocr_threads: int = 1
    tables: bool = True  # native pipeline: tables by rule (off only for the benchmark's text-only baseline)
    html: HtmlLimits = field(default_factory=HtmlLimits)
    page_window: int = 25  # native pipeline: pages parsed per docling call (memory, progress)
    max_pdf_pages: int = 2000


@dataclass(frozen=True)
class WorkerInfo:
    """What the parent shows on /v1/formats and /readyz, as the worker's converter found it."""

    pdf_pipeline: str
    ocr: bool
    formats: list[FormatInfo]
    startup_warnings: list[str]
