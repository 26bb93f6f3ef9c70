"""OAuth resource server: verify signed access tokens (JWT) against the issuer's published keys.

PyJWT checks the signature and the registered claims; this module pins the algorithms (never "none" nor an
HMAC one: a public key is public, so HS256 "signed" with it proves nothing), insists that the key's type
fits the algorithm, and keeps the issuer's key set (JWKS) cached, fetched again for an unknown key id at
most once per ``refetch_s`` (key rotation without a restart, no fetch storm from forged key ids).
It implements the MCP SDK's TokenVerifier, so the answer is the SDK's AccessToken.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from pathlib import Path
from typing import Any

import httpx
import jwt
from mcp.server.auth.provider import AccessToken

from .policy import token_scopes

log = logging.getLogger("ingestion_mcp.oauth")
# The only algorithms a token may name, and the key type each needs.
KEY_TYPES = {
    "RS256": "RSA", "RS384": "RSA", "RS512": "RSA", "PS256": "RSA", "PS384": "RSA", "PS512": "RSA",
    "ES256": "EC", "ES384": "EC", "ES512": "EC", "EdDSA": "OKP",
}  # fmt: skip


class JwksCache:
    """The issuer's signing keys by key id, from a URL (refetched on an unknown kid) or a file (read once)."""

    def __init__(self, *, url: str | None = None, file: Path | None = None, refetch_s: float = 60.0) -> None:
        self.url, self.file, self.refetch_s = url, file, refetch_s
        self._keys: dict[str | None, jwt.PyJWK] = {}
        self._fetched_at: float | None = None
        self._lock = asyncio.Lock()

    async def key(self, kid: str | None) -> jwt.PyJWK | None:
        if kid in self._keys:
            return self._keys[kid]
        async with self._lock:
            due = self._fetched_at is None or time.monotonic() - self._fetched_at >= self.refetch_s
            if kid not in self._keys and due:
                await self._load()
        return self._keys.get(kid)

    async def _load(self) -> None:
        self._fetched_at = time.monotonic()
        try:
            document = await self._document()
            keys = jwt.PyJWKSet.from_dict(document).keys
        except (OSError, ValueError, httpx.HTTPError, jwt.PyJWKSetError) as exc:
            log.warning("could not load the issuer's keys from %s: %s", self.url or self.file, exc)
            return
        found: dict[str | None, jwt.PyJWK] = {key.key_id: key for key in keys}
        if len(keys) == 1:  # a token without a kid may use the one key
            found[None] = keys[0]
        self._keys = found

    async def _document(self) -> dict[str, Any]:
        if self.file is not None:
            return dict(json.loads(self.file.read_text(encoding="utf-8")))
        async with httpx.AsyncClient(timeout=5.0, follow_redirects=False) as client:
            response = await client.get(str(self.url), headers={"accept": "application/json"})
            response.raise_for_status()
            return dict(response.json())


class JwtVerifier:
    """The SDK's TokenVerifier for JWT access tokens of one issuer, for one audience (this server)."""

    def __init__(
        self, *, issuer: str, audience: str, algorithms: list[str], keys: JwksCache, leeway_s: float = 30.0
    ) -> None:
        self.issuer, self.audience, self.keys, self.leeway_s = issuer, audience, keys, leeway_s
        self.algorithms = [alg for alg in algorithms if alg in KEY_TYPES]

    async def verify_token(self, token: str) -> AccessToken | None:
        """The token's access if it is valid for this server; None (and a log line saying why) otherwise."""
        try:
            claims = await self.claims(token)
        except jwt.PyJWTError as exc:
            log.info("refused an access token: %s", exc)
            return None
        subject = str(claims["sub"])
        return AccessToken(
            token=token, client_id=str(claims.get("client_id") or claims.get("azp") or subject),
            scopes=token_scopes(claims), expires_at=int(claims["exp"]), resource=self.audience, subject=subject,
            claims=claims,
        )  # fmt: skip

    async def claims(self, token: str) -> dict[str, Any]:
        """The verified claims; raises jwt.PyJWTError for any token this server must not accept."""
        header = jwt.get_unverified_header(token)
        alg = header.get("alg")
        if alg not in self.algorithms:
            raise jwt.InvalidAlgorithmError(f"algorithm {alg!r} is not accepted")
        key = await self.keys.key(header.get("kid"))
        if key is None:
            raise jwt.InvalidKeyError(f"no key with id {header.get('kid')!r} in the issuer's key set")
        if key.key_type != KEY_TYPES[alg]:
            raise jwt.InvalidKeyError(f"a {key.key_type} key cannot verify {alg}")
        return jwt.decode(
            token, key=key.key, algorithms=[alg], audience=self.audience, issuer=self.issuer, leeway=self.leeway_s,
            options={"require": ["exp", "iss", "aud", "sub"]},
        )  # fmt: skip
