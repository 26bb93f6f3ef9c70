"""Domain errors and their one mapping to HTTP."""

from __future__ import annotations

import logging
from typing import TypedDict, Unpack

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from ingestion_contracts import ErrorBody
from starlette.exceptions import HTTPException as StarletteHTTPException

from .context import REQUEST_ID_SCOPE_KEY, request_id_var

log = logging.getLogger("servicekit.errors")


class ErrorOptions(TypedDict, total=False):
    """What a ServiceError subclass passes on besides its message (its own status and headers aside)."""

    suggestion: str | None
    code: str | None
    status_code: int | None
    details: dict[str, object] | None


class ServiceError(Exception):
    """An error a caller can act on. Domain code raises it; the handler renders it."""

    status_code = 400
    code = "BAD_REQUEST"

    def __init__(
        self,
        message: str,
        *,
        suggestion: str | None = None,
        code: str | None = None,
        status_code: int | None = None,
        details: dict[str, object] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.suggestion = suggestion
        self.details = details
        self.headers = headers or {}
        if code:
            self.code = code
        if status_code:
            self.status_code = status_code


class NotFound(ServiceError):
    status_code = 404
    code = "NOT_FOUND"


class Conflict(ServiceError):
    status_code = 409
    code = "CONFLICT"


class Unprocessable(ServiceError):
    status_code = 422
    code = "UNPROCESSABLE"


class PayloadTooLarge(ServiceError):
    status_code = 413
    code = "FILE_TOO_LARGE"


class UnsupportedMediaType(ServiceError):
    status_code = 415
    code = "UNSUPPORTED_FORMAT"


class DependencyUnavailable(ServiceError):
    status_code = 503
    code = "DEPENDENCY_UNAVAILABLE"

    def __init__(self, message: str, *, retry_after: int = 5, **kwargs: Unpack[ErrorOptions]) -> None:
        super().__init__(message, headers={"Retry-After": str(retry_after)}, **kwargs)


def _body(status: int, code: str, message: str, suggestion: str | None = None, details=None) -> JSONResponse:
    body = ErrorBody(error=message, code=code, suggestion=suggestion, details=details, request_id=request_id_var.get())
    return JSONResponse(status_code=status, content=body.model_dump(exclude_none=True))


def _validation_message(exc: RequestValidationError) -> str:
    # Name the field and the rule, never echo the submitted value back.
    parts = []
    for err in exc.errors()[:5]:
        loc = ".".join(str(p) for p in err.get("loc", ()) if p != "body")
        parts.append(f"{loc or 'body'}: {err.get('msg', 'invalid')}")
    return "Invalid request: " + "; ".join(parts)


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ServiceError)
    async def _service_error(_: Request, exc: ServiceError) -> JSONResponse:
        response = _body(exc.status_code, exc.code, exc.message, exc.suggestion, exc.details)
        response.headers.update(exc.headers)
        return response

    @app.exception_handler(RequestValidationError)
    async def _validation_error(_: Request, exc: RequestValidationError) -> JSONResponse:
        return _body(422, "INVALID_REQUEST", _validation_message(exc), "Fix the named fields and retry.")

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {404: "NOT_FOUND", 405: "METHOD_NOT_ALLOWED", 401: "UNAUTHORIZED"}.get(exc.status_code, "HTTP_ERROR")
        response = _body(exc.status_code, code, str(exc.detail))
        if exc.headers:
            response.headers.update(exc.headers)
        return response

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        # Starlette runs this handler outside the middleware, which has reset the request id by now:
        # take it back from the scope so the log line and the answer name the same request.
        token = request_id_var.set(request.scope.get(REQUEST_ID_SCOPE_KEY))
        try:
            log.exception("unhandled error", exc_info=exc)
            return _body(500, "INTERNAL_ERROR", "Internal error; the request id is in the logs.", "Retry later.")
        finally:
            request_id_var.reset(token)
