"""Build the docling app from settings; ``run()`` is the console entry point."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import AsyncIterator

import anyio
from fastapi import FastAPI
from servicekit import configure_logging, create_service_app, serve
from servicekit.settings import settings_or_exit

from . import __version__
from .api.routes import router
from .html_nesting import HtmlLimits
from .options import ConverterOptions
from .pool import PoolOptions, WorkerPool
from .service import ConversionService
from .settings import DoclingSettings

log = logging.getLogger("docling_service")


def build_service(settings: DoclingSettings) -> ConversionService:
    converter = ConverterOptions(
        artifacts_path=settings.artifacts_path,
        do_ocr=settings.do_ocr,
        timeout_s=settings.convert_timeout_s,
        ocr=settings.ocr_options(os.cpu_count() or 1),
        html=HtmlLimits(max_depth=settings.max_html_depth, max_depth_total=settings.max_html_depth_total),
        page_window=settings.pdf_page_window,
        max_pdf_pages=settings.max_pdf_pages,
        max_page_megapixels=settings.max_pdf_page_megapixels,
        max_document_bytes=settings.max_upload_bytes,
    )
    pool = WorkerPool(
        PoolOptions(
            workers=settings.workers,
            timeout_s=settings.convert_timeout_s,
            max_tasks=settings.worker_max_tasks,
            memory_mb=settings.worker_memory_mb,
            idle_s=settings.worker_idle_s,
            recycle_mb=settings.worker_recycle_mb,
            warm=settings.worker_warm,
            lazy=settings.lazy_start,
        ),
        converter,
    )
    return ConversionService(pool, max_bytes=settings.max_upload_bytes, allowed_roots=settings.allowed_roots)


def create_app(settings: DoclingSettings) -> FastAPI:
    service = build_service(settings)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        info = await anyio.to_thread.run_sync(service.pool.start)
        try:
            if info is None:
                log.info("converter: starts with the first conversion", extra={"service": "docling"})
            else:
                for warning in info.startup_warnings:
                    log.warning(warning, extra={"service": "docling"})
                log.info(
                    "converter ready (PDF pipeline: %s; up to %d worker process(es), started as conversions need "
                    "them)", info.pdf_pipeline, service.pool.options.workers, extra={"service": "docling"},
                )  # fmt: skip
            yield
        finally:
            await anyio.to_thread.run_sync(service.pool.close)

    def readiness() -> dict[str, str]:
        return {"converter": "ok" if service.ready else "not initialised yet"}

    app = create_service_app(
        name="docling",
        version=__version__,
        description="Converts PDF, DOCX, PPTX, XLSX, HTML, Markdown and text documents to Markdown, "
        "with one block per heading/paragraph/list item/table, its page and its exact offsets.",
        auth_token=settings.token_value(),
        readiness=readiness,
        lifespan=lifespan,
    )
    app.state.conversion = service
    app.include_router(router)
    return app


def run() -> None:
    settings = settings_or_exit(DoclingSettings, "docling-service")
    configure_logging(settings.log_level, json_logs=settings.json_logs)
    serve(create_app(settings), settings)


if __name__ == "__main__":
    run()
