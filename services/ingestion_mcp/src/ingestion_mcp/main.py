"""Entry point: `ingestion-mcp [--transport stdio|streamable-http] [--host H] [--port P]`.

Light on purpose: it reads the settings and, on stdio, starts answering `initialize` (handshake.py) before it
imports the MCP SDK, the tools and the services (serving.py), which take seconds (issue 49: answered within a
second of the process start; the services and the model load after, and a call that needs them waits).
"""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .handshake import EarlyStdio
    from .http.front import HttpFront
    from .settings import McpSettings


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="ingestion-mcp", description=__doc__.splitlines()[0])
    parser.add_argument("--transport", choices=["stdio", "streamable-http"], help="default: stdio")
    parser.add_argument("--host", help="HTTP bind address (default 127.0.0.1)")
    parser.add_argument("--port", type=int, help="HTTP port (default 8000)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    from servicekit import configure_allocators
    from servicekit.settings import settings_or_exit

    # Before anything imports pyarrow or starts threads: memory an idle trim can give back (docs/memory.md).
    configure_allocators()
    args = parse_args(argv)
    overrides = {k: v for k, v in vars(args).items() if v is not None}
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    # The ready message says when the model is loaded; a progress bar and gRPC's own log (Milvus Lite's
    # keepalive chatter) would only bury it. Set either variable to see them.
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("GRPC_VERBOSITY", "NONE")
    from .settings import McpSettings

    settings = settings_or_exit(McpSettings, "ingestion-mcp", **overrides)
    early = None
    if settings.transport == "stdio":  # the wire is taken now: `initialize` is answered while the rest loads
        from .handshake import EarlyStdio

        early = EarlyStdio(list(settings.profiles))
    run(settings, early)


def run(settings: McpSettings, early: EarlyStdio | None) -> None:
    """Load the server and serve (on HTTP, behind a front that answers from now on); a configuration the tool set
    or the policy refuses exits with code 2."""
    import anyio
    from servicekit import configure_idle_trim, configure_logging

    configure_logging(settings.log_level, json_logs=settings.json_logs)
    configure_idle_trim(settings.idle_trim_s)
    if settings.transport == "stdio":
        code = anyio.run(load_and_serve, settings, early, None)
    else:
        code = anyio.run(serve_http, settings)
    if code:
        raise SystemExit(code)


async def load_and_serve(settings: McpSettings, early: EarlyStdio | None, front: HttpFront | None) -> int:
    """Import the server (in a thread: on HTTP the front answers on this loop meanwhile), then serve."""
    import importlib

    import anyio

    serving = await anyio.to_thread.run_sync(importlib.import_module, f"{__package__}.serving")
    code: int = await serving.serve_or_refuse(settings, early, front)
    return code


async def serve_http(settings: McpSettings) -> int:
    """uvicorn on the front at once (http/front.py), the server loaded and attached behind it."""
    import anyio
    import uvicorn

    from .http.front import HttpFront

    loopback = settings.host in ("127.0.0.1", "localhost", "::1")
    front = HttpFront(
        profiles=list(settings.profiles), token=settings.token_value() if settings.auth_mode == "token" else None,
        early=settings.auth_mode != "oauth" and settings.stateless_http,
        loopback_hosts=("127.0.0.1", "localhost", "::1") if loopback else None,
    )  # fmt: skip
    # log_config=None: uvicorn's records go to the root handler (one JSON line each), not to its own text handlers.
    config = uvicorn.Config(
        front, host=settings.host, port=settings.port, log_level=settings.log_level.lower(), log_config=None
    )
    http = uvicorn.Server(config)
    code = 0

    async def load() -> None:
        nonlocal code
        code = await load_and_serve(settings, None, front)
        http.should_exit = True  # refused, or the server stopped: so does uvicorn

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(load)
        await http.serve()
        tasks.cancel_scope.cancel()
    return code


if __name__ == "__main__":
    main()
