"""The server once its entry point (cli/server_command.py) has read the settings: the backend, the MCP server over
stdio or streamable HTTP, the ready message. Imported after `initialize` may already have been answered
(handshake.py)."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio
from servicekit import freeze_when_quiet
from servicekit.logging import announce

from .backend import Backend
from .embedded.services import data_folder, embedded_index, open_backend
from .handshake import EarlyStdio
from .http.jsonrpc_errors import ParseGuard, run_stdio
from .server import build_server
from .settings import McpSettings
from .state import AppState

if TYPE_CHECKING:
    from .http.cancel_relay import CancelRelay
    from .http.front_door import FrontDoor
    from .http.loading_front import LoadingFront

log = logging.getLogger("ingestion_mcp")
# Not ready after this long (a slow model load, an unreachable service): say what is awaited, once.
STILL_STARTING_S = 60.0


async def serve_or_refuse(settings: McpSettings, early: EarlyStdio | None, front: LoadingFront | None) -> int:
    """serve(), or 2 with one line on stderr when the configuration is refused (a profile clash, a bad policy)."""
    from .access import audit
    from .access.auth import OAuthGate
    from .access.policy import PolicyError
    from .server import ProfileClash

    audit.configure(settings.audit_log, json_logs=settings.json_logs)  # its own sink: on at any log level
    try:
        if settings.auth_mode == "oauth":  # a bad policy file is a configuration error
            OAuthGate.from_settings(settings)
        await serve(settings, early, front)  # the tool set is built first: a profile clash ends it at once
    except (ProfileClash, PolicyError) as exc:
        print(f"ingestion-mcp: invalid configuration: {exc}", file=sys.stderr)
        return 2
    return 0


async def serve(settings: McpSettings, early: EarlyStdio | None = None, front: LoadingFront | None = None) -> None:
    """Serve until the client leaves (stdio) or the process is stopped (HTTP, behind ``front``, which uvicorn
    serves). The services start in the background: a call that needs them waits for them."""
    async with open_backend(settings, background=True) as backend:
        state = AppState.create(settings, backend)
        # In a thread (its imports take a second): the services' start goes on meanwhile on this loop.
        server = await anyio.to_thread.run_sync(build_server, state)
        try:
            if settings.transport == "stdio":
                async with anyio.create_task_group() as tasks:
                    # stdout is the protocol: the one line goes to stderr, where clients keep a server's log.
                    tasks.start_soon(announce_when_ready, backend, lambda: True, partial(stdio_ready_line, settings))
                    if settings.watch_enabled:  # watched folders (ingest/watch.py): beside the server, never around it
                        tasks.start_soon(state.start_watching().run)
                    await run_stdio(server, early)  # the SDK's stdio, with malformed lines answered
                    tasks.cancel_scope.cancel()
                return
            assert front is not None, "streamable HTTP is served behind the front server_command.serve_http starts"
            await _serve_http(server, state, front)
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
    freeze_when_quiet()  # what start-up allocated: out of the collector's full passes
    announce(message(await embeddings_note(backend)), "ingestion_mcp", event="ready")


async def embeddings_note(backend: Backend) -> str:
    """The model and the precision it loaded at ("embeddings: sentence-transformers/all-MiniLM-L6-v2, int8"; int8 on
    CPUs with int8 dot products, docs/embeddings.md); "" when the gateway cannot say (an older one, or none)."""
    try:
        info = await backend.embedding_model()
    except Exception:  # noqa: BLE001 - the ready line goes out without it rather than not at all
        return ""
    return f"embeddings: {info.model}" + (f", {info.precision}" if info.precision else "")


def http_app(server: Any, state: AppState, relay: CancelRelay) -> FrontDoor:
    """The streamable HTTP app behind its guard: what uvicorn serves (tests serve it in-process too)."""
    from mcp.server.transport_security import TransportSecuritySettings

    from .access.auth import OAuthGate
    from .console import build_console
    from .http.cancel_relay import LegacyCancelMiddleware
    from .http.front_door import LOOPBACK, FrontDoor

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


async def _serve_http(server: Any, state: AppState, front: LoadingFront) -> None:
    """The guarded app attached behind the front (which uvicorn serves already) until uvicorn stops."""
    from .http.cancel_relay import CancelRelay, relay_forever

    settings, backend = state.settings, state.backend
    relay = CancelRelay()
    guarded = http_app(server, state, relay)
    async with lifespan_app(guarded).router.lifespan_context(guarded):  # the SDK's session manager runs in it
        front.attach(guarded)
        async with anyio.create_task_group() as tasks:
            if settings.broker_url:  # beside the server, never around it: a broker fault never stops the server
                tasks.start_soon(relay_forever, relay, settings.broker_url, settings.broker_timeout_s)
            tasks.start_soon(announce_when_ready, backend, lambda: True, partial(ready_message, settings))
            if settings.watch_enabled:
                tasks.start_soon(state.start_watching().run)
            await front.stopped()
            tasks.cancel_scope.cancel()


def lifespan_app(app: Any) -> Any:
    """The Starlette app at the core of the guarded one (each middleware holds the next as ``app``)."""
    while not hasattr(app, "router"):
        app = app.app
    return app


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
