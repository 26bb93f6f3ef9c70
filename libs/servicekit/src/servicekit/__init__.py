"""Shared plumbing of the ingestion-mcp HTTP services.

Names load on first use (PEP 562): a client that needs only the request-id context (the MCP server's
HTTP clients, the `ingestion-index` CLI) does not pay for importing FastAPI.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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
    from .memory import (
        IdleTrimmer,
        configure_allocators,
        configure_idle_trim,
        freeze_when_quiet,
        give_back_free_memory,
        idle_trimmer,
    )
    from .middleware import Metrics
    from .settings import ServiceSettings, settings_or_exit

_HOME = {
    "ReadinessCheck": "app", "create_service_app": "app", "serve": "app",
    "REQUEST_ID_HEADER": "context", "request_id_var": "context",
    "Conflict": "errors", "DependencyUnavailable": "errors", "NotFound": "errors", "PayloadTooLarge": "errors",
    "ServiceError": "errors", "Unprocessable": "errors", "UnsupportedMediaType": "errors",
    "configure_logging": "logging", "give_back_free_memory": "memory", "Metrics": "middleware",
    "IdleTrimmer": "memory", "configure_allocators": "memory", "configure_idle_trim": "memory",
    "idle_trimmer": "memory", "freeze_when_quiet": "memory",
    "ServiceSettings": "settings", "settings_or_exit": "settings",
}  # fmt: skip

__all__ = [
    "REQUEST_ID_HEADER",
    "Conflict",
    "DependencyUnavailable",
    "IdleTrimmer",
    "Metrics",
    "NotFound",
    "PayloadTooLarge",
    "ReadinessCheck",
    "ServiceError",
    "ServiceSettings",
    "Unprocessable",
    "UnsupportedMediaType",
    "configure_allocators",
    "configure_idle_trim",
    "configure_logging",
    "create_service_app",
    "freeze_when_quiet",
    "give_back_free_memory",
    "idle_trimmer",
    "request_id_var",
    "serve",
    "settings_or_exit",
]


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{home}", __name__), name)
    globals()[name] = value
    return value
