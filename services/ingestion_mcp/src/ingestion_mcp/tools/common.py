"""What every tool shares: safe execution, rendering, the token budget."""

from __future__ import annotations

import functools
import json
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, ParamSpec

from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel
from servicekit import request_id_var

from ..errors import ToolFailure, failure_from
from ..observability import TOOL_CALLS, TOOL_SECONDS, new_request_id

log = logging.getLogger("ingestion_mcp.tools")
P = ParamSpec("P")
# Renders a failure in the error shape of a profile.
ErrorRenderer = Callable[[ToolFailure], dict[str, Any]]


def estimate_tokens(text: str) -> int:
    """~4 characters a token: good enough to keep answers inside an agent's budget."""
    return len(text) // 4 + 1


def result(payload: BaseModel | dict[str, Any], *, is_error: bool = False) -> CallToolResult:
    data = payload.model_dump(mode="json", exclude_none=True) if isinstance(payload, BaseModel) else payload
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))  # compact: the agent pays per token
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data, is_error=is_error)


def safe_tool(render_error: ErrorRenderer) -> Callable[[Callable[P, Awaitable[CallToolResult]]], Any]:
    """Never let an exception reach the MCP framework: every failure becomes a structured answer."""

    def decorate(fn: Callable[P, Awaitable[CallToolResult]]) -> Callable[P, Awaitable[CallToolResult]]:
        @functools.wraps(fn)
        async def wrapper(*args: P.args, **kwargs: P.kwargs) -> CallToolResult:
            token = request_id_var.set(new_request_id())
            started = time.perf_counter()
            outcome = "ok"
            try:
                return await fn(*args, **kwargs)
            except Exception as exc:  # noqa: BLE001 - this is the one place that catches all
                failure = failure_from(exc)
                outcome = failure.code
                return result(render_error(failure), is_error=True)
            finally:
                elapsed = time.perf_counter() - started
                TOOL_CALLS.labels(fn.__name__, outcome).inc()
                TOOL_SECONDS.labels(fn.__name__).observe(elapsed)
                log.info(
                    "tool %s %s in %.0f ms", fn.__name__, outcome, elapsed * 1000,
                    extra={"service": "ingestion_mcp", "status": outcome, "duration_ms": round(elapsed * 1000, 1)},
                )  # fmt: skip
                request_id_var.reset(token)

        return wrapper

    return decorate
