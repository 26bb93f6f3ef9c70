"""One pure-ASGI middleware: request id, bearer auth, request metrics."""

from __future__ import annotations

import hmac
import json
import logging
import time
import uuid
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram

from .context import REQUEST_ID_HEADER, REQUEST_ID_SCOPE_KEY, request_id_var
from .memory import idle_trimmer

OPEN_PATHS = frozenset({"/healthz", "/readyz"})
QUIET_PATHS = frozenset({*OPEN_PATHS, "/metrics"})
log = logging.getLogger("servicekit.access")
_HEADER = REQUEST_ID_HEADER.lower().encode()


class Metrics:
    """Per-app registry so several apps can live in one process (embedded mode, tests)."""

    def __init__(self, service: str) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "http_requests_total", "HTTP requests", ["service", "method", "route", "status"], registry=self.registry
        )
        self.latency = Histogram(
            "http_request_duration_seconds",
            "HTTP request latency",
            ["service", "method", "route"],
            registry=self.registry,
        )
        self.stage = Histogram(
            "stage_duration_seconds", "Time spent in a pipeline stage", ["service", "stage"], registry=self.registry
        )
        self.service = service

    def observe_stage(self, stage: str, seconds: float) -> None:
        self.stage.labels(self.service, stage).observe(seconds)


def _valid_request_id(raw: bytes) -> str | None:
    value = raw.decode("latin-1")[:128]
    return value if value and all(c.isalnum() or c in "-_." for c in value) else None


class ServiceMiddleware:
    def __init__(self, app: Any, *, auth_token: str | None, metrics: Metrics) -> None:
        self.app = app
        self.token = auth_token.encode() if auth_token else None
        self.metrics = metrics

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        request_id = _valid_request_id(headers.get(_HEADER, b"")) or uuid.uuid4().hex
        token = request_id_var.set(request_id)
        scope[REQUEST_ID_SCOPE_KEY] = request_id  # for the 500 handler, which runs outside this middleware
        status = {"code": 500}

        async def send_wrapper(message: dict) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
                message.setdefault("headers", []).append((_HEADER, request_id.encode()))
            await send(message)

        started = time.perf_counter()
        try:
            if self.token and scope["path"] not in OPEN_PATHS and not self._authorized(headers):
                await self._unauthorized(send_wrapper, request_id)
                return
            if scope["path"] in QUIET_PATHS:
                await self.app(scope, receive, send_wrapper)
            else:
                with idle_trimmer().busy():  # its freed buffers go back once the process is quiet (memory.py)
                    await self.app(scope, receive, send_wrapper)
        finally:
            self._record(scope, status["code"], time.perf_counter() - started)
            request_id_var.reset(token)

    def _record(self, scope: dict, status: int, seconds: float) -> None:
        route = scope.get("route")
        label = getattr(route, "path", None) or "unmatched"
        method = scope["method"]
        self.metrics.requests.labels(self.metrics.service, method, label, str(status)).inc()
        self.metrics.latency.labels(self.metrics.service, method, label).observe(seconds)
        # One JSON line per request with its request id (probes only at DEBUG: they poll every few seconds).
        level = logging.DEBUG if scope["path"] in QUIET_PATHS else logging.INFO
        fields = {"service": self.metrics.service, "method": method, "path": scope["path"], "status": status}
        fields["duration_ms"] = round(seconds * 1000, 1)
        log.log(level, "%s %s %s", method, scope["path"], status, extra=fields)

    def _authorized(self, headers: dict[bytes, bytes]) -> bool:
        value = headers.get(b"authorization", b"")
        scheme, _, credential = value.partition(b" ")
        return scheme.lower() == b"bearer" and hmac.compare_digest(credential.strip(), self.token or b"")

    @staticmethod
    async def _unauthorized(send: Any, request_id: str) -> None:
        body = json.dumps(
            {
                "error": "Missing or invalid bearer token.",
                "code": "UNAUTHORIZED",
                "suggestion": "Send 'Authorization: Bearer <AUTH_TOKEN>'.",
                "request_id": request_id,
            }
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")],
            }
        )
        await send({"type": "http.response.body", "body": body})
