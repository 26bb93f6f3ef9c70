"""One JSON line on logger ``ingestion_mcp.audit`` for every write, delete and collection change.

Who (the token's subject), which tool, which collection and document, how it ended, and the request id that
follows the call into every service; a refused attempt is recorded too. mcp_audit_events_total counts them.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Coroutine
from typing import Any, TypeVar

from servicekit import request_id_var

from .access import Right, current_caller
from .errors import ToolFailure
from .observability import AUDIT_EVENTS, tool_var

log = logging.getLogger("ingestion_mcp.audit")
T = TypeVar("T")


async def audited(action: str, collection: str, key: str | None, right: Right, work: Coroutine[Any, Any, T]) -> T:
    """Run ``work`` (not yet started) if the caller holds ``right`` on ``collection``; record the outcome."""
    caller = current_caller()
    try:
        caller.require(right, collection)
    except ToolFailure:
        work.close()  # never started: nothing reaches the services
        record(action, collection, key, "forbidden")
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


def record(action: str, collection: str, key: str | None, result: str) -> None:
    line = {
        "event": "audit", "subject": current_caller().subject, "tool": tool_var.get(), "action": action,
        "collection": collection, "document": key, "result": result, "request_id": request_id_var.get(),
    }  # fmt: skip
    log.info(json.dumps(line))
    AUDIT_EVENTS.labels(action, result.split(":", 1)[0]).inc()
