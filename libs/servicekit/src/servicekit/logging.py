"""Logs with the request id on every line: one line per event, whoever logs it. JSON for machines (a pipe, a file,
a container's log collector), readable text for a person at a terminal: ``json_logs=None`` (the default of every
service's settings, INGESTION_MCP_JSON_LOGS for the server) picks by whether stderr is a terminal; true or false says.

Libraries that bring their own handlers (pymilvus installs plain-text ones at import, uvicorn when it is not
told otherwise) are taken over: their records go to the root handler, so a third-party error with its traceback
is one JSON line (the traceback inside it), never a block of plain text between the JSON lines."""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import TextIO

from .context import request_id_var

QUIET_LIBRARIES = ("httpx", "httpcore")
# Loggers of this project that keep sinks of their own (the audit records: access/audit.py).
OWN_LOGGERS = ("ingestion_mcp",)


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


class TextFormatter(logging.Formatter):
    """One line per event for a person: local time, level, logger, message (a traceback, when there is one, below)."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s", datefmt="%H:%M:%S")


def wants_json(json_logs: bool | None, stream: TextIO) -> bool:
    """What was said, else JSON unless ``stream`` is a terminal (a person reads it)."""
    if json_logs is not None:
        return json_logs
    try:
        return not stream.isatty()
    except (AttributeError, ValueError):  # a stream without a descriptor, or a closed one
        return True


def formatter_for(json_logs: bool | None, stream: TextIO) -> logging.Formatter:
    return JsonFormatter() if wants_json(json_logs, stream) else TextFormatter()


def configure_logging(level: str = "INFO", *, json_logs: bool | None = None, stream: TextIO | None = None) -> None:
    """Idempotent: configures the root logger once, to stderr (stdout may carry MCP stdio) or ``stream``; JSON or
    text as wants_json says."""
    root = logging.getLogger()
    if any(isinstance(h, _Handler) for h in root.handlers):
        return
    handler = _Handler(stream or sys.stderr)
    handler.setFormatter(formatter_for(json_logs, handler.stream))
    root.addHandler(handler)
    root.setLevel(level.upper())
    logging.captureWarnings(True)  # a library's warnings.warn: an event on "py.warnings", not a bare stderr line
    adopt_library_logs()
    # httpx logs every request it sends at INFO, a second line for what the receiving service already logs
    # (with the request id); DEBUG keeps them.
    if root.level > logging.DEBUG:
        for name in QUIET_LIBRARIES:
            logging.getLogger(name).setLevel(max(logging.WARNING, root.level))


def announce(message: str, logger: str = "announce", **fields: object) -> None:
    """A message for whoever reads the process's stderr (a server is ready, and where), shown at any log level:
    one JSON event (``fields`` its own) where JSON logs are configured, else the text as it is."""
    handler = next((h for h in logging.getLogger().handlers if isinstance(h, _Handler)), None)
    if handler is None or not isinstance(handler.formatter, JsonFormatter):
        print(message, file=sys.stderr, flush=True)
        return
    record = logging.LogRecord(logger, logging.INFO, __file__, 0, message, None, None)
    record.fields = fields
    handler.handle(record)
    handler.flush()


def adopt_library_logs() -> None:
    """Send every library logger that has handlers of its own to the root handler instead (call again after
    importing a library that configures its loggers at import: pymilvus does). Nothing changes before
    configure_logging has run, nor for loggers that keep propagating."""
    root = logging.getLogger()
    if not any(isinstance(h, _Handler) for h in root.handlers):
        return
    for name, logger in list(logging.root.manager.loggerDict.items()):
        if not isinstance(logger, logging.Logger) or name.split(".", 1)[0] in OWN_LOGGERS:
            continue
        if logger.handlers and not logger.propagate:
            for handler in list(logger.handlers):
                logger.removeHandler(handler)
            logger.propagate = True
