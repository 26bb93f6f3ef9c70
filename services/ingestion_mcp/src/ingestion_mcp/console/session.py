"""The console's door: who the browser is (a signed session cookie or a bearer header), the CSRF token of its
session, and the security headers on every answer (docs/console.md).

The checks are those of the MCP endpoint (http/front_door.py): the static token compared in constant time, an
OAuth access token verified by the same OAuthGate (again on every request), the same Origin rule. Nothing is
kept in the process: the cookie carries the session, signed with a key every replica derives alike.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import jwt

from ..access.auth import OAuthGate, Refusal
from ..access.policy import Caller, acting_as
from ..settings import McpSettings

COOKIE = "ingestion_console"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
OPEN_PATHS = ("/login", "/logout", "/static/")  # served without a caller (the login form, its assets)
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'; "
    "form-action 'self'; base-uri 'none'; object-src 'none'"
)
SECURITY_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),
]


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Sessions:
    """Signed session cookies: ``payload.signature``, HMAC-SHA256 over the JSON payload."""

    def __init__(self, key: bytes, lifetime_s: int) -> None:
        self.key, self.lifetime_s = key, lifetime_s

    @classmethod
    def from_settings(cls, settings: McpSettings) -> Sessions:
        secret = settings.console_secret or settings.auth_token
        if secret is None:  # none mode (one loopback process), or OAuth without a secret: one replica only
            return cls(secrets.token_bytes(32), settings.console_session_s)
        key = hmac.new(secret.get_secret_value().encode(), b"ingestion-mcp console session v1", hashlib.sha256)
        return cls(key.digest(), settings.console_session_s)

    def new(self, **fields: Any) -> dict[str, Any]:
        return {"sid": secrets.token_urlsafe(16), "exp": int(time.time()) + self.lifetime_s, **fields}

    def sign(self, session: dict[str, Any]) -> str:
        body = _b64(json.dumps(session, separators=(",", ":")).encode())
        return f"{body}.{_b64(hmac.new(self.key, body.encode(), hashlib.sha256).digest())}"

    def read(self, cookie: str | None) -> dict[str, Any] | None:
        """The session a cookie holds, if its signature is ours and it has not expired."""
        body, _, signature = (cookie or "").partition(".")
        if not body or not signature:
            return None
        expected = _b64(hmac.new(self.key, body.encode(), hashlib.sha256).digest())
        if not hmac.compare_digest(signature, expected):
            return None
        try:
            session = json.loads(_unb64(body))
        except ValueError:
            return None
        if not isinstance(session, dict) or not isinstance(session.get("exp"), int) or session["exp"] < time.time():
            return None
        return session

    def csrf(self, session: dict[str, Any]) -> str:
        return hmac.new(self.key, f"csrf:{session['sid']}".encode(), hashlib.sha256).hexdigest()


@dataclass
class Visitor:
    """What a console page knows of its request (request.state.visitor)."""

    caller: Caller | None
    session: dict[str, Any] | None
    csrf: str | None  # None: the request authenticated with a header, no cookie, so no CSRF token is needed
    mode: str
    secure: bool
    set_cookie: str | None = None  # a new session to send back

    def csrf_ok(self, submitted: str | None) -> bool:
        return self.csrf is None or (submitted is not None and hmac.compare_digest(submitted, self.csrf))

    @property
    def logged_in(self) -> bool:
        return self.session is not None and self.mode != "none"


def cookie_header(value: str, *, secure: bool, max_age: int) -> bytes:
    flags = f"; Path=/; HttpOnly; SameSite=Strict; Max-Age={max_age}" + ("; Secure" if secure else "")
    return f"{COOKIE}={value}{flags}".encode()


class ConsoleGate:
    """ASGI: authenticate a console request, then serve it acting as its caller, security headers added."""

    def __init__(
        self,
        app: Any,
        settings: McpSettings,
        *,
        oauth: OAuthGate | None,
        origin_allowed: Callable[[str], bool],
        max_body: int,
    ) -> None:
        self.app, self.oauth, self.origin_allowed, self.max_body = app, oauth, origin_allowed, max_body
        self.mode = settings.auth_mode
        token = settings.token_value()
        self.token = token.encode() if token and self.mode == "token" else None
        self.sessions = Sessions.from_settings(settings)

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        send = self._with_headers(scope, send)
        path, method = scope["path"], scope["method"]
        if path.startswith("/static/"):
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        origin = headers.get(b"origin", b"").decode("latin-1")
        if method not in SAFE_METHODS and origin and not self._same_origin(origin, headers, scope):
            await _text(send, 403, f"Origin {origin!r} is not allowed.")
            return
        declared = headers.get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.max_body:
            await _text(send, 413, f"The request is larger than {self.max_body / 2**20:.0f} MiB.")
            return
        visitor = await self.visitor(scope, headers)
        scope.setdefault("state", {})["visitor"] = visitor
        if visitor.caller is None and not path.startswith(OPEN_PATHS):
            if method in SAFE_METHODS and b"hx-request" not in headers:
                query = scope["query_string"].decode("latin-1")
                target = quote(path + (f"?{query}" if query else ""))
                await _redirect(send, f"/login?next={target}")
            else:
                await _text(send, 401, "Log in first (/login), or send Authorization: Bearer <token>.")
            return
        with acting_as(visitor.caller or Caller(subject=None, grants=())):
            await self.app(scope, receive, send)

    def _same_origin(self, origin: str, headers: dict[bytes, bytes], scope: dict) -> bool:
        host = headers.get(b"host", b"").decode("latin-1")
        scheme = "https" if _secure(scope, headers) else "http"
        return origin == f"{scheme}://{host}" or self.origin_allowed(origin)

    async def visitor(self, scope: dict, headers: dict[bytes, bytes]) -> Visitor:
        """Who the request is: a bearer header first (no CSRF needed), else the session cookie."""
        secure = _secure(scope, headers)
        if headers.get(b"authorization"):
            caller = await self.from_header(headers)
            return Visitor(caller, None, None, self.mode, secure)
        session = self.sessions.read(_cookie(headers))
        if self.mode == "none":
            fresh = session is None
            session = session or self.sessions.new()
            visitor = Visitor(Caller.everything(), session, self.sessions.csrf(session), self.mode, secure)
            if fresh:
                visitor.set_cookie = self.sessions.sign(session)
            return visitor
        caller = await self.from_session(session) if session else None
        if caller is None:
            return Visitor(None, None, None, self.mode, secure)
        return Visitor(caller, session, self.sessions.csrf(session or {}), self.mode, secure)

    async def from_header(self, headers: dict[bytes, bytes]) -> Caller | None:
        if self.mode == "none":
            return Caller.everything()
        if self.oauth is not None:
            answer = await self.oauth.caller(headers)
            return None if isinstance(answer, Refusal) else answer
        scheme, _, credential = headers.get(b"authorization", b"").partition(b" ")
        good = scheme.lower() == b"bearer" and hmac.compare_digest(credential.strip(), self.token or b"")
        return Caller.everything() if good else None

    async def from_session(self, session: dict[str, Any]) -> Caller | None:
        if self.oauth is None:
            return Caller.everything() if session.get("mode") == "token" and self.token else None
        token = session.get("token")
        if not isinstance(token, str):
            return None
        answer = await self.oauth.caller({b"authorization": f"Bearer {token}".encode()})
        return None if isinstance(answer, Refusal) else answer

    async def login(self, token: str) -> tuple[dict[str, Any] | None, str | None]:
        """A new session for a token typed into the login form, or why it is refused."""
        if self.mode == "none":
            return self.sessions.new(), None
        if self.oauth is None:
            if self.token and hmac.compare_digest(token.encode(), self.token):
                return self.sessions.new(mode="token"), None
            return None, "That is not this server's token."
        answer = await self.oauth.caller({b"authorization": f"Bearer {token}".encode()})
        if isinstance(answer, Refusal):
            return None, str(json.loads(answer.body).get("error", "The token is refused."))
        expires = jwt.decode(token, options={"verify_signature": False}).get("exp")  # verified just above
        session = self.sessions.new(mode="oauth", token=token)
        session["exp"] = min(session["exp"], int(expires)) if isinstance(expires, int | float) else session["exp"]
        return session, None

    def _with_headers(self, scope: dict, send: Any) -> Any:
        async def sending(message: dict) -> None:
            if message["type"] == "http.response.start":
                visitor: Visitor | None = scope.get("state", {}).get("visitor")
                extra = list(SECURITY_HEADERS)
                if not scope["path"].startswith("/static/"):
                    extra.append((b"cache-control", b"no-store"))
                if visitor is not None and visitor.set_cookie:
                    extra.append((b"set-cookie", cookie_header(visitor.set_cookie, secure=visitor.secure,
                                                               max_age=self.sessions.lifetime_s)))  # fmt: skip
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        return sending


def _secure(scope: dict, headers: dict[bytes, bytes]) -> bool:
    # Behind a TLS-terminating route the scheme arrives as X-Forwarded-Proto.
    return scope.get("scheme") == "https" or headers.get(b"x-forwarded-proto", b"").lower() == b"https"


def _cookie(headers: dict[bytes, bytes]) -> str | None:
    for part in headers.get(b"cookie", b"").decode("latin-1").split(";"):
        name, _, value = part.strip().partition("=")
        if name == COOKIE:
            return value
    return None


async def _text(send: Any, status: int, text: str) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8")]})  # fmt: skip
    await send({"type": "http.response.body", "body": text.encode()})


async def _redirect(send: Any, location: str) -> None:
    await send({"type": "http.response.start", "status": 303, "headers": [(b"location", location.encode())]})
    await send({"type": "http.response.body", "body": b""})
