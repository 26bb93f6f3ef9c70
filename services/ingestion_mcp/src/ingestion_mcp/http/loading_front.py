"""The streamable HTTP endpoint from the process's first moment (issue 49): what uvicorn serves while the MCP
server loads behind it, and then in front of it.

The entry point starts uvicorn on this app as soon as the settings are read (uvicorn imports in ~0.1 s); the MCP
SDK, the tools and the services load meanwhile (seconds) and are attached (``attach``) once built. Until then:
``/healthz`` answers (the process is up), ``/readyz`` says it is starting, an `initialize` that needs no more than
the checks below is answered here with the SDK's own answer (handshake.answer, written as the SDK writes it: one
server-sent event), and every other request waits for the server (up to ``wait_s``, then 503 with Retry-After).
Once attached, every request goes to the guarded app (http/front_door.py) unchanged.

An `initialize` is answered early only when no check of the guard could refuse it: no Origin header (a browser
always sends one, so no web page can reach this path), the bearer token when one is configured (compared in
constant time), the default stateless mode (a stateful server hands out sessions the SDK must know), both media
types accepted, a JSON body of at most 1 MiB; never under OAuth (the caller is checked by the authorization server).
Anything else waits for the guarded app, which answers it as always.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import uuid
from typing import Any

from ..handshake import answer
from .body import read_body, replaying

MCP_PATH = "/mcp"
EARLY_BODY_LIMIT = 1 << 20
WAIT_S = 60.0  # a request waits this long for the server to load (a cold start: seconds), then 503


class LoadingFront:
    """ASGI: answers while the server loads, then hands every request to it."""

    def __init__(
        self, *, profiles: list[str], token: str | None, early: bool, loopback_hosts: tuple[str, ...] | None,
        wait_s: float = WAIT_S,
    ) -> None:  # fmt: skip
        """``early``: `initialize` may be answered here (not under OAuth, nor when stateful); ``token``: the bearer
        token an early answer needs; ``loopback_hosts``: the Host names accepted when bound to loopback (the SDK's
        DNS-rebinding check), None when bound elsewhere."""
        self.profiles, self.early, self.wait_s = profiles, early, wait_s
        self.token = token.encode() if token else None
        self.loopback_hosts = loopback_hosts
        self.target: Any = None
        self._attached: asyncio.Event | None = None
        self._stopping: asyncio.Event | None = None  # set when uvicorn shuts down (the lifespan's end)

    def _events(self) -> tuple[asyncio.Event, asyncio.Event]:
        if self._attached is None or self._stopping is None:  # made on the serving loop, at first use
            self._attached, self._stopping = asyncio.Event(), asyncio.Event()
        return self._attached, self._stopping

    async def stopped(self) -> None:
        """Until uvicorn shuts down."""
        await self._events()[1].wait()

    def attach(self, app: Any) -> None:
        """From now on every request goes to ``app`` (its lifespan entered by the caller)."""
        self.target = app
        self._events()[0].set()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if self.target is None and scope["type"] == "http":
            if scope["path"] in ("/healthz", "/readyz"):
                ready = scope["path"] == "/healthz"
                await _json(send, 200 if ready else 503, _health(scope["path"]), retry_after=not ready)
                return
            if self._may_answer(scope):
                body, more = await read_body(receive, EARLY_BODY_LIMIT)
                if not more and await self._answered(body, send):
                    return
                receive = replaying(body, more, receive)
            if not await self._wait_attached():
                await _json(send, 503, {"error": "ingestion-mcp is still starting.", "code": "SERVICE_UNAVAILABLE",
                                        "suggestion": "Retry in a few seconds."}, retry_after=True)  # fmt: skip
                return
        await self.target(scope, receive, send)

    async def _wait_attached(self) -> bool:
        attached = self._events()[0]
        try:
            await asyncio.wait_for(attached.wait(), self.wait_s)
        except TimeoutError:
            return False
        return True

    def _may_answer(self, scope: dict[str, Any]) -> bool:
        if not self.early or scope["method"] != "POST" or scope["path"].rstrip("/") != MCP_PATH:
            return False
        headers = dict(scope.get("headers") or [])
        if b"origin" in headers or b"json" not in headers.get(b"content-type", b""):
            return False
        accept = headers.get(b"accept", b"")
        if b"application/json" not in accept or b"text/event-stream" not in accept:
            return False
        if self.loopback_hosts is not None:
            host = headers.get(b"host", b"").decode("latin-1").rsplit(":", 1)[0].strip("[]")
            if host not in self.loopback_hosts:
                return False
        if self.token is None:
            return True
        scheme, _, credential = headers.get(b"authorization", b"").partition(b" ")
        return scheme.lower() == b"bearer" and hmac.compare_digest(credential.strip(), self.token)

    async def _answered(self, body: bytes, send: Any) -> bool:
        try:
            request = json.loads(body)
        except ValueError:
            return False
        reply = answer(request, self.profiles) if isinstance(request, dict) else None
        if reply is None:
            return False
        event = b"event: message\r\ndata: " + json.dumps(reply, ensure_ascii=False, separators=(",", ":")).encode()
        headers = [
            (b"cache-control", b"no-cache, no-transform"), (b"connection", b"keep-alive"),
            (b"content-type", b"text/event-stream"), (b"x-accel-buffering", b"no"),
            (b"mcp-session-id", uuid.uuid4().hex.encode()),
        ]  # fmt: skip
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": event + b"\r\n\r\n"})
        return True

    async def _lifespan(self, receive: Any, send: Any) -> None:
        """uvicorn's start and stop: started at once; the stop is told to whoever attached the server."""
        stopping = self._events()[1]
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                stopping.set()
                await send({"type": "lifespan.shutdown.complete"})
                return


def _health(path: str) -> dict[str, Any]:
    if path == "/healthz":
        return {"status": "ok", "service": "ingestion-mcp"}
    return {"status": "unavailable", "service": "ingestion-mcp", "checks": {"server": "starting"}}


async def _json(send: Any, status: int, body: dict[str, Any], *, retry_after: bool = False) -> None:
    headers = [(b"content-type", b"application/json")] + ([(b"retry-after", b"5")] if retry_after else [])
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": json.dumps(body).encode()})
