"""One embedded backend (the three real services in-process, Milvus Lite in a temp dir, the real model)
shared by the tool tests of this package; each test gets a fresh MCP client session."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from ingestion_mcp.embedded.services import embedded_backend
from ingestion_mcp.server import build_server
from ingestion_mcp.settings import McpSettings
from ingestion_mcp.state import AppState
from mcp import Client

from scripts.service_stack import call

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
