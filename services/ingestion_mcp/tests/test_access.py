"""The access policy file, the OAuth settings and the JWT verifier's key handling (unit tier, no server)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import jwt
import pytest
from ingestion_mcp.access.oauth import JwksCache, JwtVerifier
from ingestion_mcp.access.policy import Caller, PolicyError, acting_as, current_caller, load_policy
from ingestion_mcp.embedded.services import remote_backend
from ingestion_mcp.settings import McpSettings
from pydantic import ValidationError

from scripts.token_kit import new_ec_key, new_rsa_key, public_jwk

POLICY = """
groups_claim = "roles"

[[default]]
right = "read"
collections = ["public-*"]

[[rules]]
scope = "docs.write"
right = "write"
collections = ["team-a-*", "shared"]

[[rules]]
group = "admins"
right = "admin"
collections = ["*"]
"""


def policy_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "policy.toml"
    path.write_text(text)
    return path


def test_claims_map_to_rights_and_admin_implies_write_implies_read(tmp_path: Path) -> None:
    policy = load_policy(policy_file(tmp_path, POLICY))
    writer = policy.caller({"sub": "u1", "scope": "openid docs.write"})
    assert writer.subject == "u1" and writer.can("read", "team-a-x") and writer.can("write", "shared")
    assert not writer.can("admin", "shared") and not writer.can("read", "team-b") and writer.can("read", "public-1")
    assert not writer.can("write", "public-1")
    admin = policy.caller({"sub": "u2", "scp": ["other"], "roles": ["admins"]})
    assert admin.can("admin", "anything") and admin.sees_all_jobs and not writer.sees_all_jobs
    assert policy.scopes == ["docs.write"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            '[[rules]]\nscope = "a"\nright = "owner"\ncollections = ["x"]',
            "rules #1 (the 1st [[rules]] table), field 'right'",
        ),
        ('[[rules]]\nright = "read"\ncollections = ["x"]', "exactly one of 'scope' or 'group'"),
        ('[[rules]]\nscope = "a"\nright = "read"\ncollections = []', "field 'collections'"),
        ('[[rules]]\nscope = "a"\nright = "read"\ncolections = ["x"]', "field 'colections': Extra inputs"),
        ("[[rules]\nscope = 1", "not valid TOML"),
    ],
)
def test_a_bad_policy_is_refused_naming_the_field(tmp_path: Path, text: str, expected: str) -> None:
    with pytest.raises(PolicyError, match=r"policy\.toml") as refused:
        load_policy(policy_file(tmp_path, text))
    assert expected in str(refused.value)


def test_oauth_settings_are_complete_and_safe(tmp_path: Path) -> None:
    base = {"oauth_issuer": "https://issuer.example", "oauth_audience": "https://mcp.example/mcp",
            "access_policy": tmp_path / "p.toml"}  # fmt: skip
    with pytest.raises(ValidationError, match="exactly one of OAUTH_JWKS_URL"):
        McpSettings(**base)
    with pytest.raises(ValidationError, match="must be https"):
        McpSettings(**base, oauth_jwks_url="http://keys.example/jwks.json")
    assert McpSettings(**base, oauth_jwks_url="http://127.0.0.1:9/jwks.json").auth_mode == "oauth"
    with pytest.raises(ValidationError, match="OAUTH_AUDIENCE"):
        McpSettings(**base | {"oauth_audience": None}, oauth_jwks_url="https://keys.example/jwks.json")
    for algorithms in ("none", "HS256", "RS256,HS512"):
        with pytest.raises(ValidationError, match="is not accepted"):
            McpSettings(**base, oauth_jwks_url="https://k.example/j", oauth_algorithms=algorithms)
    # OAuth is enough to bind a public address; neither it nor AUTH_TOKEN is not.
    public = McpSettings(**base, oauth_jwks_url="https://k.example/j", transport="streamable-http", host="0.0.0.0")
    assert public.auth_mode == "oauth"


def test_no_request_caller_means_every_right() -> None:
    assert current_caller() == Caller.everything()
    with acting_as(Caller("u", ())):
        assert not current_caller().can("read", "x")
    assert current_caller().can("admin", "x")


async def test_the_key_set_is_refetched_for_a_new_key_at_most_once_per_interval(tmp_path: Path) -> None:
    first, second = new_rsa_key(), new_ec_key()
    jwks = tmp_path / "jwks.json"

    def publish(*keys: tuple[str, dict]) -> None:
        jwks.write_text(json.dumps({"keys": [jwk | {"kid": kid} for kid, jwk in keys]}))

    rsa_jwk, ec_jwk = public_jwk(first, "one"), public_jwk(second, "two")
    publish(("one", rsa_jwk))
    cache = JwksCache(file=jwks, refetch_s=3600)
    verifier = JwtVerifier(issuer="https://i", audience="https://a", algorithms=["RS256", "ES256"], keys=cache)
    claims = {"iss": "https://i", "aud": "https://a", "sub": "s", "exp": int(time.time()) + 60}
    assert await verifier.verify_token(jwt.encode(claims, first, algorithm="RS256", headers={"kid": "one"}))
    publish(("one", rsa_jwk), ("two", ec_jwk))  # the issuer rotates in a new key
    rotated = jwt.encode(claims, second, algorithm="ES256", headers={"kid": "two"})
    assert await verifier.verify_token(rotated) is None  # fetched less than refetch_s ago: not fetched again
    cache.refetch_s = 0
    access = await verifier.verify_token(rotated)
    assert access is not None and access.subject == "s"
    # An RSA key never verifies an EC algorithm (nor the other way round), whatever the token's header says.
    wrong_type = jwt.encode(claims, second, algorithm="ES256", headers={"kid": "one"})
    with pytest.raises(jwt.InvalidKeyError, match="RSA key cannot verify ES256"):
        await verifier.claims(wrong_type)


async def test_the_callers_token_never_reaches_the_internal_services() -> None:
    """The backend's clients carry only the server's own credential (AUTH_TOKEN), fixed when they are made."""
    settings = McpSettings(
        docling_service_url="http://d:1", chunker_service_url="http://c:1", vector_gateway_url="http://g:1",
        auth_token="service-credential",
    )  # fmt: skip
    async with remote_backend(settings) as backend:
        for client in (backend.docling, backend.chunker, backend.gateway):
            assert client.http.headers["authorization"] == "Bearer service-credential"


async def test_a_write_is_refused_before_any_fetch_or_conversion(tmp_path: Path) -> None:
    """A caller who may only read is refused at once: nothing is downloaded, read or converted first (the URL
    points at a closed port, the file does not exist: either would fail differently if it were tried)."""
    from ingestion_mcp.access.policy import Grant
    from ingestion_mcp.errors import ToolFailure
    from ingestion_mcp.ingest.pipeline import Ingestor
    from ingestion_mcp.sources import SourcePolicy

    settings = McpSettings(data_dir=tmp_path)
    ingestor = Ingestor(None, settings)  # type: ignore[arg-type]  # refused before any service is called
    reader = Caller("carol", (Grant("team-*", "read"),))
    with acting_as(reader):
        with pytest.raises(ToolFailure) as url:
            await ingestor.ingest_url("http://127.0.0.1:9/x", policy=SourcePolicy.from_settings(settings),
                                      collection="team-a")  # fmt: skip
        with pytest.raises(ToolFailure) as file:
            await ingestor.ingest_file(str(tmp_path / "missing.pdf"), collection="team-a")
    assert url.value.code == file.value.code == "FORBIDDEN", (url.value, file.value)
