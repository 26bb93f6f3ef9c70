"""The conversion service: reads what it may, hands documents to the worker pool, says what it supports."""

from __future__ import annotations

import logging
from pathlib import Path

import anyio
from ingestion_contracts.docling import ConvertResponse, FormatsResponse

from .paths import read_allowed_file
from .pool import ConversionTimeout, PoolProgress, WorkerPool

log = logging.getLogger("docling_service.service")

__all__ = ["ConversionService", "ConversionTimeout"]


class ConversionService:
    def __init__(self, pool: WorkerPool, *, max_bytes: int, allowed_roots: list[Path]) -> None:
        self.pool = pool
        self.max_bytes = max_bytes
        self.allowed_roots = allowed_roots

    @property
    def ready(self) -> bool:
        return self.pool.ready or self.pool.options.lazy  # lazy: ready to start a worker when asked

    async def convert_bytes(self, data: bytes, file_name: str, progress: PoolProgress | None = None) -> ConvertResponse:
        try:
            return await self.pool.convert(data, file_name, progress)
        except ConversionTimeout:
            log.warning("conversion of %s stopped at its %.1f s limit", file_name, self.pool.options.timeout_s)
            raise

    async def convert_path(self, raw_path: str) -> ConvertResponse:
        real, data = await anyio.to_thread.run_sync(read_allowed_file, raw_path, self.allowed_roots, self.max_bytes)
        return await self.convert_bytes(data, real.name)

    def formats(self) -> FormatsResponse:
        """Blocking: a lazy pool that has not converted yet starts a worker to learn them."""
        info = self.pool.ensure_info()
        return FormatsResponse(
            formats=info.formats,
            max_upload_bytes=self.max_bytes,
            pdf_pipeline="standard" if info.pdf_pipeline == "standard" else "native",
            ocr=info.ocr,
            path_conversion=bool(self.allowed_roots),
            warnings=list(info.startup_warnings),
        )
