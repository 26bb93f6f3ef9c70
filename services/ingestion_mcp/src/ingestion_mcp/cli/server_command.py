"""Entry point: `ingestion-mcp [--transport stdio|streamable-http] [--host H] [--port P]`."""

from __future__ import annotations

import argparse
import gc
import logging
import os
import sys
from collections.abc import Callable
from functools import partial
from typing import Any

import anyio
from servicekit.logging import announce

from ..access import audit
from ..access.auth import OAuthGate
from ..access.policy import PolicyError
from ..backend import Backend
from ..console import build_console
from ..embedded.services import data_folder, embedded_index, open_backend
from ..http.cancel_relay import CancelRelay, LegacyCancelMiddleware, relay_forever
from ..http.front_door import LOOPBACK, FrontDoor
from ..http.jsonrpc_errors import ParseGuard, run_stdio
from ..server import ProfileClash, build_server
from ..settings import McpSettings
from ..state import AppState
from ..stopping import HTTP_SIGNALS, STDIO_SIGNALS, SignalTrap, die_as_signalled, exit_on_signals

log = logging.getLogger("ingestion_mcp")
# Not ready after this long (a slow model load, an unreachable service): say what is awaited, once.
STILL_STARTING_S = 60.0


async def serve(settings: McpSettings) -> int | None:
    """Serve until stopped; over HTTP, the signal that stopped it (main ends the process as that signal would)."""
    async with open_backend(settings) as backend:
        state = AppState.create(settings, backend)
        server = build_server(state)
        try:
            if settings.transport == "stdio":
                async with anyio.create_task_group() as tasks:
                    # stdout is the protocol: the one line goes to stderr, where clients keep a server's log.
                    tasks.start_soon(announce_when_ready, backend, lambda: True, partial(stdio_ready_line, settings))
                    if settings.watch_enabled:  # watched folders (ingest/watch.py): beside the server, never around it
                        tasks.start_soon(state.start_watching().run)
                    tasks.start_soon(exit_on_signals, *STDIO_SIGNALS)  # nothing left in the temp folder (stopping.py)
                    await run_stdio(server)  # the SDK's stdio, with malformed lines answered
                    tasks.cancel_scope.cancel()
                return None
            return await _serve_http(server, state)
        finally:
            with anyio.CancelScope(shield=True):
                await state.jobs.aclose()


async def announce_when_ready(
    backend: Backend, listening: Callable[[], bool], message: Callable[[str], str], *, poll_s: float = 0.25
) -> None:
    """Print the message to stderr once the server listens and every service is ready (the model loaded); it is
    given what the embedding model runs at (embeddings_note).

    Printed earlier, it would be followed by the model's loading output and read as "still starting"."""
    began, told = anyio.current_time(), False
    while True:
        checks = await backend.readiness()
        if listening() and all(state == "ok" for state in checks.values()):
            break
        if not told and anyio.current_time() - began > STILL_STARTING_S:
            told = True
            pending = ", ".join(f"{name} ({state})" for name, state in checks.items() if state != "ok")
            announce(f"ingestion-mcp is still starting; waiting for: {pending or 'the listener'}", "ingestion_mcp",
                     event="starting", waiting_for=pending)  # fmt: skip
        await anyio.sleep(poll_s)
    freeze_startup_objects()
    announce(message(await embeddings_note(backend)), "ingestion_mcp", event="ready")


async def embeddings_note(backend: Backend) -> str:
    """The model and the precision it loaded at ("embeddings: sentence-transformers/all-MiniLM-L6-v2, int8"; int8 on
    CPUs with int8 dot products, docs/embeddings.md); "" when the gateway cannot say (an older one, or none)."""
    try:
        info = await backend.embedding_model()
    except Exception:  # noqa: BLE001 - the ready line goes out without it rather than not at all
        return ""
    return f"embeddings: {info.model}" + (f", {info.precision}" if info.precision else "")


def freeze_startup_objects() -> None:
    """Move what start-up allocated (the model, the libraries: ~600,000 objects) out of the collector's reach.

    Each full collection walked them all: 350-400 ms pauses at random requests, the console's document page
    at p95 430 ms instead of 88 ms (docs/console.md). They live as long as the process anyway."""
    gc.collect()
    gc.freeze()


def http_app(server: Any, state: AppState, relay: CancelRelay) -> FrontDoor:
    """The streamable HTTP app behind its guard: what uvicorn serves (tests serve it in-process too)."""
    from mcp.server.transport_security import TransportSecuritySettings

    settings = state.settings
    security = None
    if settings.host not in LOOPBACK:
        # Host names vary behind routes and services; the bearer token and Origin check guard instead.
        security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    app = server.streamable_http_app(
        host=settings.host, transport_security=security, stateless_http=settings.stateless_http,
        max_request_body_size=settings.max_body_bytes,
    )  # fmt: skip
    if settings.stateless_http:
        app = LegacyCancelMiddleware(app, relay, max_body=settings.max_body_bytes)
    app = ParseGuard(app, max_body=settings.max_body_bytes)
    oauth = OAuthGate.from_settings(settings) if settings.auth_mode == "oauth" else None
    guard = FrontDoor(
        app,
        token=settings.token_value() if settings.auth_mode == "token" else None,
        allowed_origins=settings.allowed_origins,
        readiness=partial(readiness, state),
        loopback=settings.host in LOOPBACK,
        queue_depth=getattr(state.jobs, "depth", None),
        max_body=settings.max_body_bytes,
        oauth=oauth,
        service_token=settings.token_value() if settings.auth_mode == "oauth" else None,
    )
    guard.on_caller = state.note_caller
    guard.console = build_console(
        state, oauth=oauth, origin_allowed=guard.origin_allowed, max_body=settings.max_body_bytes
    )
    return guard


async def _serve_http(server: Any, state: AppState) -> int | None:
    import uvicorn

    settings, backend = state.settings, state.backend
    relay = CancelRelay()
    guarded = http_app(server, state, relay)
    # log_config=None: uvicorn's records go to the root handler (one JSON line each), not to its own text handlers.
    config = uvicorn.Config(
        guarded, host=settings.host, port=settings.port, log_level=settings.log_level.lower(), log_config=None
    )
    http = uvicorn.Server(config)
    async with anyio.create_task_group() as tasks:
        if settings.broker_url:  # beside the server, never around it: a broker fault never stops the server
            tasks.start_soon(relay_forever, relay, settings.broker_url, settings.broker_timeout_s)
        tasks.start_soon(announce_when_ready, backend, lambda: http.started, partial(ready_message, settings))
        if settings.watch_enabled:
            tasks.start_soon(state.start_watching().run)
        tasks.start_soon(exit_on_signals, *HTTP_SIGNALS)
        trap = SignalTrap()  # what uvicorn raises again once stopped: recorded; the shutdown goes on (stopping.py)
        await http.serve()
        tasks.cancel_scope.cancel()
    return trap.received


async def readiness(state: AppState) -> dict[str, str]:
    """Each service's /readyz, and the broker (reported, not required: reads work without it)."""
    checks = await state.backend.readiness()
    ping = getattr(state.jobs, "ping", None)
    if ping is not None:
        checks["broker"] = await ping()
    return checks


def where_data_lives(settings: McpSettings, embeddings: str = "") -> str:
    if settings.embedded:
        where = f"data: {data_folder(settings)} ({embedded_index(settings)})"
    else:
        urls = (settings.docling_service_url, settings.chunker_service_url, settings.vector_gateway_url)
        where = f"services: {', '.join(str(url) for url in urls)}"
    return f"{where}; {embeddings}" if embeddings else where


def ready_message(settings: McpSettings, embeddings: str = "") -> str:
    """What a person who ran `make run` needs once the server is ready: where it is and how to connect."""
    host = f"[{settings.host}]" if ":" in settings.host else settings.host
    url = f"http://{host}:{settings.port}/mcp"
    console = f"http://{host}:{settings.port}/"
    header, headers = "", ""
    if settings.auth_mode == "token":  # the token itself is never printed: the reader has it in AUTH_TOKEN
        header = ' --header "Authorization: Bearer $AUTH_TOKEN"'
        headers = ', "headers": {"Authorization": "Bearer ${AUTH_TOKEN}"}'
    lines = [
        f"ingestion-mcp is ready: MCP over streamable HTTP at {url}",
        f"  console: {console}" + (" (log in with AUTH_TOKEN)" if settings.auth_mode == "token" else ""),
        f"  tools: {', '.join(settings.profiles)}; {where_data_lives(settings, embeddings)}",
        f"  Claude Code: claude mcp add --transport http ingestion {url}{header}",
        f'  other clients: {{"mcpServers": {{"ingestion": {{"type": "http", "url": "{url}"{headers}}}}}}}',
    ]
    if not header:
        lines.append(f"  try it: npx @modelcontextprotocol/inspector --cli {url} --transport http --method tools/list")
    return "\n".join(lines)


def stdio_ready_line(settings: McpSettings, embeddings: str = "") -> str:
    tools = ", ".join(settings.profiles)
    return f"ingestion-mcp is ready on stdio; tools: {tools}; {where_data_lives(settings, embeddings)}"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="ingestion-mcp", description=__doc__)
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
    settings = settings_or_exit(McpSettings, "ingestion-mcp", **overrides)
    from servicekit import configure_idle_trim, configure_logging

    configure_logging(settings.log_level, json_logs=settings.json_logs)
    configure_idle_trim(settings.idle_trim_s)
    audit.configure(settings.audit_log, json_logs=settings.json_logs)  # its own sink: on at any log level
    try:
        # The tool set is checked before any service starts: a clash is a configuration error, said at once.
        build_server(AppState.create(settings, backend=None))  # type: ignore[arg-type]  # only the tool set is built
        if settings.auth_mode == "oauth":  # a bad policy file is a configuration error too
            OAuthGate.from_settings(settings)
    except (ProfileClash, PolicyError) as exc:
        print(f"ingestion-mcp: invalid configuration: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    if (problem := data_folder_problem(settings)) is not None:
        print(f"ingestion-mcp: {problem}", file=sys.stderr)
        raise SystemExit(2)
    stopped_by = anyio.run(serve, settings)
    if stopped_by is not None:
        die_as_signalled(stopped_by)


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


if __name__ == "__main__":
    main()
