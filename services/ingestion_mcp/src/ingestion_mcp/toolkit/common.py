"""What every tool shares: one decorator (hints, safe execution, metrics, log line, request id), rendering,
the token budget."""

from __future__ import annotations

import functools
import json
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, ParamSpec, Protocol, TypeVar

from mcp.server import MCPServer
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel
from servicekit import request_id_var

from ..errors import ToolFailure, failure_from
from ..observability import TOOL_CALLS, TOOL_SECONDS, new_request_id, tool_var

log = logging.getLogger("ingestion_mcp.tools")
P = ParamSpec("P")
R = TypeVar("R")
# Renders a failure in the error shape of a profile: a JSON object (sent as structured content with isError),
# or the whole answer where the profile's spec shapes that too (obsidian's JSON string).
ErrorRenderer = Callable[[ToolFailure], dict[str, Any] | CallToolResult]
F = TypeVar("F", bound=Callable[..., Awaitable[Any]])


class ToolDecorator(Protocol):
    """What profile_tools gives a profile: `@tool(READ)` registers a tool with those hints (and `meta`, its `_meta`)."""

    def __call__(self, annotations: ToolAnnotations, *, meta: dict[str, Any] | None = None) -> Callable[[F], F]: ...


def result(payload: BaseModel | dict[str, Any], *, is_error: bool = False) -> CallToolResult:
    data = payload.model_dump(mode="json", exclude_none=True) if isinstance(payload, BaseModel) else payload
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))  # compact: the agent pays per token
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data, is_error=is_error)


def error_result(render_error: ErrorRenderer, failure: ToolFailure) -> CallToolResult:
    """A failure answered in a profile's error shape (isError=true)."""
    rendered = render_error(failure)
    return rendered if isinstance(rendered, CallToolResult) else result(rendered, is_error=True)


def safe_tool(render_error: ErrorRenderer) -> Callable[[Callable[P, Awaitable[R]]], Any]:
    """Never let an exception reach the MCP framework: every failure becomes a structured answer.
    Each call gets a request id, a log line and its metrics (calls by outcome, seconds)."""

    def decorate(fn: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R | CallToolResult]]:
        @functools.wraps(fn)
        async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R | CallToolResult:
            token = request_id_var.set(new_request_id())
            tool_token = tool_var.set(fn.__name__)
            started = time.perf_counter()
            outcome = "ok"
            try:
                return await fn(*args, **kwargs)
            except Exception as exc:  # noqa: BLE001 - this is the one place that catches all
                failure = failure_from(exc)
                outcome = failure.code
                return error_result(render_error, failure)
            finally:
                elapsed = time.perf_counter() - started
                TOOL_CALLS.labels(fn.__name__, outcome).inc()
                TOOL_SECONDS.labels(fn.__name__).observe(elapsed)
                log.info(
                    "tool %s %s in %.0f ms", fn.__name__, outcome, elapsed * 1000,
                    extra={"service": "ingestion_mcp", "status": outcome, "duration_ms": round(elapsed * 1000, 1)},
                )  # fmt: skip
                request_id_var.reset(token)
                tool_var.reset(tool_token)

        return wrapper

    return decorate


def profile_tools(server: MCPServer, render_error: ErrorRenderer, *, own_shape: bool = False) -> ToolDecorator:
    """The one decorator every profile registers its tools with: `tool = profile_tools(server, render_error)`,
    then `@tool(READ)` registers the function with those hints, run by safe_tool in the profile's error shape.
    With own_shape, arguments the framework refuses are answered in render_error's shape too, not the profile's
    (server.ProfileServer reads `argument_errors` on the registered function)."""

    def tool(annotations: ToolAnnotations, *, meta: dict[str, Any] | None = None) -> Callable[[F], F]:
        def decorate(fn: F) -> F:
            wrapped = safe_tool(render_error)(fn)
            if own_shape:
                wrapped.argument_errors = functools.partial(error_result, render_error)
            server.tool(annotations=annotations, meta=meta)(wrapped)
            return fn

        return decorate

    return tool
