"""The front door of the streamable HTTP app: health and readiness, the OAuth metadata, the console, then the
Origin, bearer-token (or OAuth caller) and body-size checks before the MCP endpoint and the operator endpoints."""

from __future__ import annotations

import hmac
import json
from collections.abc import Awaitable, Callable
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from ..access.auth import OAuthGate, Refusal
from ..access.policy import Caller, acting_as
from ..console import serves as console_serves
from ..errors import ToolFailure
from ..observability import REGISTRY

LOOPBACK = ("127.0.0.1", "localhost", "::1")
SERVICE_PATHS = ("/queue", "/metrics")  # operator endpoints: in OAuth mode AUTH_TOKEN opens them too
# Checks /readyz reports without failing: a replica whose broker is away still serves every read tool, so
# taking it out of the Service would turn a broker outage into a full outage.
ADVISORY_CHECKS = frozenset({"broker"})


class FrontDoor:
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
        self.on_caller: Callable[[Caller], Awaitable[None]] | None = None  # told of each verified OAuth caller
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
            verified = await self._verified(self.oauth, headers, send)
            if verified is None:
                return
            caller = verified
        with acting_as(caller):
            await self._serve(scope, receive, send, headers)

    async def _verified(self, oauth: OAuthGate, headers: dict[bytes, bytes], send: Any) -> Caller | None:
        """The request's verified caller, or None once its refusal is sent."""
        answer = await oauth.caller(headers)
        if isinstance(answer, Refusal):
            await _send(send, answer.status, answer.headers, answer.body)
            return None
        if self.on_caller is not None:  # a watch owner's new token: their watches act with its rights
            await self.on_caller(answer)
        return answer

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
