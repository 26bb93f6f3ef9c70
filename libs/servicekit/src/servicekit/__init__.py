"""Shared plumbing of the ingestion-mcp HTTP services."""

from .app import ReadinessCheck, create_service_app, serve
from .context import REQUEST_ID_HEADER, request_id_var
from .errors import (
    Conflict,
    DependencyUnavailable,
    NotFound,
    PayloadTooLarge,
    ServiceError,
    Unprocessable,
    UnsupportedMediaType,
)
from .logging import configure_logging
from .middleware import Metrics
from .settings import ServiceSettings

__all__ = [
    "REQUEST_ID_HEADER",
    "Conflict",
    "DependencyUnavailable",
    "Metrics",
    "NotFound",
    "PayloadTooLarge",
    "ReadinessCheck",
    "ServiceError",
    "ServiceSettings",
    "Unprocessable",
    "UnsupportedMediaType",
    "configure_logging",
    "create_service_app",
    "request_id_var",
    "serve",
]
