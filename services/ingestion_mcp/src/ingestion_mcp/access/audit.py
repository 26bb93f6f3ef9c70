"""One structured record on logger ``ingestion_mcp.audit`` for every write, delete and collection change, and for
every read refused.

Who (the token's subject), which tool, which collection and document, how it ended, and the request id that
follows the call into every service, as fields of the JSON log line; a refused attempt is recorded too,
whichever stage refuses it (the store, the pipeline, a job's submission), with the rule that refused it. A read
of a collection the caller may not read answers as a missing one, and leaves one record (result ``forbidden``)
that the caller never sees: probing other tenants' collections shows here. A write whose document is looked up
first (by key, path or doc_id across collections) and not found is recorded as that write's failure, and one refused
by a read rule during that lookup as the write refused: one record per call either way. mcp_audit_events_total counts
them.

The records have their own sink (INGESTION_MCP_AUDIT_LOG: stderr, a file, or off), at INFO whatever the
application's log level, so a plain start writes them.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from logging.handlers import WatchedFileHandler
from typing import Any, TypeVar

from servicekit import request_id_var
from servicekit.logging import JsonFormatter, formatter_for

from ..errors import ToolFailure
from ..observability import AUDIT_EVENTS, tool_var
from .policy import Right, current_caller

log = logging.getLogger("ingestion_mcp.audit")
T = TypeVar("T")


def configure(sink: str, *, json_logs: bool | None = None) -> None:
    """Send audit records to ``sink``: "stderr" (JSON or text as the application log is: servicekit.logging), "off",
    or a file path (JSON lines, appended; reopened after rotation)."""
    for old in [h for h in log.handlers if getattr(h, "_audit_sink", False)]:
        log.removeHandler(old)
        old.close()
    log.propagate = False  # the sink is the audit's own, not the application log's (nor its level)
    log.setLevel(logging.INFO)
    if sink == "off":
        handler: logging.Handler = logging.NullHandler()
    elif sink == "stderr":
        handler = logging.StreamHandler(sys.stderr)
    else:
        handler = WatchedFileHandler(sink, encoding="utf-8")
    handler.setFormatter(formatter_for(json_logs, sys.stderr) if sink == "stderr" else JsonFormatter())
    handler._audit_sink = True  # type: ignore[attr-defined]  # marks ours among handlers others may add
    log.addHandler(handler)


def require(action: str, collection: str, key: str | None, right: Right = "write") -> None:
    """Refuse (FORBIDDEN) unless the caller holds ``right`` on ``collection``; a refusal is recorded."""
    try:
        current_caller().require(right, collection)
    except ToolFailure:
        record(action, collection, key, "forbidden", rule=needs(right))
        raise


def needs(right: Right) -> str:
    """The rule a refusal names: the right the caller's token does not grant on the collection."""
    return f"needs the '{right}' right"


@dataclass
class Lookup:
    """A write's lookup in progress (looked_up_for): the write's action and document, and whether it is recorded."""

    action: str
    key: str | None
    recorded: bool = False


_lookup: ContextVar[Lookup | None] = ContextVar("audit_lookup", default=None)


@contextmanager
def looked_up_for(action: str, collection: str | None, key: str | None) -> Iterator[None]:
    """The lookup a write makes before it reaches the store (its document by key, path or doc_id): a failure there
    is the write's, recorded as one (the store's own refusals and failures are recorded where they happen). A read
    refused during the lookup is that one record (refused_read): the write refused by the rule that refused it."""
    lookup = Lookup(action, key)
    token = _lookup.set(lookup)
    try:
        yield
    except ToolFailure as exc:
        if not lookup.recorded:
            record(action, collection, key, f"failed:{exc.code}")
        raise
    finally:
        _lookup.reset(token)


def refused_read(action: str, collection: str) -> None:
    """A read of ``collection`` the caller may not make: one record naming the rule (the caller sees a missing
    collection). Inside a write's lookup the record is the write's (its action and document), once: an operator
    reads "alice delete_document ... forbidden", not a read and then a failure the caller was told of."""
    lookup = _lookup.get()
    if lookup is None:
        record(action, collection, None, "forbidden", rule=needs("read"))
    elif not lookup.recorded:
        lookup.recorded = True
        record(lookup.action, collection, lookup.key, "forbidden", rule=needs("read"))


async def audited(action: str, collection: str, key: str | None, right: Right, work: Coroutine[Any, Any, T]) -> T:
    """Run ``work`` (not yet started) if the caller holds ``right`` on ``collection``; record the outcome."""
    try:
        require(action, collection, key, right)
    except ToolFailure:
        work.close()  # never started: nothing reaches the services
        raise
    try:
        answer = await work
    except ToolFailure as exc:
        record(action, collection, key, f"failed:{exc.code}")
        raise
    except BaseException:
        record(action, collection, key, "failed")
        raise
    record(action, collection, key, "ok")
    return answer


def record(action: str, collection: str | None, key: str | None, result: str, *, rule: str | None = None) -> None:
    fields = {
        "event": "audit", "subject": current_caller().subject, "tool": tool_var.get(), "action": action,
        "collection": collection, "document": key, "result": result, "request_id": request_id_var.get(),
    }  # fmt: skip
    if rule is not None:
        fields["rule"] = rule
    who = f"{fields['subject']} " if fields["subject"] else ""  # no subject (stdio, a shared token): not "None"
    log.info("audit: %s%s on %s: %s (%s)", who, action, collection or "-", result, fields["tool"] or "-",
             extra={"fields": fields})  # fmt: skip
    AUDIT_EVENTS.labels(action, result.split(":", 1)[0]).inc()
