"""Entry point: `ingestion-mcp [--transport stdio|streamable-http] [--host H] [--port P]`.

Light on purpose: it reads the settings, checks the data folder and, on stdio, starts answering `initialize`
(handshake.py) before it imports the MCP SDK, the tools and the services (serving.py), which take seconds (issue 49:
answered within a second of the process start; the services and the model load after, and a call that needs them
waits). Over streamable HTTP uvicorn serves a front (http/loading_front.py) at once, and the server behind it once
loaded.
Stopped by a signal, the process ends as that signal would, its exit handlers run first (stopping.py).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..handshake import EarlyStdio
    from ..http.loading_front import LoadingFront
    from ..settings import McpSettings


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="ingestion-mcp", description=__doc__.splitlines()[0])
    parser.add_argument("--transport", choices=["stdio", "streamable-http"], help="default: stdio")
    parser.add_argument("--host", help="HTTP bind address (default 127.0.0.1)")
    parser.add_argument("--port", type=int, help="HTTP port (default 8000)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    from servicekit import configure_allocators, settings_or_exit

    # Before anything imports pyarrow or starts threads: memory an idle trim can give back (docs/memory.md).
    configure_allocators()
    args = parse_args(argv)
    overrides = {k: v for k, v in vars(args).items() if v is not None}
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    # The ready message says when the model is loaded; a progress bar and gRPC's own log (Milvus Lite's
    # keepalive chatter) would only bury it. Set either variable to see them.
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("GRPC_VERBOSITY", "NONE")
    from ..settings import McpSettings

    settings = settings_or_exit(McpSettings, "ingestion-mcp", **overrides)
    if (problem := data_folder_problem(settings)) is not None:  # one line, before a client is answered
        print(f"ingestion-mcp: {problem}", file=sys.stderr)
        raise SystemExit(2)
    early = None
    if settings.transport == "stdio":  # the wire is taken now: `initialize` is answered while the rest loads
        from ..handshake import EarlyStdio

        early = EarlyStdio(list(settings.profiles))
    run(settings, early)


def data_folder_problem(settings: McpSettings) -> str | None:
    """Why the data folder cannot be used, in one line (None: it can). Started from / without
    INGESTION_MCP_DATA_DIR, the server once died with a 34-line traceback (PermissionError: '/data')."""
    folder = settings.data_dir.expanduser()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / f".write-check-{os.getpid()}"
        probe.touch()
        probe.unlink()
    except OSError as exc:
        return (
            f"the data folder {folder} cannot be written ({exc.strerror or type(exc).__name__}); set "
            "INGESTION_MCP_DATA_DIR to a folder this user can write (default: the user's data folder)"
        )
    return None


def run(settings: McpSettings, early: EarlyStdio | None) -> None:
    """Load the server and serve (on HTTP, behind a front that answers from now on); a configuration the tool set
    or the policy refuses exits with code 2, a signal ends the process as it would (stopping.py)."""
    import anyio
    from servicekit import configure_idle_trim, configure_logging

    from ..stopping import die_as_signalled

    configure_logging(settings.log_level, json_logs=settings.json_logs)
    configure_idle_trim(settings.idle_trim_s)
    stopped_by = None
    if settings.transport == "stdio":
        code = anyio.run(serve_stdio, settings, early)
    else:
        code, stopped_by = anyio.run(serve_http, settings)
    if stopped_by is not None:
        die_as_signalled(stopped_by)
    if code:
        raise SystemExit(code)


async def load_and_serve(settings: McpSettings, early: EarlyStdio | None, front: LoadingFront | None) -> int:
    """Import the server (in a thread: on HTTP the front answers on this loop meanwhile), then serve."""
    import importlib

    import anyio

    serving = await anyio.to_thread.run_sync(importlib.import_module, "ingestion_mcp.serving")
    code: int = await serving.serve_or_refuse(settings, early, front)
    return code


async def serve_stdio(settings: McpSettings, early: EarlyStdio | None) -> int:
    """Until the client closes stdin; a signal, from the first moment on, exits leaving nothing in the temp folder
    (the SDK's stdin thread would hold a graceful stop until a line came)."""
    import anyio

    from ..stopping import STDIO_SIGNALS, exit_on_signals

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(exit_on_signals, *STDIO_SIGNALS)
        code = await load_and_serve(settings, early, None)
        tasks.cancel_scope.cancel()
    return code


async def serve_http(settings: McpSettings) -> tuple[int, int | None]:
    """uvicorn on the front at once (http/loading_front.py), the server loaded and attached behind it; returns the exit
    code and the signal that stopped uvicorn (None: none did)."""
    import anyio
    import uvicorn

    from ..http.loading_front import LoadingFront
    from ..stopping import HTTP_SIGNALS, SignalTrap, exit_on_signals

    loopback = settings.host in ("127.0.0.1", "localhost", "::1")
    front = LoadingFront(
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
        tasks.start_soon(exit_on_signals, *HTTP_SIGNALS)
        trap = SignalTrap()  # what uvicorn raises again once stopped: recorded; the shutdown goes on (stopping.py)
        await http.serve()
        tasks.cancel_scope.cancel()
    return code, trap.received


if __name__ == "__main__":
    main()
