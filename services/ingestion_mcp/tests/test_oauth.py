"""Many users, least privilege: the real HTTP app with real signed tokens (RSA and EC), a JWKS served over
loopback HTTP, and real MCP clients over streamable HTTP (docs/auth.md)."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from ingestion_mcp.server import build_server
from ingestion_mcp.settings import McpSettings
from ingestion_mcp.state import AppState
from mcp import Client
from pydantic import SecretStr

from scripts.serve_app import serving
from scripts.service_stack import call, free_port, session
from scripts.token_kit import Issuer, SigningKeys

ISSUER = "https://issuer.example"
POLICY = """
groups_claim = "groups"

[[rules]]
scope = "alice"
right = "write"
collections = ["alice-*"]

[[rules]]
group = "bob-team"
right = "admin"
collections = ["bob-*"]

[[rules]]
scope = "alice-reader"
right = "read"
collections = ["alice-*"]
"""


@pytest.fixture(scope="module")
def keys() -> SigningKeys:
    return SigningKeys()


@pytest.fixture(scope="module")
def jwks_url(keys: SigningKeys) -> Iterator[str]:
    body = json.dumps(keys.jwks).encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            return

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/jwks.json"
    httpd.shutdown()


@pytest.fixture(autouse=True)
async def leave_no_collections(app_state: AppState) -> AsyncIterator[None]:
    """The backend is shared with the package's other tests: what these tests made goes (as the server, every
    right: no caller is set outside a request)."""
    yield
    for collection in (await app_state.backend.list_collections()).collections:
        if collection.name.startswith(("alice-", "bob-", "static-", "open-")):
            await app_state.backend.delete_collection(collection.name)


@asynccontextmanager
async def oauth_server(
    app_state: AppState, mcp_settings: McpSettings, jwks_url: str, tmp_path: Path, **extra: Any
) -> AsyncIterator[tuple[str, AppState]]:
    port = free_port()
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)
    settings = mcp_settings.model_copy(update={
        "oauth_issuer": ISSUER, "oauth_jwks_url": jwks_url, "oauth_audience": f"http://127.0.0.1:{port}/mcp",
        "access_policy": policy, "port": port, "transport": "streamable-http", **extra,
    })  # fmt: skip
    state = AppState.create(settings, app_state.backend)
    try:
        async with serving(state, port, start_timeout_s=30) as base:
            yield base, state
    finally:
        await state.jobs.aclose()


def forbidden(answer: dict[str, Any], right: str) -> bool:
    """A refusal (FORBIDDEN) that names the missing right."""
    assert answer["success"] is False and f"needs the '{right}' right" in answer["error"], answer
    return True


TEXT = {
    "alice-notes": "Alice's greenhouse notes: the orchids need misting twice a day and shade from noon sun onwards.",
    "bob-notes": "Bob's workshop log: the lathe bearings were replaced and the orchids on the windowsill watered.",
}


async def test_two_users_see_and_change_only_their_own_collections(
    app_state: AppState,
    mcp_settings: McpSettings,
    jwks_url: str,
    keys: SigningKeys,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="ingestion_mcp.audit")
    async with oauth_server(app_state, mcp_settings, jwks_url, tmp_path) as (base, _):
        issuer = Issuer(ISSUER, f"{base}/mcp", keys)
        alice = issuer.token("alice", scope="alice")
        bob = issuer.token("bob", alg="ES256", groups=["bob-team"])
        reader = issuer.token("carol", alg="PS256", scope="alice-reader")
        async with session(f"{base}/mcp", alice) as client:
            made = await call(client, "ingest_text", text=TEXT["alice-notes"], name="orchids", collection="alice-notes")
            assert made["status"] == "indexed", made
            refused = await call(client, "ingest_text", text=TEXT["bob-notes"], name="x", collection="bob-notes")
            assert forbidden(refused, "write")
        async with session(f"{base}/mcp", bob) as client:
            made = await call(client, "ingest_text", text=TEXT["bob-notes"], name="lathe", collection="bob-notes")
            assert made["status"] == "indexed", made

        async with session(f"{base}/mcp", alice) as client:
            found = await call(client, "search", query="orchids watered")
            assert {hit["collection"] for hit in found["results"]} == {"alice-notes"}, found
            listed = await call(client, "get_collections")
            names = {c["name"] for c in listed["collections"]}
            assert "alice-notes" in names and "bob-notes" not in names, listed
            hidden = await call(client, "list_documents", collection="bob-notes")
            missing = await call(client, "list_documents", collection="bob-nothing-here")
            # A collection Alice may not read answers as one that does not exist, and is not listed as available.
            assert hidden["error"].startswith("Collection 'bob-notes' not found. Available collections:")
            assert missing["success"] is False and "bob-notes" not in hidden["error"].split("found.", 1)[1]
            assert hidden["available_collections"] == missing["available_collections"], (hidden, missing)
            assert "bob-notes" not in hidden["available_collections"]
            assert forbidden(await call(client, "delete_collection", name="bob-notes", confirm=True), "admin")
            own = await call(client, "delete_collection", name="alice-notes", confirm=True)
            assert forbidden(own, "admin")  # write, not admin
        async with session(f"{base}/mcp", bob) as client:
            found = await call(client, "search", query="orchids watered")
            assert {hit["collection"] for hit in found["results"]} == {"bob-notes"}, found
            docs = await call(client, "list_documents", collection="bob-notes")
            assert docs["total"] == 1, docs
        async with session(f"{base}/mcp", reader) as client:
            found = await call(client, "search", query="orchids", collection="alice-notes")
            assert found["results"], found
            refused = await call(client, "ingest_text", text=TEXT["alice-notes"] + " more", name="y",
                                 collection="alice-notes")  # fmt: skip
            assert forbidden(refused, "write")
        async with session(f"{base}/mcp", alice) as client:
            docs = await call(client, "list_documents", collection="alice-notes")
            assert docs["total"] == 1, docs  # nothing the reader or Bob sent was written
        async with session(f"{base}/mcp", bob) as client:
            deleted = await call(client, "delete_collection", name="bob-notes", confirm=True)
            assert deleted.get("success") is True, deleted
    audit = [r.__dict__["fields"] for r in caplog.records if r.name == "ingestion_mcp.audit"]  # the line's fields
    refusal = {"subject": "alice", "tool": "delete_collection", "action": "delete_collection",
               "collection": "bob-notes", "result": "forbidden"}  # fmt: skip
    assert any(refusal.items() <= line.items() and line["request_id"] for line in audit), audit
    assert any(line["subject"] == "bob" and line["action"] == "delete_collection" and line["result"] == "ok"
               for line in audit), audit  # fmt: skip


async def test_jobs_belong_to_their_caller(
    app_state: AppState, mcp_settings: McpSettings, jwks_url: str, keys: SigningKeys, tmp_path: Path
) -> None:
    async with oauth_server(app_state, mcp_settings, jwks_url, tmp_path, sync_wait_s=0) as (base, state):
        issuer = Issuer(ISSUER, f"{base}/mcp", keys)
        alice, bob = issuer.token("alice", scope="alice"), issuer.token("bob", groups=["bob-team"])
        async with session(f"{base}/mcp", alice) as client:
            text = TEXT["alice-notes"] * 40
            started = await call(client, "ingest_text", text=text, name="long", collection="alice-jobs")
            job_id = started["job_id"]
            assert (await call(client, "get_job_status", job_id=job_id))["job"]["job_id"] == job_id
        job = await state.jobs.get(job_id)
        assert job is not None and job.owner == "alice", job
        async with session(f"{base}/mcp", bob) as client:
            assert (await call(client, "get_job_status", job_id=job_id))["error"].startswith("No job")
            assert (await call(client, "cancel_job", job_id=job_id))["error"].startswith("No job")
            active = await call(client, "list_active_jobs")
            assert job_id not in json.dumps(active)
        done = await state.jobs.wait(job_id, 60)
        assert done.status == "completed", done  # Bob's cancel did not touch it


BAD_TOKENS = ["expired", "not_yet_valid", "wrong_audience", "wrong_issuer", "alg_none", "hs256_public_pem",
              "tampered", "unknown_kid"]  # fmt: skip


def bad_token(kind: str, issuer: Issuer, keys: SigningKeys) -> str:
    now = int(time.time())
    good = {"iss": ISSUER, "aud": issuer.audience, "sub": "mallory", "scope": "alice", "exp": now + 300}
    if kind == "expired":
        return issuer.token("mallory", scope="alice", exp=now - 3600)
    if kind == "not_yet_valid":
        return issuer.token("mallory", scope="alice", nbf=now + 3600)
    if kind == "wrong_audience":
        return issuer.token("mallory", scope="alice", aud="https://other.example/mcp")
    if kind == "wrong_issuer":
        return issuer.token("mallory", scope="alice", iss="https://evil.example")
    if kind == "alg_none":
        return jwt.encode(good, None, algorithm="none", headers={"kid": "rsa-1"})
    if kind == "hs256_public_pem":  # the classic confusion: the public key used as an HMAC secret
        import hashlib
        import hmac

        header = jwt.utils.base64url_encode(json.dumps({"alg": "HS256", "typ": "JWT", "kid": "rsa-1"}).encode())
        payload = jwt.utils.base64url_encode(json.dumps(good).encode())
        signature = hmac.new(keys.rsa_public_pem(), header + b"." + payload, hashlib.sha256).digest()
        return b".".join([header, payload, jwt.utils.base64url_encode(signature)]).decode()
    if kind == "tampered":
        header, _, signature = issuer.token("alice", scope="bob").split(".")
        payload = jwt.utils.base64url_encode(json.dumps(good | {"sub": "alice"}).encode()).decode()
        return f"{header}.{payload}.{signature}"
    assert kind == "unknown_kid"
    return SigningKeys().sign(good, kid="rsa-9")  # a key the issuer never published


async def test_invalid_tokens_are_refused_and_write_nothing(
    app_state: AppState, mcp_settings: McpSettings, jwks_url: str, keys: SigningKeys, tmp_path: Path
) -> None:
    async with oauth_server(app_state, mcp_settings, jwks_url, tmp_path) as (base, _):
        issuer = Issuer(ISSUER, f"{base}/mcp", keys)
        metadata_url = f"{base}/.well-known/oauth-protected-resource/mcp"
        async with httpx.AsyncClient() as http:
            meta = (await http.get(metadata_url)).json()
            assert meta["resource"] == f"{base}/mcp" and meta["authorization_servers"] == [ISSUER + "/"]
            assert meta["bearer_methods_supported"] == ["header"] and "alice" in meta["scopes_supported"]
            assert (await http.get(f"{base}/.well-known/oauth-protected-resource")).status_code == 200
            init = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
            anonymous = await http.post(f"{base}/mcp", json=init)
            assert anonymous.status_code == 401
            assert anonymous.headers["www-authenticate"] == f'Bearer resource_metadata="{metadata_url}"'
            for kind in BAD_TOKENS:
                token = bad_token(kind, issuer, keys)
                answer = await http.post(f"{base}/mcp", json=init, headers={"Authorization": f"Bearer {token}"})
                assert answer.status_code == 401, kind
                challenge = answer.headers["www-authenticate"]
                assert 'error="invalid_token"' in challenge and f'resource_metadata="{metadata_url}"' in challenge
            nobody = issuer.token("nobody", scope="unknown")
            answer = await http.post(f"{base}/mcp", json=init, headers={"Authorization": f"Bearer {nobody}"})
            assert answer.status_code == 403 and 'error="insufficient_scope"' in answer.headers["www-authenticate"]
        async with session(f"{base}/mcp", issuer.token("alice", scope="alice")) as client:
            listed = await call(client, "get_collections")
            assert not [c for c in listed["collections"] if c["name"].startswith("alice-")], listed


async def test_static_token_mode_is_one_caller_with_every_right(app_state: AppState, mcp_settings: McpSettings) -> None:
    port = free_port()
    settings = mcp_settings.model_copy(update={"auth_token": SecretStr("s3cret"), "port": port})
    state = AppState.create(settings, app_state.backend)
    try:
        async with serving(state, port, start_timeout_s=30) as base:
            async with httpx.AsyncClient() as http:
                assert (await http.post(f"{base}/mcp", json={})).status_code == 401
            async with session(f"{base}/mcp", "s3cret") as client:
                made = await call(client, "ingest_text", text=TEXT["bob-notes"], name="static", collection="static-x")
                assert made["status"] == "indexed", made
                assert (await call(client, "delete_collection", name="static-x", confirm=True))["success"] is True
    finally:
        await state.jobs.aclose()


async def test_no_auth_mode_on_loopback_serves_everything(app_state: AppState, mcp_settings: McpSettings) -> None:
    port = free_port()
    state = AppState.create(mcp_settings.model_copy(update={"port": port}), app_state.backend)
    try:
        async with serving(state, port, start_timeout_s=30) as base, session(f"{base}/mcp", None) as client:
            made = await call(client, "ingest_text", text=TEXT["alice-notes"], name="open", collection="open-x")
            assert made["status"] == "indexed", made
            assert (await call(client, "delete_collection", name="open-x", confirm=True))["success"] is True
    finally:
        await state.jobs.aclose()


async def test_the_service_credential_opens_only_the_operator_endpoints(
    app_state: AppState, mcp_settings: McpSettings, jwks_url: str, tmp_path: Path
) -> None:
    """OAuth mode with AUTH_TOKEN set: the autoscaler and scrapers read /queue and /metrics with it; the MCP
    endpoint takes only OAuth tokens."""
    async with oauth_server(app_state, mcp_settings, jwks_url, tmp_path, auth_token=SecretStr("svc")) as (base, _):
        service = {"Authorization": "Bearer svc"}
        async with httpx.AsyncClient() as http:
            assert (await http.get(f"{base}/metrics", headers=service)).status_code == 200
            assert (await http.get(f"{base}/queue", headers=service)).status_code in (200, 404)  # 404: no broker
            assert (await http.get(f"{base}/metrics")).status_code == 401
            assert (await http.get(f"{base}/metrics", headers={"Authorization": "Bearer nope"})).status_code == 401
            init = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
            assert (await http.post(f"{base}/mcp", json=init, headers=service)).status_code == 401


async def test_chatgpt_search_and_fetch_answer_within_the_callers_rights(
    app_state: AppState, mcp_settings: McpSettings, jwks_url: str, keys: SigningKeys, tmp_path: Path
) -> None:
    """The chatgpt profile as ChatGPT reaches it (a connector over HTTP with OAuth): a user's search spans only the
    collections the policy lets them read, and another user's document answers fetch as a made-up id does."""
    async with Client(build_server(app_state)) as owner:  # every right: no caller outside a request
        ids = {}
        for collection, text in TEXT.items():
            made = await call(owner, "ingest_text", text=text, name=collection, collection=collection,
                              response_format="detailed")  # fmt: skip
            ids[collection] = f"{collection}:{made['doc_id']}"
    async with oauth_server(app_state, mcp_settings, jwks_url, tmp_path, profiles=["chatgpt"]) as (base, _):
        async with httpx.AsyncClient() as http:  # what a connector reads first, with no token
            for path in ("/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"):
                assert (await http.get(base + path)).json()["resource"] == f"{base}/mcp", path
        issuer = Issuer(ISSUER, f"{base}/mcp", keys)
        async with session(f"{base}/mcp", issuer.token("alice", scope="alice")) as client:
            found = await client.call_tool("search", {"query": "orchids misting watered"})
            results = json.loads(found.content[0].text)["results"]
            assert [r["id"] for r in results] == [ids["alice-notes"]], results
            assert results[0]["url"] == f"{base}/collections/alice-notes/documents/{ids['alice-notes'].split(':')[1]}"
            own = await client.call_tool("fetch", {"id": ids["alice-notes"]})
            assert not own.is_error and "greenhouse" in json.loads(own.content[0].text)["text"]
            theirs = await client.call_tool("fetch", {"id": ids["bob-notes"]})
            made_up = await client.call_tool("fetch", {"id": "bob-nothing:abcdef"})
            assert theirs.is_error and made_up.is_error
            mask = {"error": "No document with id 'X'."}
            assert json.loads(theirs.content[0].text) | mask == json.loads(made_up.content[0].text) | mask
            assert "bob" not in theirs.content[0].text.replace(ids["bob-notes"], "")
