"""JSON logs with the request id on every line."""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import TextIO

from .context import request_id_var

QUIET_LIBRARIES = ("httpx", "httpcore")


class _Handler(logging.StreamHandler[TextIO]):
    """The handler configure_logging installs: its type marks the root logger as configured."""


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
            "request_id": request_id_var.get(),
        }
        for key in ("service", "method", "path", "stage", "duration_ms", "doc_id", "collection", "status"):
            if hasattr(record, key):
                entry[key] = getattr(record, key)
        # A structured event (extra={"fields": {...}}, e.g. an audit record): its fields are the line's own.
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            entry.update(fields)
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False)


def configure_logging(level: str = "INFO", *, json_logs: bool = True, stream: TextIO | None = None) -> None:
    """Idempotent: configures the root logger once, to stderr (stdout may carry MCP stdio) or ``stream``."""
    root = logging.getLogger()
    if any(isinstance(h, _Handler) for h in root.handlers):
        return
    handler = _Handler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter() if json_logs else logging.Formatter("%(levelname)s %(name)s %(message)s"))
    root.addHandler(handler)
    root.setLevel(level.upper())
    # httpx logs every request it sends at INFO, a second line for what the receiving service already logs
    # (with the request id); DEBUG keeps them.
    if root.level > logging.DEBUG:
        for name in QUIET_LIBRARIES:
            logging.getLogger(name).setLevel(max(logging.WARNING, root.level))
