"""One embedded backend (the three real services in-process, Milvus Lite in a temp dir, the real model)
shared by the tool tests of this package; each test gets a fresh MCP client session. Two tenants with real signed
tokens (`tenants`) and the audit log's JSON lines (`audit_log`) for the tests of rights and refusals."""

from __future__ import annotations

import io
import json
import logging
import os
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from ingestion_mcp.embedded.services import embedded_backend
from ingestion_mcp.server import build_server
from ingestion_mcp.settings import McpSettings
from ingestion_mcp.state import AppState
from mcp import Client
from servicekit.logging import JsonFormatter

from scripts.serve_app import serving
from scripts.service_stack import call, free_port
from scripts.token_kit import Issuer

os.environ.setdefault("HF_HUB_OFFLINE", "1")


@pytest.fixture(scope="session")
def docs_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("docs")


@pytest.fixture(scope="session")
def mcp_settings(tmp_path_factory: pytest.TempPathFactory, docs_dir: Path) -> McpSettings:
    for name in ("DOCLING_SERVICE_URL", "CHUNKER_SERVICE_URL", "VECTOR_GATEWAY_URL", "VECTOR_GATEWAY_MILVUS_URI"):
        os.environ.pop(name, None)
    return McpSettings(
        allowed_roots=[docs_dir], data_dir=tmp_path_factory.mktemp("data"), sync_wait_s=30, response_token_budget=2000
    )


@pytest.fixture(scope="session")
async def app_state(mcp_settings: McpSettings) -> AsyncIterator[AppState]:
    async with embedded_backend(mcp_settings) as backend:
        state = AppState.create(mcp_settings, backend)
        yield state
        await state.jobs.aclose()


@pytest.fixture
def connect(app_state: AppState):
    """`async with connect() as client:` a fresh MCP session on the shared backend.

    A context manager inside the test rather than a yield fixture: the client's task group must be
    entered and left in the same task."""

    def session(state: AppState | None = None) -> Client:
        return Client(build_server(state or app_state))

    return session


@pytest.fixture
def call_tool() -> Callable[..., Any]:
    """scripts.service_stack.call: a tool's structured answer (with is_error), the one helper for tool calls."""
    return call


@pytest.fixture(scope="session")
def prose() -> Callable[[str, int], list[str]]:
    """``prose(name, n)``: real text, the first n paragraphs of 200+ characters of a license Debian ships on every
    system (/usr/share/common-licenses, base-files), one line each."""

    def paragraphs(name: str, count: int) -> list[str]:
        text = (Path("/usr/share/common-licenses") / name).read_text()
        found = [" ".join(p.split()) for p in text.split("\n\n")]
        return [p for p in found if len(p) >= 200][:count]

    return paragraphs


@pytest.fixture
def count_writes(monkeypatch: pytest.MonkeyPatch) -> Callable[[Any], list[str]]:
    """``count_writes(backend)``: the keys of every document the backend writes from then on, in order (the real
    ``upsert_batch`` still runs them; undone when the test ends)."""

    def patch(backend: Any) -> list[str]:
        writes: list[str] = []
        upsert = backend.upsert_batch

        async def counted(collection: str, documents: list[Any], **kwargs: Any) -> Any:
            writes.extend(d.key for d in documents)
            return await upsert(collection, documents, **kwargs)

        monkeypatch.setattr(backend, "upsert_batch", counted)
        return writes

    return patch


TENANT_ISSUER = "https://issuer.example"
# Alice (scope team-a) may write scope-a-*, Bob (team-b) scope-b-*; neither may read the other's.
TENANT_POLICY = """
[[rules]]
scope = "team-a"
right = "write"
collections = ["scope-a-*"]

[[rules]]
scope = "team-b"
right = "write"
collections = ["scope-b-*"]
"""
Tenants = Callable[..., AbstractAsyncContextManager[tuple[str, Issuer]]]


@pytest.fixture
def tenants(app_state: AppState, mcp_settings: McpSettings, tmp_path: Path) -> Tenants:
    """`async with tenants(["ingestion"], **settings) as (base, tokens):` the server's real HTTP app under uvicorn on
    the shared backend, verifying RS256 tokens of ``tokens`` (scripts/token_kit.py) with TENANT_POLICY."""

    @asynccontextmanager
    async def serve(profiles: list[str], **more: Any) -> AsyncIterator[tuple[str, Issuer]]:
        port = free_port()
        tokens = Issuer(TENANT_ISSUER, f"http://127.0.0.1:{port}/mcp")
        jwks = tokens.keys.write_jwks(tmp_path / "jwks.json")
        policy = tmp_path / "policy.toml"
        policy.write_text(TENANT_POLICY)
        settings = mcp_settings.model_copy(update={
            "oauth_issuer": TENANT_ISSUER, "oauth_jwks_file": jwks, "oauth_audience": tokens.audience,
            "access_policy": policy, "port": port, "transport": "streamable-http", "profiles": profiles, **more,
        })  # fmt: skip
        state = AppState.create(settings, app_state.backend)
        try:
            async with serving(state, port, start_timeout_s=30) as base:
                yield base, tokens
        finally:
            await state.jobs.aclose()

    return serve


@pytest.fixture
def audit_log() -> Iterator[Callable[[], list[dict[str, Any]]]]:
    """The JSON lines the audit logger writes, formatted as the app's log lines are (servicekit's formatter)."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("ingestion_mcp.audit")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield lambda: [json.loads(line) for line in stream.getvalue().splitlines()]
    logger.removeHandler(handler)
    logger.setLevel(level)
