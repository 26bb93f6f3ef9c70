"""The console's door in the token and OAuth modes: the same checks and rights as the MCP endpoint."""

from __future__ import annotations

from pathlib import Path

from ingestion_mcp.settings import McpSettings
from ingestion_mcp.state import AppState
from pydantic import SecretStr

from scripts.token_kit import Issuer

from .conftest import console, csrf_of

ISSUER = "https://issuer.example"
AUDIENCE = "http://127.0.0.1:8000/mcp"
POLICY = """
[[rules]]
scope = "alice"
right = "write"
collections = ["console-alice-*"]

[[rules]]
scope = "alice-reader"
right = "read"
collections = ["console-alice-*"]
"""
TEXT = "The orchids in the greenhouse need misting twice a day and shade from the noon sun onwards, says the log."


async def test_token_mode_needs_the_token_then_a_session_works_on_every_replica(
    open_state: AppState, mcp_settings: McpSettings
) -> None:
    settings = mcp_settings.model_copy(update={"auth_token": SecretStr("s3cret")})
    state, twin = AppState.create(settings, open_state.backend), AppState.create(settings, open_state.backend)
    try:
        async with console(state) as client:
            bounced = await client.get("/")
            assert bounced.status_code == 303 and bounced.headers["location"] == "/login?next=/"
            assert (await client.post("/jobs/job_x/cancel", data={})).status_code == 401
            login_page = await client.get("/collections/classified-plans", follow_redirects=True)
            assert 'id="login-form"' in login_page.text and "classified" not in login_page.text  # not even a name
            assert (await client.get("/", headers={"Authorization": "Bearer wrong"})).status_code == 303
            assert (await client.get("/", headers={"Authorization": "Bearer s3cret"})).status_code == 200

            wrong = await client.post("/login", data={"token": "guess"})
            assert wrong.status_code == 401 and 'id="login-error"' in wrong.text and "set-cookie" not in wrong.headers
            good = await client.post("/login?next=/search", data={"token": "s3cret"})
            assert good.status_code == 303 and good.headers["location"] == "/search"
            cookie = good.headers["set-cookie"]
            assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Secure" not in cookie
            assert "s3cret" not in cookie
            assert (await client.get("/")).status_code == 200
            assert (await client.post("/mcp", json={})).status_code == 401  # the cookie never opens /mcp
            session = client.cookies["ingestion_console"]
            # Signing out (a page bound with functools.partial: the audit names it console.logout; it answered 500).
            home = await client.get("/")
            signed_out = await client.post("/logout", data={"csrf_token": csrf_of(home.text)})
            assert signed_out.status_code == 303 and signed_out.headers["location"] == "/login", signed_out.text[:300]
            assert "Max-Age=0" in signed_out.headers["set-cookie"]
            behind_tls = await client.post("/login", data={"token": "s3cret"}, headers={"x-forwarded-proto": "https"})
            assert "Secure" in behind_tls.headers["set-cookie"]
        async with console(twin) as other:  # another replica, same configuration: the same key
            other.cookies.set("ingestion_console", session)
            assert (await other.get("/")).status_code == 200
            other.cookies.set("ingestion_console", session[:-4] + "AAAA")  # a forged signature
            assert (await other.get("/")).status_code == 303
    finally:
        await state.jobs.aclose()
        await twin.jobs.aclose()


def oauth_settings(mcp_settings: McpSettings, tmp_path: Path) -> tuple[McpSettings, Issuer]:
    issuer = Issuer(ISSUER, AUDIENCE)
    (tmp_path / "policy.toml").write_text(POLICY)
    settings = mcp_settings.model_copy(update={
        "oauth_issuer": ISSUER, "oauth_jwks_file": issuer.keys.write_jwks(tmp_path / "jwks.json"),
        "oauth_audience": AUDIENCE, "access_policy": tmp_path / "policy.toml",
        "console_secret": SecretStr("console-key"),
    })  # fmt: skip
    return settings, issuer


async def test_oauth_rights_apply_to_every_page(
    open_state: AppState, mcp_settings: McpSettings, tmp_path: Path
) -> None:
    settings, issuer = oauth_settings(mcp_settings, tmp_path)
    state = AppState.create(settings, open_state.backend)
    mine = await state.ingestor.ingest_text(TEXT, collection="console-alice-notes", name="alice")  # the server
    theirs = await state.ingestor.ingest_text(TEXT, collection="console-bob-notes", name="bob")
    try:
        async with console(state) as client:
            refused = await client.post("/login", data={"token": "not-a-jwt"})
            assert refused.status_code == 401 and 'id="login-error"' in refused.text
            assert (
                await client.post("/login", data={"token": issuer.token("alice", scope="alice")})
            ).status_code == 303
            home = await client.get("/")
            assert "console-alice-notes" in home.text and "console-bob-notes" not in home.text
            assert (await client.get("/collections/console-bob-notes")).status_code == 404
            hidden = await client.get(f"/collections/console-bob-notes/documents/{theirs.doc_id}")
            assert hidden.status_code == 404 and "misting" not in hidden.text
            found = await client.get("/search", params={"q": "orchids misting"})
            assert mine.doc_id in found.text and theirs.doc_id not in found.text

            csrf = csrf_of(home.text)
            forbidden = await client.post(f"/collections/console-bob-notes/documents/{theirs.doc_id}/delete",
                                          data={"csrf_token": csrf})  # fmt: skip
            assert forbidden.status_code == 403 and "needs the &#39;write&#39; right" in forbidden.text
            upload = await client.post("/ingest", data={"csrf_token": csrf, "collection": "console-bob-notes"},
                                       files={"file": ("x.md", TEXT.encode(), "text/markdown")})  # fmt: skip
            assert upload.status_code == 403 and "right" in upload.text
            drop = await client.post("/collections/console-alice-notes/delete",
                                     data={"csrf_token": csrf, "confirm_name": "console-alice-notes"})  # fmt: skip
            assert drop.status_code == 403 and "needs the &#39;admin&#39; right" in drop.text, drop.text
        reader = {"Authorization": f"Bearer {issuer.token('carol', scope='alice-reader')}"}
        async with console(state, **reader) as client:  # a bearer header works too; no CSRF needed with it
            assert "console-alice-notes" in (await client.get("/")).text
            gone = await client.post(f"/collections/console-alice-notes/documents/{mine.doc_id}/delete")
            assert gone.status_code == 403
        assert (await open_state.backend.get_document("console-alice-notes", mine.doc_id)).doc_id == mine.doc_id
    finally:
        await state.jobs.aclose()
