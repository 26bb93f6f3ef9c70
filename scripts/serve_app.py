"""The MCP server's real HTTP app (serving.http_app: /mcp, the console, the probes) under uvicorn on loopback, in
this process: what the OAuth tests, the browser tests and the console latency bench serve."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio

from scripts.service_stack import free_port


@asynccontextmanager
async def serving(state: Any, port: int | None = None, start_timeout_s: float = 60.0) -> AsyncIterator[str]:
    """Serve ``state`` (an AppState) on ``port`` (a free one if None) until the block ends; yields the base URL."""
    import uvicorn
    from ingestion_mcp.http.cancel_relay import CancelRelay
    from ingestion_mcp.server import build_server
    from ingestion_mcp.serving import http_app

    port = port or free_port()
    app = http_app(build_server(state), state, CancelRelay())
    http = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(http.serve)
        with anyio.fail_after(start_timeout_s):
            while not http.started:
                await anyio.sleep(0.05)
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            http.should_exit = True
