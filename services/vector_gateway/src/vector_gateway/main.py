"""Build the gateway app from settings; ``run()`` is the console entry point."""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
from collections.abc import AsyncIterator

import anyio
import uvicorn
from fastapi import FastAPI
from pydantic import ValidationError
from servicekit import ServiceError, configure_logging, create_service_app

from . import __version__
from .api.routes import router
from .embedder import Embedder, EmbedderHolder
from .service import GatewayService
from .settings import GatewaySettings
from .store import MilvusStore

log = logging.getLogger("vector_gateway")


def _connect(store: MilvusStore) -> None:
    try:
        store.ping()
    except ServiceError as exc:  # a server may come up later: /readyz reports it meanwhile
        log.error("Milvus not reachable at start-up: %s", exc.message)


def create_app(settings: GatewaySettings, *, embedder: Embedder | None = None) -> FastAPI:
    """The gateway app. ``embedder`` injects a loaded model (tests share one across apps)."""
    store = MilvusStore(
        settings.milvus_uri,
        token=settings.token_for_milvus(),
        dense_index=settings.dense_index,
        flush=settings.should_flush,
        stop_words=settings.bm25_stop_words,
    )
    embedders = EmbedderHolder(settings, embedder)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if settings.load_model_at_startup:
            embedders.start_loading()
        # Neither the model nor Milvus holds up start-up: /healthz answers at once, /readyz tells when.
        threading.Thread(target=_connect, args=(store,), name="milvus-connect", daemon=True).start()
        try:
            yield
        finally:
            await anyio.to_thread.run_sync(store.close)

    async def readiness() -> dict[str, str]:
        return await service.readiness()

    app = create_service_app(
        name="vector-gateway",
        version=__version__,
        description="Embeds chunks and stores them in Milvus; hybrid (BM25 + dense, RRF), semantic and keyword "
        "search over collections of documents.",
        auth_token=settings.token_value(),
        readiness=readiness,
        lifespan=lifespan,
    )
    service = GatewayService(store, embedders, rrf_k=settings.rrf_k, observe=app.state.metrics.observe_stage)
    app.state.gateway = service
    app.include_router(router)
    return app


def run() -> None:
    try:
        settings = GatewaySettings()
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'settings'}: {e['msg']}" for e in exc.errors())
        sys.exit(f"vector-gateway: invalid settings: {problems}")
    configure_logging(settings.log_level, json_logs=settings.json_logs)
    uvicorn.run(create_app(settings), host=settings.host, port=settings.port, log_level=settings.log_level.lower())


if __name__ == "__main__":
    run()
