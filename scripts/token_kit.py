"""Real signed tokens, as an OAuth issuer makes them: the one kit for every test and check that needs them.

``SigningKeys`` holds an RSA (RS256) and an EC (ES256) private key and publishes their public JWKS; ``Issuer`` signs
access tokens for one issuer and audience with them. The OAuth gate's tests, the tenant-scope probes, the console's
rights, the documented client configurations and the compose smoke all take their tokens from here, so a token is
made one way: PyJWT signs, cryptography makes the keys (nothing is mocked, the server verifies them for real).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

PrivateKey = rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey


def public_jwk(key: PrivateKey, kid: str) -> dict[str, Any]:
    """The public half of ``key`` as a JWK named ``kid``, for signatures."""
    algorithm = RSAAlgorithm if isinstance(key, rsa.RSAPrivateKey) else ECAlgorithm
    return json.loads(algorithm.to_jwk(key.public_key())) | {"kid": kid, "use": "sig"}


def new_rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def new_ec_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


@dataclass
class SigningKeys:
    """An issuer's signing keys: RSA (kid ``rsa-1``) and EC P-256 (kid ``ec-1``)."""

    rsa_key: rsa.RSAPrivateKey = field(default_factory=new_rsa_key)
    ec_key: ec.EllipticCurvePrivateKey = field(default_factory=new_ec_key)

    @property
    def jwks(self) -> dict[str, Any]:
        return {"keys": [public_jwk(self.rsa_key, "rsa-1"), public_jwk(self.ec_key, "ec-1")]}

    def write_jwks(self, path: Path) -> Path:
        """The public key set as a file (INGESTION_MCP_OAUTH_JWKS_FILE), readable by a container's user too."""
        path.write_text(json.dumps(self.jwks))
        path.chmod(0o644)
        return path

    def sign(self, claims: dict[str, Any], *, alg: str = "RS256", kid: str | None = None) -> str:
        """``claims`` signed with the RSA key (RS*/PS*) or the EC key (ES*), under their kid unless ``kid`` says."""
        key, own = (self.rsa_key, "rsa-1") if alg.startswith(("RS", "PS")) else (self.ec_key, "ec-1")
        return jwt.encode(claims, key, algorithm=alg, headers={"kid": kid or own})

    def rsa_public_pem(self) -> bytes:
        return self.rsa_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )


@dataclass
class Issuer:
    """Access tokens of one issuer for one audience (the MCP endpoint's URL), signed with ``keys``."""

    issuer: str
    audience: str
    keys: SigningKeys = field(default_factory=SigningKeys)

    def claims(self, sub: str, *, ttl_s: int = 600, **extra: Any) -> dict[str, Any]:
        now = int(time.time())
        return {"iss": self.issuer, "aud": self.audience, "sub": sub, "iat": now, "exp": now + ttl_s} | extra

    def token(self, sub: str, *, alg: str = "RS256", ttl_s: int = 600, **claims: Any) -> str:
        """A token for ``sub`` with ``claims`` (``scope="team-a"``, ``groups=[...]``) added to the standard ones."""
        return self.keys.sign(self.claims(sub, ttl_s=ttl_s, **claims), alg=alg)
