"""The loop a conversion worker process runs: build the converter once, then convert what the pipe sends."""

from __future__ import annotations

import logging
import os
import resource
from multiprocessing.connection import Connection

from servicekit import ServiceError

from .converter import Converter
from .options import ConverterOptions, WorkerInfo

log = logging.getLogger("docling_service.worker")


def _limit_memory(memory_mb: int) -> None:
    if memory_mb > 0:
        limit = memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _error(exc: ServiceError) -> dict[str, object]:
    return {
        "message": exc.message,
        "suggestion": exc.suggestion,
        "code": exc.code,
        "status_code": exc.status_code,
        "details": exc.details,
    }


def _convert(converter: Converter, data: bytes, file_name: str, conn: Connection) -> tuple[str, object]:
    def progress(done: int, total: int) -> None:  # read by the pool while the conversion goes on
        conn.send(("progress", (done, total)))

    try:
        return "ok", converter.convert(data, file_name, progress)
    except ServiceError as exc:
        return "error", _error(exc)
    except MemoryError:
        return "error", _error(
            ServiceError(
                f"Converting {file_name!r} needed more memory than a worker may use (DOCLING_WORKER_MEMORY_MB).",
                code="CONVERSION_FAILED",
                status_code=422,
                suggestion="Split the document into smaller parts, or ask the operator to raise the limit.",
            )
        )
    except Exception as exc:  # a parser bug on one file must not end the worker
        log.warning("conversion of %s failed", file_name, exc_info=exc)
        return "error", _error(
            ServiceError(
                f"{file_name!r} could not be converted: the parser failed on it ({type(exc).__name__}).",
                code="CORRUPT_FILE",
                status_code=422,
                suggestion="Check that the file opens in its application; re-save or export it and send it again.",
            )
        )


def worker_main(conn: Connection, options: ConverterOptions, memory_mb: int) -> None:
    """Run in the worker process until the parent closes the pipe."""
    os.dup2(2, 1)  # stdout may be an MCP stdio channel: anything a library prints goes to stderr
    _limit_memory(memory_mb)
    converter = Converter(options)
    converter.start()
    conn.send(
        ("ok", WorkerInfo(converter.pdf_pipeline, converter.ocr, converter.formats(), converter.startup_warnings))
    )
    while True:
        try:
            data, file_name = conn.recv()
        except (EOFError, OSError):
            return
        conn.send(_convert(converter, data, file_name, conn))
