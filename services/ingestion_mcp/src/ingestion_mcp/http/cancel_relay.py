"""Cancel for 2025-11-25 clients when streamable HTTP keeps no sessions (any replica answers any request).

A 2026-07-28 client cancels by closing its request's response stream, which reaches the replica
running the call on its own. A 2025-11-25 client instead POSTs `notifications/cancelled` naming its
request id, and in stateless mode that POST lands on any replica, in a fresh transport that drops
it: the call runs on. So, in front of the SDK's app, this middleware

- gives every 2025-11-25 client a random session id at `initialize` (the header the revision
  defines; the stateless SDK ignores it), which the client then sends on each request;
- runs each request of such a client under a cancel scope registered as (session, request id);
- turns a `notifications/cancelled` into a cancel of that scope, here or, through the broker's
  pub/sub when one is configured, on whichever replica holds it.

The session id is unguessable and only ever names its own client's requests, so no caller can
cancel another's work (the reason the SDK refuses to act on bare request ids).
"""

from __future__ import annotations

import contextlib
import json
import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from .body import read_body, replaying

log = logging.getLogger("ingestion_mcp.cancel_relay")
SESSION_HEADER = b"mcp-session-id"
CHANNEL = "ingestion-mcp:cancel"
BACKOFF_MIN_S, BACKOFF_MAX_S = 0.2, 5.0
PING_EVERY_S = 10.0
Publish = Callable[[str], Awaitable[None]]


class CancelRelay:
    """The running calls of this replica by (session, request id), and how to reach the others'."""

    def __init__(self) -> None:
        self._running: dict[tuple[str, str], anyio.CancelScope] = {}
        self.publish: Publish | None = None  # set when a broker carries cancels between replicas

    @contextlib.contextmanager
    def running(self, key: tuple[str, str]) -> Any:
        with anyio.CancelScope() as scope:
            self._running[key] = scope
            try:
                yield scope
            finally:
                self._running.pop(key, None)

    def cancel_here(self, key: tuple[str, str]) -> bool:
        scope = self._running.get(key)
        if scope is not None:
            scope.cancel()
        return scope is not None

    async def cancel(self, key: tuple[str, str]) -> None:
        if not self.cancel_here(key) and self.publish is not None:
            await self.publish(json.dumps(list(key)))

    def on_message(self, payload: str | bytes) -> None:
        """A cancel published by another replica: act on it if the call runs here."""
        try:
            session, request_id = json.loads(payload)
        except (ValueError, TypeError):
            log.warning("ignored a malformed cancel message on %s", CHANNEL)
            return
        self.cancel_here((str(session), str(request_id)))


class LegacyCancelMiddleware:
    """ASGI middleware in front of the stateless streamable HTTP app (see the module's text)."""

    def __init__(self, app: Any, relay: CancelRelay, *, path: str = "/mcp", max_body: int = 16 << 20) -> None:
        self.app, self.relay, self.path, self.max_body = app, relay, path, max_body

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"].rstrip("/") != self.path:
            await self.app(scope, receive, send)
            return
        session = dict(scope.get("headers") or []).get(SESSION_HEADER, b"").decode("latin-1")
        if scope["method"] == "GET" and session:
            # No standalone stream is kept for a session that lives nowhere: the revision allows a 405.
            await _empty(send, 405)
            return
        if scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        body, more = await read_body(receive, self.max_body)
        message = _parse(body) if not more else None
        replay = replaying(body, more, receive)
        method = message.get("method") if message else None
        if message and method == "initialize" and "id" in message:
            await self.app(scope, replay, _with_session(send, uuid.uuid4().hex))
        elif session and message and method == "notifications/cancelled":
            request_id = (message.get("params") or {}).get("requestId")
            if request_id is not None:
                await self.relay.cancel((session, str(request_id)))
            await _empty(send, 202)
        elif session and message and "id" in message and method:
            await self._cancellable(scope, replay, send, (session, str(message["id"])))
        else:
            await self.app(scope, replay, send)

    async def _cancellable(self, scope: dict[str, Any], receive: Any, send: Any, key: tuple[str, str]) -> None:
        started = finished = False

        async def sending(message: dict[str, Any]) -> None:
            nonlocal started, finished
            started = started or message["type"] == "http.response.start"
            finished = finished or (message["type"] == "http.response.body" and not message.get("more_body"))
            await send(message)

        with self.relay.running(key) as cancelled:
            await self.app(scope, receive, sending)
        if cancelled.cancelled_caught and not finished:
            # The client gave the call up; end its response properly (it may be gone already).
            with contextlib.suppress(Exception):
                if not started:
                    await _empty(send, 202)
                else:
                    await send({"type": "http.response.body", "body": b"", "more_body": False})


async def relay_forever(relay: CancelRelay, broker_url: str, timeout_s: float = 3.0) -> None:
    """Carry cancels between replicas on the broker's pub/sub for as long as the server runs.

    Runs beside the HTTP server, never inside it: a broker that restarts, freezes or is unreachable costs
    only the cross-replica cancels of 2025-11-25 clients meanwhile (each is best effort), never the server.
    The subscription is renewed with a bounded backoff; a silent connection is found by a periodic ping."""
    from redis import asyncio as redis

    client = redis.from_url(broker_url, socket_connect_timeout=timeout_s, socket_timeout=timeout_s)

    async def publish(payload: str) -> None:
        try:
            await client.publish(CHANNEL, payload)
        except Exception as exc:  # noqa: BLE001 - best effort: the call runs on where it is
            log.warning("could not relay a cancel through the broker: %s", type(exc).__name__)

    relay.publish = publish
    backoff = BACKOFF_MIN_S
    try:
        while True:
            try:
                await _subscribed(relay, client)
            except Exception as exc:  # noqa: BLE001 - any broker fault: subscribe again, later
                log.warning("cancel relay lost the broker (%s); resubscribing in %.1f s", type(exc).__name__, backoff)
                await anyio.sleep(backoff)
                backoff = min(backoff * 2, BACKOFF_MAX_S)
            else:
                backoff = BACKOFF_MIN_S
    finally:
        relay.publish = None
        with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
            await client.aclose()


async def _subscribed(relay: CancelRelay, client: Any) -> None:
    """Receive cancels until the connection fails (an exception)."""
    pubsub = client.pubsub(ignore_subscribe_messages=True)
    try:
        await pubsub.subscribe(CHANNEL)
        pinged = anyio.current_time()
        while True:
            item = await pubsub.get_message(ignore_subscribe_messages=True, timeout=1.0)
            if item is not None and item.get("type") == "message":  # not the answer to our ping
                relay.on_message(item["data"])
            if anyio.current_time() - pinged > PING_EVERY_S:
                await pubsub.ping()  # a frozen or vanished broker shows here (socket timeout)
                pinged = anyio.current_time()
    finally:
        with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
            await pubsub.aclose()


def _parse(body: bytes) -> dict[str, Any] | None:
    try:
        message = json.loads(body)
    except ValueError:
        return None
    return message if isinstance(message, dict) else None


def _with_session(send: Any, session: str) -> Any:
    async def sending(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            headers = [h for h in message.get("headers", []) if h[0].lower() != SESSION_HEADER]
            message = {**message, "headers": [*headers, (SESSION_HEADER, session.encode())]}
        await send(message)

    return sending


async def _empty(send: Any, status: int) -> None:
    await send({"type": "http.response.start", "status": status, "headers": [(b"content-length", b"0")]})
    await send({"type": "http.response.body", "body": b""})
