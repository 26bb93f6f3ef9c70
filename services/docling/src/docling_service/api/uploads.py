"""Multipart uploads read as a stream with a byte limit: an oversized body is refused, never buffered."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator

from fastapi import Request
from servicekit import ServiceError, Unprocessable
from starlette.datastructures import UploadFile
from starlette.formparsers import MultiPartException, MultiPartParser
from starlette.requests import ClientDisconnect

from ..paths import too_large

# Room for the multipart boundaries, part headers and the optional `filename` field.
MULTIPART_OVERHEAD = 64 * 1024
FILE_FIELD = "file"
NAME_FIELD = "filename"
_HOW = "Send multipart/form-data with the document in the field 'file', e.g. curl -F file=@report.pdf URL."

# The request body /v1/convert takes, for the OpenAPI document (the body is parsed by hand).
UPLOAD_BODY = {
    "required": True,
    "content": {
        "multipart/form-data": {
            "schema": {
                "type": "object",
                "required": [FILE_FIELD],
                "properties": {
                    FILE_FIELD: {"type": "string", "format": "binary", "description": "The document."},
                    NAME_FIELD: {
                        "type": "string",
                        "maxLength": 255,
                        "description": "File name to use instead of the upload's (its extension picks the type).",
                    },
                },
            }
        }
    },
}


def _invalid(message: str) -> Unprocessable:
    return Unprocessable(message, code="INVALID_REQUEST", suggestion=_HOW)


def _check_declared_length(request: Request, max_bytes: int) -> None:
    declared = request.headers.get("content-length")
    if declared is None:
        return
    try:
        length = int(declared)
    except ValueError as exc:
        raise _invalid("The Content-Length header is not a number.") from exc
    if length > max_bytes + MULTIPART_OVERHEAD:
        raise too_large(max(length - MULTIPART_OVERHEAD, 0), max_bytes)


async def _limited(stream: AsyncIterator[bytes], limit: int, max_bytes: int) -> AsyncGenerator[bytes, None]:
    received = 0
    async for chunk in stream:
        received += len(chunk)
        if received > limit:
            raise too_large(None, max_bytes)  # stop reading: the rest of the body is never received
        yield chunk


async def read_upload(request: Request, max_bytes: int) -> tuple[str | None, bytes]:
    """(file name the client gave, document bytes) of a multipart upload; 413 past ``max_bytes``."""
    if not request.headers.get("content-type", "").lower().startswith("multipart/form-data"):
        raise _invalid("The request is not multipart/form-data.")
    _check_declared_length(request, max_bytes)
    stream = _limited(request.stream(), max_bytes + MULTIPART_OVERHEAD, max_bytes)
    parser = MultiPartParser(request.headers, stream, max_files=1, max_fields=4, max_part_size=4096)
    try:
        form = await parser.parse()
    except MultiPartException as exc:
        raise _invalid(f"The multipart body is invalid: {exc.message}") from exc
    except ClientDisconnect as exc:
        raise ServiceError("The client disconnected during the upload.", code="CLIENT_DISCONNECTED") from exc
    try:
        upload = form.get(FILE_FIELD)
        if not isinstance(upload, UploadFile):
            raise _invalid(f"The multipart body has no file in the field {FILE_FIELD!r}.")
        if upload.size is not None and upload.size > max_bytes:
            raise too_large(upload.size, max_bytes)
        data = await upload.read()
        override = form.get(NAME_FIELD)
        name = override if isinstance(override, str) and override.strip() else upload.filename
    finally:
        await form.close()
    return name, data
