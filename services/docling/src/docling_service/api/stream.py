"""POST /v1/convert/stream: the conversion as NDJSON lines, pages converted so far, then the result.

A long PDF takes minutes; the caller sees it advance page window by page window. The conversion runs
inside the response, so a client that goes away (an ingest job cancelled) cancels it: the worker
converting the document is killed at once (pool.py) and nothing is kept.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from ingestion_contracts import ErrorBody
from ingestion_contracts.docling import ConvertResponse, ConvertStreamEvent
from servicekit import ServiceError
from servicekit.context import request_id_var
from starlette.responses import Response

from ..pool import PoolProgress

log = logging.getLogger("docling_service.api")
NDJSON = "application/x-ndjson"
# Runs the conversion; gets the callback that sends a progress line.
Conversion = Callable[[PoolProgress], Awaitable[ConvertResponse]]


def _line(event: ConvertStreamEvent) -> bytes:
    return event.model_dump_json(exclude_none=True).encode() + b"\n"


def _error_event(exc: ServiceError) -> ConvertStreamEvent:
    body = ErrorBody(
        error=exc.message,
        code=exc.code,
        suggestion=exc.suggestion,
        details=exc.details,
        request_id=request_id_var.get(),
    )
    return ConvertStreamEvent(event="error", error=body, status=exc.status_code)


class ConversionStream(Response):
    """200 with NDJSON: a "progress" line per step of the conversion, then one "result" or "error" line."""

    media_type = NDJSON

    def __init__(self, conversion: Conversion, on_result: Callable[[ConvertResponse], object]) -> None:
        # Not Response.__init__: it would declare an empty body (content-length: 0); this one streams.
        self.status_code, self.background = 200, None
        self.raw_headers = [(b"content-type", NDJSON.encode())]
        self.conversion, self.on_result = conversion, on_result

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})

        async def progress(done: int, total: int) -> None:
            line = _line(ConvertStreamEvent(event="progress", pages_done=done, pages_total=total))
            await send({"type": "http.response.body", "body": line, "more_body": True})

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(_cancel_on_disconnect, receive, tasks.cancel_scope)
            try:
                result = await self.conversion(progress)
                self.on_result(result)
                last = ConvertStreamEvent(event="result", result=result)
            except ServiceError as exc:
                last = _error_event(exc)
            except Exception as exc:  # the 200 is sent: a broken stream would be retried as a network fault
                log.exception("conversion failed", exc_info=exc)
                last = _error_event(
                    ServiceError("Internal error; the request id is in the logs.", code="INTERNAL_ERROR",
                                 status_code=500, suggestion="Retry later.")
                )  # fmt: skip
            await send({"type": "http.response.body", "body": _line(last), "more_body": False})
            tasks.cancel_scope.cancel()


async def _cancel_on_disconnect(receive: Any, scope: anyio.CancelScope) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
    scope.cancel()  # the conversion stops: its worker is killed, nothing is kept
