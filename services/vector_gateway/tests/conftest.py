"""Shared fixtures: the real bundled model (loaded once), real indexes (Lance, Milvus Lite) in temp folders, the app.

Tests share one gateway per engine and use their own collection names, because creating a collection costs about
a second on Lite.
"""

from __future__ import annotations

import hashlib
import os
import sys
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from asgi_lifespan import LifespanManager
from fastapi import FastAPI
from vector_gateway.embedder import Embedder, create_embedder
from vector_gateway.main import create_app
from vector_gateway.service import GatewayService
from vector_gateway.settings import GatewaySettings

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).parent))  # fake_index.py: the in-memory DocumentIndex

DocFactory = Callable[..., dict[str, Any]]
ClientFactory = Callable[..., Any]


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _make_doc(source: str, texts: list[str], **fields: Any) -> dict[str, Any]:
    """An UpsertDocumentRequest body whose chunks lie back to back (one blank line between)."""
    chunks, offset = [], 0
    for index, text in enumerate(texts):
        chunk = {"index": index, "text": text, "start": offset, "end": offset + len(text), "token_count": 1}
        chunks.append(chunk | fields.pop(f"chunk{index}", {}))
        offset += len(text) + 2
    return {"source": source, "content_hash": sha(source + "".join(texts)), "chunks": chunks, **fields}


@pytest.fixture(scope="session")
def make_doc() -> DocFactory:
    return _make_doc


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    return create_embedder(GatewaySettings(milvus_uri="unused.db"))


@pytest.fixture
def unique() -> Callable[[str], str]:
    """A collection name no other test uses."""
    return lambda prefix: f"{prefix}_{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="session")
def open_gateway(embedder: Embedder) -> ClientFactory:
    """Start an app on the default engine (or ``index_engine=...``) and yield (client, app); the lifespan runs
    around it. ``db`` names the Milvus Lite file; the Lance tables go beside it (``<db>.lance``)."""

    @asynccontextmanager
    async def opened(
        db: Path, model: Embedder | None = None, **settings: Any
    ) -> AsyncIterator[tuple[httpx.AsyncClient, FastAPI]]:
        """``model``: another loaded embedder than the shared one (another precision, another model)."""
        settings.setdefault("lance_uri", str(db.with_suffix(".lance")))
        app = create_app(GatewaySettings(milvus_uri=str(db), **settings), embedder=model or embedder)
        async with LifespanManager(app) as manager:
            transport = httpx.ASGITransport(app=manager.app, raise_app_exceptions=False)
            async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as client:
                yield client, app

    return opened


@pytest.fixture(scope="session", params=["milvus", "lance"])
async def gateway_app(
    request: pytest.FixtureRequest, open_gateway: ClientFactory, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[tuple[httpx.AsyncClient, FastAPI]]:
    """The shared gateway, once on each embedded engine (Milvus Lite, Lance): every test of the API runs on both.

    Tests that open their own gateway (open_gateway) run on the default engine (Lance), or on the one that
    VECTOR_GATEWAY_INDEX_ENGINE names (VECTOR_GATEWAY_INDEX_ENGINE=milvus runs them all on Milvus Lite)."""
    async with open_gateway(tmp_path_factory.mktemp("gateway") / "milvus.db", index_engine=request.param) as opened:
        yield opened


@pytest.fixture
def client(gateway_app: tuple[httpx.AsyncClient, FastAPI]) -> httpx.AsyncClient:
    return gateway_app[0]


@pytest.fixture
def service(gateway_app: tuple[httpx.AsyncClient, FastAPI]) -> GatewayService:
    return gateway_app[1].state.gateway


@pytest.fixture(scope="session")
def upsert() -> Callable[..., Any]:
    async def call(client: httpx.AsyncClient, collection: str, body: dict[str, Any], status: int = 200) -> Any:
        response = await client.post(f"/v1/collections/{collection}/documents", json=body)
        assert response.status_code == status, response.text
        return response.json()

    return call


@pytest.fixture(scope="session")
def search() -> Callable[..., Any]:
    async def call(client: httpx.AsyncClient, status: int = 200, **body: Any) -> Any:
        response = await client.post("/v1/search", json=body)
        assert response.status_code == status, response.text
        return response.json()

    return call
