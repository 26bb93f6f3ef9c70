"""Entry point: `ingestion-mcp [--transport stdio|streamable-http] [--host H] [--port P]`."""

from __future__ import annotations

import argparse
import gc
import hmac
import json
import logging
import os
import sys
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

import anyio
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from pydantic import ValidationError

from .access import audit
from .access.auth import OAuthGate, Refusal
from .access.policy import Caller, PolicyError, acting_as
from .backend import Backend
from .console import build_console
from .console import serves as console_serves
from .embedded.services import data_folder, embedded_index, open_backend
from .errors import ToolFailure
from .jobs.cancel_relay import CancelRelay, LegacyCancelMiddleware, relay_forever
from .observability import REGISTRY
from .server import ProfileClash, build_server
from .settings import McpSettings
from .state import AppState
from .tools.jsonrpc_guard import ParseGuard, run_stdio

log = logging.getLogger("ingestion_mcp")
LOOPBACK = ("127.0.0.1", "localhost", "::1")
SERVICE_PATHS = ("/queue", "/metrics")  # operator endpoints: in OAuth mode AUTH_TOKEN opens them too
# Not ready after this long (a slow model load, an unreachable service): say what is awaited, once.
STILL_STARTING_S = 60.0


# Checks /readyz reports without failing: a replica whose broker is away still serves every read tool, so
# taking it out of the Service would turn a broker outage into a full outage.
ADVISORY_CHECKS = frozenset({"broker"})


class HttpGuard:
    """Bearer token (constant-time), Origin and body-size checks in front of the streamable HTTP app."""

    def __init__(
        self,
        app: Any,
        *,
        token: str | None,
        allowed_origins: list[str],
        readiness: Callable[[], Awaitable[dict[str, str]]] | None = None,
        loopback: bool = True,
        queue_depth: Callable[[], Awaitable[dict[str, int]]] | None = None,
        max_body: int = 16 << 20,
        oauth: OAuthGate | None = None,
        service_token: str | None = None,
        console: Any | None = None,
    ) -> None:
        self.oauth = oauth
        # The operator console (console/): its pages authenticate themselves (a session cookie or the same bearer
        # checks as below), so it is served before this guard's bearer check.
        self.console = console
        # OAuth mode: the deployment's own credential (AUTH_TOKEN) still opens the operator endpoints, so the
        # worker autoscaler (KEDA on /queue) and metric scrapers need no user token; never the MCP endpoint.
        self.service_token = service_token.encode() if service_token else None
        self.loopback = loopback
        self.app = app
        self.token = token.encode() if token else None
        self.allowed_origins = set(allowed_origins)
        self.readiness = readiness
        self.queue_depth = queue_depth
        self.max_body = max_body

    def origin_allowed(self, origin: str) -> bool:
        # Browsers send Origin; other clients do not. Only configured origins (and, when bound to
        # loopback, local pages) may call: a web page cannot drive the server from a user's browser.
        host = origin.split("://", 1)[-1].rsplit(":", 1)[0].strip("[]")
        return origin in self.allowed_origins or (self.loopback and host in LOOPBACK)

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope["path"] == "/healthz":
            await _json(send, 200, {"status": "ok", "service": "ingestion-mcp"})
            return
        if scope["path"] == "/readyz":
            checks = await self.readiness() if self.readiness else {}
            ready = all(v == "ok" for k, v in checks.items() if k not in ADVISORY_CHECKS)
            status = "unavailable" if not ready else "ok" if all(v == "ok" for v in checks.values()) else "degraded"
            body = {"status": status, "service": "ingestion-mcp", "checks": checks}
            await _json(send, 200 if ready else 503, body)
            return
        if self.oauth is not None and self.oauth.serves(scope["path"]):
            await _send(send, 200, [(b"content-type", b"application/json")], self.oauth.metadata_body())
            return
        if self.console is not None and console_serves(scope["path"]):
            await self.console(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        origin = headers.get(b"origin", b"").decode("latin-1")
        if origin and not self.origin_allowed(origin):
            await _json(send, 403, {"error": f"Origin {origin!r} is not allowed.", "code": "FORBIDDEN_ORIGIN"})
            return
        if self.token:
            scheme, _, credential = headers.get(b"authorization", b"").partition(b" ")
            if scheme.lower() != b"bearer" or not hmac.compare_digest(credential.strip(), self.token):
                await _json(send, 401, {"error": "Missing or invalid bearer token.", "code": "UNAUTHORIZED"})
                return
        caller = Caller.everything()
        if self.oauth is not None and scope["path"] in SERVICE_PATHS and self._service_credential(headers):
            await self._serve(scope, receive, send, headers)
            return
        if self.oauth is not None:
            answer = await self.oauth.caller(headers)
            if isinstance(answer, Refusal):
                await _send(send, answer.status, answer.headers, answer.body)
                return
            caller = answer
        with acting_as(caller):
            await self._serve(scope, receive, send, headers)

    def _service_credential(self, headers: dict[bytes, bytes]) -> bool:
        scheme, _, credential = headers.get(b"authorization", b"").partition(b" ")
        return (
            bool(self.service_token)
            and scheme.lower() == b"bearer"
            and hmac.compare_digest(credential.strip(), self.service_token or b"")
        )

    async def _serve(self, scope: dict, receive: Any, send: Any, headers: dict[bytes, bytes]) -> None:
        if scope["path"] == "/metrics":
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-type", CONTENT_TYPE_LATEST.encode())]})  # fmt: skip
            await send({"type": "http.response.body", "body": generate_latest(REGISTRY)})
            return
        if scope["path"] == "/queue":
            await self._queue(send)
            return
        declared = headers.get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.max_body:
            await _json(send, 413, too_large(int(declared), self.max_body))
            return
        await self.app(scope, receive, send)

    async def _queue(self, send: Any) -> None:
        """Jobs waiting and running on the queue (JSON): what a worker autoscaler (KEDA metrics-api) reads."""
        if self.queue_depth is None:
            await _json(send, 404, {"error": "No job queue: INGESTION_MCP_BROKER_URL is not set.", "code": "NOT_FOUND"})
            return
        try:
            await _json(send, 200, await self.queue_depth())
        except ToolFailure as exc:
            await _json(send, 503, {"error": exc.message, "code": exc.code, "suggestion": exc.suggestion})


def too_large(size: int, limit: int) -> dict[str, Any]:
    return {
        "error": f"The request body is {size / 2**20:.1f} MiB; a request may carry at most {limit / 2**20:.1f} MiB "
        "(twice INGESTION_MCP_MAX_PAYLOAD_MB, for its JSON envelope).",
        "code": "PAYLOAD_TOO_LARGE",
        "suggestion": "Save the content to a file under an allowed folder and ingest the file (ingest_document).",
    }


async def _send(send: Any, status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> None:
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _json(send: Any, status: int, body: dict[str, Any]) -> None:
    payload = json.dumps(body).encode()
    headers = [(b"content-type", b"application/json")]
    if status == 401:
        headers.append((b"www-authenticate", b"Bearer"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})


async def serve(settings: McpSettings) -> None:
    async with open_backend(settings) as backend:
        state = AppState.create(settings, backend)
        server = build_server(state)
        try:
            if settings.transport == "stdio":
                async with anyio.create_task_group() as tasks:
                    # stdout is the protocol: the one line goes to stderr, where clients keep a server's log.
                    tasks.start_soon(announce_when_ready, backend, lambda: True, lambda: stdio_ready_line(settings))
                    if settings.watch_enabled:  # watched folders (ingest/watch.py): beside the server, never around it
                        tasks.start_soon(state.start_watching().run)
                    await run_stdio(server)  # the SDK's stdio, with malformed lines answered
                    tasks.cancel_scope.cancel()
                return
            await _serve_http(server, state)
        finally:
            with anyio.CancelScope(shield=True):
                await state.jobs.aclose()


async def announce_when_ready(
    backend: Backend, listening: Callable[[], bool], message: Callable[[], str], *, poll_s: float = 0.25
) -> None:
    """Print the message to stderr once the server listens and every service is ready (the model loaded).

    Printed earlier, it would be followed by the model's loading output and read as "still starting"."""
    began, told = anyio.current_time(), False
    while True:
        checks = await backend.readiness()
        if listening() and all(state == "ok" for state in checks.values()):
            break
        if not told and anyio.current_time() - began > STILL_STARTING_S:
            told = True
            pending = ", ".join(f"{name} ({state})" for name, state in checks.items() if state != "ok")
            print(f"ingestion-mcp is still starting; waiting for: {pending or 'the listener'}", file=sys.stderr)
        await anyio.sleep(poll_s)
    freeze_startup_objects()
    print(message(), file=sys.stderr, flush=True)


def freeze_startup_objects() -> None:
    """Move what start-up allocated (the model, the libraries: ~600,000 objects) out of the collector's reach.

    Each full collection walked them all: 350-400 ms pauses at random requests, the console's document page
    at p95 430 ms instead of 88 ms (docs/console.md). They live as long as the process anyway."""
    gc.collect()
    gc.freeze()


def http_app(server: Any, state: AppState, relay: CancelRelay) -> HttpGuard:
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
    guard = HttpGuard(
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
    guard.console = build_console(
        state, oauth=oauth, origin_allowed=guard.origin_allowed, max_body=settings.max_body_bytes
    )
    return guard


async def _serve_http(server: Any, state: AppState) -> None:
    import uvicorn

    settings, backend = state.settings, state.backend
    relay = CancelRelay()
    guarded = http_app(server, state, relay)
    config = uvicorn.Config(guarded, host=settings.host, port=settings.port, log_level=settings.log_level.lower())
    http = uvicorn.Server(config)
    async with anyio.create_task_group() as tasks:
        if settings.broker_url:  # beside the server, never around it: a broker fault never stops the server
            tasks.start_soon(relay_forever, relay, settings.broker_url, settings.broker_timeout_s)
        tasks.start_soon(announce_when_ready, backend, lambda: http.started, lambda: ready_message(settings))
        if settings.watch_enabled:
            tasks.start_soon(state.start_watching().run)
        await http.serve()
        tasks.cancel_scope.cancel()


async def readiness(state: AppState) -> dict[str, str]:
    """Each service's /readyz, and the broker (reported, not required: reads work without it)."""
    checks = await state.backend.readiness()
    ping = getattr(state.jobs, "ping", None)
    if ping is not None:
        checks["broker"] = await ping()
    return checks


def where_data_lives(settings: McpSettings) -> str:
    if settings.embedded:
        return f"data: {data_folder(settings)} ({embedded_index(settings)})"
    return f"services: {settings.docling_service_url}, {settings.chunker_service_url}, {settings.vector_gateway_url}"


def ready_message(settings: McpSettings) -> str:
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
        f"  tools: {', '.join(settings.profiles)}; {where_data_lives(settings)}",
        f"  Claude Code: claude mcp add --transport http ingestion {url}{header}",
        f'  other clients: {{"mcpServers": {{"ingestion": {{"type": "http", "url": "{url}"{headers}}}}}}}',
    ]
    if not header:
        lines.append(f"  try it: npx @modelcontextprotocol/inspector --cli {url} --transport http --method tools/list")
    return "\n".join(lines)


def stdio_ready_line(settings: McpSettings) -> str:
    return f"ingestion-mcp is ready on stdio; tools: {', '.join(settings.profiles)}; {where_data_lives(settings)}"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="ingestion-mcp", description=__doc__)
    parser.add_argument("--transport", choices=["stdio", "streamable-http"], help="default: stdio")
    parser.add_argument("--host", help="HTTP bind address (default 127.0.0.1)")
    parser.add_argument("--port", type=int, help="HTTP port (default 8000)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    from servicekit import configure_allocators

    # Before anything imports pyarrow or starts threads: memory an idle trim can give back (docs/memory.md).
    configure_allocators()
    args = parse_args(argv)
    overrides = {k: v for k, v in vars(args).items() if v is not None}
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    # The ready message says when the model is loaded; a progress bar and gRPC's own log (Milvus Lite's
    # keepalive chatter) would only bury it. Set either variable to see them.
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("GRPC_VERBOSITY", "NONE")
    try:
        settings = McpSettings(**overrides)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'settings'}: {e['msg']}" for e in exc.errors())
        print(f"ingestion-mcp: invalid configuration: {problems}", file=sys.stderr)
        raise SystemExit(2) from None
    from servicekit import configure_idle_trim, configure_logging

    configure_logging(settings.log_level)
    configure_idle_trim(settings.idle_trim_s)
    audit.configure(settings.audit_log)  # its own sink: on at any log level
    try:
        # The tool set is checked before any service starts: a clash is a configuration error, said at once.
        build_server(AppState.create(settings, backend=None))  # type: ignore[arg-type]  # only the tool set is built
        if settings.auth_mode == "oauth":  # a bad policy file is a configuration error too
            OAuthGate.from_settings(settings)
    except (ProfileClash, PolicyError) as exc:
        print(f"ingestion-mcp: invalid configuration: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    anyio.run(serve, settings)


if __name__ == "__main__":
    main()
