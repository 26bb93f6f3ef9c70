"""The MCP endpoint's OAuth gate: who calls (a verified token), what they may do (the policy), and the
RFC 9728 metadata that tells a client where to get a token.

Three modes (settings.auth_mode): none (loopback only), a static AUTH_TOKEN (one caller, every right; checked
in http/front_door.py as before) and OAuth (this module). The token stops here: the backend's clients send only
the server's own service credential to the internal services.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from mcp.server.auth.routes import build_resource_metadata_url
from mcp.shared.auth import ProtectedResourceMetadata
from pydantic import AnyHttpUrl

from ..settings import McpSettings
from .oauth import JwksCache, JwtVerifier
from .policy import AccessPolicy, Caller, LivePolicy

WELL_KNOWN = "/.well-known/oauth-protected-resource"


@dataclass
class Refusal:
    """An HTTP answer instead of the MCP app's: 401 (no or bad token) or 403 (a token without any right)."""

    status: int
    headers: list[tuple[bytes, bytes]]
    body: bytes


class OAuthGate:
    def __init__(self, verifier: JwtVerifier, policy: AccessPolicy | LivePolicy, *, resource: str, issuer: str) -> None:
        self.verifier = verifier
        self.live = policy if isinstance(policy, LivePolicy) else None
        self.policy = policy.current() if isinstance(policy, LivePolicy) else policy
        self.metadata = ProtectedResourceMetadata(
            resource=AnyHttpUrl(resource), authorization_servers=[AnyHttpUrl(issuer)],
            scopes_supported=self.policy.scopes or None, bearer_methods_supported=["header"],
            resource_name="ingestion-mcp",
        )  # fmt: skip
        self.metadata_url = str(build_resource_metadata_url(AnyHttpUrl(resource)))

    @classmethod
    def from_settings(cls, settings: McpSettings) -> OAuthGate:
        """Raises access.PolicyError for a bad policy file: a start-up error, said before serving."""
        assert settings.oauth_issuer and settings.oauth_audience and settings.access_policy  # settings checked
        keys = JwksCache(
            url=settings.oauth_jwks_url, file=settings.oauth_jwks_file, refetch_s=settings.oauth_jwks_refetch_s
        )
        verifier = JwtVerifier(
            issuer=settings.oauth_issuer, audience=settings.oauth_audience, algorithms=settings.oauth_algorithms,
            keys=keys, leeway_s=settings.oauth_leeway_s,
        )  # fmt: skip
        policy = LivePolicy(settings.access_policy)  # (a bad file raises PolicyError here: a start-up error)
        return cls(verifier, policy, resource=settings.oauth_audience, issuer=settings.oauth_issuer)

    def serves(self, path: str) -> bool:
        return path == WELL_KNOWN or path.startswith(WELL_KNOWN + "/")

    def metadata_body(self) -> bytes:
        return self.metadata.model_dump_json(exclude_none=True).encode()

    async def caller(self, headers: dict[bytes, bytes]) -> Caller | Refusal:
        """The caller a request's bearer token makes, or the refusal to send."""
        scheme, _, credential = headers.get(b"authorization", b"").decode("latin-1").partition(" ")
        token = credential.strip() if scheme.lower() == "bearer" else ""
        if not token:
            return self._refusal(401, None, "Missing bearer token.")
        access = await self.verifier.verify_token(token)
        if access is None:
            return self._refusal(401, "invalid_token", "The access token is invalid, expired or not for this server.")
        if self.live is not None:  # an edited policy file applies from the next request on
            self.policy = self.live.current()
        caller = self.policy.caller(access.claims or {})
        if not caller.grants:
            return self._refusal(403, "insufficient_scope", "The access token grants no right on any collection.")
        return caller

    def _refusal(self, status: int, error: str | None, message: str) -> Refusal:
        challenge = f'Bearer resource_metadata="{self.metadata_url}"'
        if error:
            challenge += f', error="{error}", error_description="{message}"'
        body: dict[str, Any] = {"error": message, "code": "UNAUTHORIZED" if status == 401 else "FORBIDDEN"}
        headers = [(b"content-type", b"application/json"), (b"www-authenticate", challenge.encode())]
        return Refusal(status, headers, json.dumps(body).encode())
