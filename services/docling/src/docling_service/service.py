"""The converter off the event loop: bounded concurrency and a time limit per conversion."""

from __future__ import annotations

import logging
from pathlib import Path

import anyio
from ingestion_contracts.docling import ConvertResponse, FormatsResponse
from servicekit import ServiceError

from .converter import Converter
from .paths import read_allowed_file

log = logging.getLogger("docling_service.service")


class ConversionTimeout(ServiceError):
    status_code = 504
    code = "CONVERSION_TIMEOUT"


class ConversionService:
    def __init__(
        self,
        converter: Converter,
        *,
        max_bytes: int,
        allowed_roots: list[Path],
        timeout_s: float,
        max_concurrency: int,
    ) -> None:
        self.converter = converter
        self.max_bytes = max_bytes
        self.allowed_roots = allowed_roots
        self.timeout_s = timeout_s
        # Conversions are CPU bound: more at once only queue for the cores and multiply memory.
        self._limiter = anyio.CapacityLimiter(max_concurrency)

    async def convert_bytes(self, data: bytes, file_name: str) -> ConvertResponse:
        try:
            with anyio.fail_after(self.timeout_s):
                # abandon_on_cancel: the answer goes out at the deadline; the thread finishes on its own
                # (docling's document_timeout stops the PDF pipelines at the same deadline).
                return await anyio.to_thread.run_sync(
                    self.converter.convert, data, file_name, limiter=self._limiter, abandon_on_cancel=True
                )
        except TimeoutError as exc:
            log.warning("conversion of %s timed out after %.1fs", file_name, self.timeout_s)
            raise ConversionTimeout(
                f"Converting {file_name!r} took longer than {self.timeout_s:g} s.",
                suggestion="Split the document into smaller parts, or ask the operator to raise "
                "DOCLING_CONVERT_TIMEOUT_S.",
            ) from exc

    async def convert_path(self, raw_path: str) -> ConvertResponse:
        real, data = await anyio.to_thread.run_sync(read_allowed_file, raw_path, self.allowed_roots, self.max_bytes)
        return await self.convert_bytes(data, real.name)

    def formats(self) -> FormatsResponse:
        return FormatsResponse(
            formats=self.converter.formats(),
            max_upload_bytes=self.max_bytes,
            pdf_pipeline="standard" if self.converter.pdf_pipeline == "standard" else "native",
            ocr=self.converter.ocr,
            path_conversion=bool(self.allowed_roots),
            warnings=list(self.converter.startup_warnings),
        )
