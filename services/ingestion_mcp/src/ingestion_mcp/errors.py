"""Errors a tool turns into an answer for the agent: what went wrong and what to do next."""

from __future__ import annotations

import logging
from typing import Any

from pydantic import ValidationError

from .sources.errors import SourceError

log = logging.getLogger("ingestion_mcp.errors")


class ToolFailure(Exception):
    """Raised anywhere below the tools; the tool layer renders it, never a traceback."""

    def __init__(
        self,
        message: str,
        suggestion: str | None = None,
        *,
        code: str = "PROCESSING_FAILED",
        status: int | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.suggestion = suggestion
        self.code = code
        self.status = status
        self.details = details or {}


class UpstreamError(ToolFailure):
    """A service answered with an error body (4xx/5xx) or could not be reached."""


# The gateway's error codes a caller acts on, as types: code that asks "is it missing?" catches one of these,
# never an HTTP status or a message's words.
class NotFound(UpstreamError):
    """The service holds no such thing (the base of the two below)."""


class CollectionNotFound(NotFound):
    """COLLECTION_NOT_FOUND; details["available_collections"] lists those that exist."""


class DocumentNotFound(NotFound):
    """DOCUMENT_NOT_FOUND: the collection exists, the document is not in it."""


class CollectionExists(UpstreamError):
    """COLLECTION_EXISTS: a create found the name taken."""


UPSTREAM_CODES: dict[str, type[UpstreamError]] = {
    "COLLECTION_NOT_FOUND": CollectionNotFound,
    "DOCUMENT_NOT_FOUND": DocumentNotFound,
    "NOT_FOUND": NotFound,
    "COLLECTION_EXISTS": CollectionExists,
}


def upstream_error(
    message: str, suggestion: str | None, *, code: str, status: int, details: dict[str, Any] | None = None
) -> UpstreamError:
    """A service's error answer as the type its code names (UpstreamError for the codes nobody branches on)."""
    kind = UPSTREAM_CODES.get(code) or (NotFound if status == 404 else UpstreamError)
    return kind(message, suggestion, code=code, status=status, details=details)


def failure_from(exc: BaseException) -> ToolFailure:
    """Any exception as a ToolFailure an agent can act on (unexpected ones are logged, not shown)."""
    if isinstance(exc, ToolFailure):
        return exc
    if isinstance(exc, SourceError):
        return ToolFailure(exc.message, exc.suggestion, code=exc.code, status=exc.status)
    if isinstance(exc, ValidationError):
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'input'}: {err['msg']}" for err in exc.errors()[:5]
        )
        return ToolFailure(
            f"Invalid input: {problems}", "Fix the named parameters and call again.", code="INVALID_INPUT"
        )
    log.exception("unexpected error", exc_info=exc)
    return ToolFailure(
        f"Internal error ({type(exc).__name__}).",
        "Retry once; if it persists, check the server logs.",
        code="INTERNAL_ERROR",
    )
