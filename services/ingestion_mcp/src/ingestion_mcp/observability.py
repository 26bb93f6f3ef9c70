"""Request ids that follow a tool call into every service, and Prometheus metrics of the MCP server."""

from __future__ import annotations

import uuid
from contextvars import ContextVar

import httpx
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from servicekit import REQUEST_ID_HEADER, request_id_var

REGISTRY = CollectorRegistry()
TOOL_CALLS = Counter("mcp_tool_calls_total", "MCP tool calls", ["tool", "outcome"], registry=REGISTRY)
TOOL_SECONDS = Histogram("mcp_tool_duration_seconds", "MCP tool call latency", ["tool"], registry=REGISTRY)
STAGE_SECONDS = Histogram("ingest_stage_duration_seconds", "Ingest pipeline stage time", ["stage"], registry=REGISTRY)
JOBS = Gauge("mcp_jobs", "Background jobs by status", ["status"], registry=REGISTRY)
AUDIT_EVENTS = Counter(
    "mcp_audit_events_total", "Writes, deletes and collection changes", ["action", "result"], registry=REGISTRY
)
# The tool being served (toolkit/common.safe_tool), for the audit log.
tool_var: ContextVar[str | None] = ContextVar("mcp_tool", default=None)
JOBS_STARTED = Counter("mcp_jobs_started_total", "Background jobs started", ["type"], registry=REGISTRY)


def new_request_id() -> str:
    return uuid.uuid4().hex


async def _propagate_request_id(request: httpx.Request) -> None:
    request_id = request_id_var.get()
    if request_id and REQUEST_ID_HEADER not in request.headers:
        request.headers[REQUEST_ID_HEADER] = request_id


EVENT_HOOKS = {"request": [_propagate_request_id]}
