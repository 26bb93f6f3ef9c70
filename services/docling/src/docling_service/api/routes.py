"""HTTP routes: read the request, call the conversion service, answer. No conversion logic here."""

from __future__ import annotations

from typing import Annotated

import anyio
from fastapi import APIRouter, Depends, Request
from ingestion_contracts import ErrorBody
from ingestion_contracts.docling import ConvertPathRequest, ConvertResponse, ConvertStreamEvent, FormatsResponse
from servicekit import DependencyUnavailable

from ..formats import safe_file_name
from ..service import ConversionService
from .stream import NDJSON, ConversionStream
from .uploads import UPLOAD_BODY, read_upload

router = APIRouter(prefix="/v1", tags=["conversion"])


def _error(description: str) -> dict[str, object]:
    return {"model": ErrorBody, "description": description}


_CONVERT_ERRORS: dict[int | str, dict[str, object]] = {
    413: _error("Larger than DOCLING_MAX_UPLOAD_MB (FILE_TOO_LARGE)"),
    415: _error("Unsupported file type (UNSUPPORTED_FORMAT); the message lists the supported ones"),
    422: _error("Unreadable document: CORRUPT_FILE, ENCRYPTED_FILE, EMPTY_FILE, NOT_UTF8, NO_TEXT; or INVALID_REQUEST"),
    503: _error("Converter not initialised yet"),
    504: _error("Conversion took longer than DOCLING_CONVERT_TIMEOUT_S (CONVERSION_TIMEOUT)"),
}
_PATH_ERRORS: dict[int | str, dict[str, object]] = {
    403: _error("Path outside DOCLING_ALLOWED_ROOTS, or path conversion disabled (PATH_NOT_ALLOWED)"),
    404: _error("No file at that path (FILE_NOT_FOUND)"),
    **_CONVERT_ERRORS,
}


def get_service(request: Request) -> ConversionService:
    service = getattr(request.app.state, "conversion", None)
    if service is None or not service.ready:
        raise DependencyUnavailable(
            "The converter is not initialised yet.", suggestion="Retry in a few seconds; /readyz says when it is ready."
        )
    return service


ServiceDep = Annotated[ConversionService, Depends(get_service)]


def _observe(request: Request, result: ConvertResponse) -> ConvertResponse:
    request.app.state.metrics.observe_stage(f"convert_{result.file_type}", result.conversion_ms / 1000)
    return result


@router.post(
    "/convert", operation_id="convert_upload", responses=_CONVERT_ERRORS, openapi_extra={"requestBody": UPLOAD_BODY}
)
async def convert_upload(request: Request, service: ServiceDep) -> ConvertResponse:
    """Convert an uploaded document (multipart field `file`) to Markdown with blocks and pages."""
    raw_name, data = await read_upload(request, service.max_bytes)
    result = await service.convert_bytes(data, safe_file_name(raw_name))
    return _observe(request, result)


_STREAM_OK: dict[int | str, dict[str, object]] = {
    200: {
        "model": ConvertStreamEvent,
        "content": {NDJSON: {}},
        "description": "NDJSON, one ConvertStreamEvent a line: progress lines (PDF pages converted so far), then one "
        "result line (the ConvertResponse) or one error line (the ErrorBody and the status /v1/convert would answer).",
    }
}


@router.post(
    "/convert/stream",
    operation_id="convert_upload_stream",
    status_code=200,
    response_class=ConversionStream,
    responses={**_STREAM_OK, **_CONVERT_ERRORS},
    openapi_extra={"requestBody": UPLOAD_BODY},
)
async def convert_upload_stream(request: Request, service: ServiceDep) -> ConversionStream:
    """Convert an uploaded document like /v1/convert, streaming its progress page by page (NDJSON)."""
    raw_name, data = await read_upload(request, service.max_bytes)
    name = safe_file_name(raw_name)
    return ConversionStream(
        lambda progress: service.convert_bytes(data, name, progress), lambda result: _observe(request, result)
    )


@router.post("/convert/path", operation_id="convert_path", responses=_PATH_ERRORS)
async def convert_path(body: ConvertPathRequest, request: Request, service: ServiceDep) -> ConvertResponse:
    """Convert a document the service can read, under one of DOCLING_ALLOWED_ROOTS."""
    return _observe(request, await service.convert_path(body.path))


@router.get("/formats", operation_id="list_formats", responses={503: _CONVERT_ERRORS[503]})
async def list_formats(service: ServiceDep) -> FormatsResponse:
    """Supported file types and extensions, the size limit, and which PDF pipeline is active."""
    return await anyio.to_thread.run_sync(service.formats)
