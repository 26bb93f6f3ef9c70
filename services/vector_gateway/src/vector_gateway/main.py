"""Build the gateway app from settings; ``run()`` is the console entry point."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import AsyncIterator

import anyio
from fastapi import FastAPI
from servicekit import ServiceError, configure_logging, create_service_app, serve
from servicekit.settings import settings_or_exit

from . import __version__, engines
from .api.routes import router
from .api.vector_routes import router as vector_router
from .embedder import Embedder, EmbedderHolder
from .engines import EngineChoice, engine_label
from .growth import LiteGrowth
from .index import DocumentIndex
from .milvus import MilvusStore
from .orders import BrokerOrders, LocalOrders, OrderSource
from .originals import Originals
from .service import GatewayService
from .settings import GatewaySettings
from .vectors import VectorStores
from .versions import LeasePolicy

log = logging.getLogger("vector_gateway")


def _connect(store: DocumentIndex) -> None:
    try:
        store.ping()
    except ServiceError as exc:  # a server may come up later: /readyz reports it meanwhile
        log.error("Milvus not reachable at start-up: %s", exc.message)


async def _sweep(service: GatewayService) -> None:
    try:
        await service.sweep_uncommitted()
    except Exception as exc:  # noqa: BLE001 - searches ignore uncommitted rows; the next start tries again
        log.warning("uncommitted-version sweep failed: %s", getattr(exc, "message", None) or exc)
    try:
        removed = await service.sweep_originals()
        if removed:
            log.info("originals sweep: %d originals no document names were removed", removed)
    except Exception as exc:  # noqa: BLE001 - an original left over costs disk only; the next start tries again
        log.warning("originals sweep failed: %s", getattr(exc, "message", None) or exc)


def _orders(settings: GatewaySettings) -> OrderSource:
    if settings.broker_url is not None:
        return BrokerOrders(settings.broker_url.get_secret_value(), timeout_s=settings.broker_timeout_s)
    return LocalOrders()


def open_store(settings: GatewaySettings, choice: EngineChoice | None = None) -> DocumentIndex:
    """The index the settings name (engines.choose): Lance tables in a folder, Milvus Lite or a Milvus server.
    Nothing opens yet."""
    choice = choice or engines.choose(settings)
    if choice.engine == "lance":
        try:
            from .lance import LanceStore  # lancedb is an optional dependency: imported only when chosen
        except ImportError as exc:
            raise RuntimeError(
                f"The Lance engine (VECTOR_GATEWAY_INDEX_ENGINE={settings.index_engine}) needs lancedb, which is not "
                f"installed ({exc.name} is missing): pip install 'ingestion-mcp-gateway[lance]', or serve Milvus with "
                "VECTOR_GATEWAY_INDEX_ENGINE=milvus."
            ) from exc
        folder = str(settings.lance_folder)
        return LanceStore(folder, analysis=settings.bm25_analysis, cache_mb=settings.lance_cache_mb)
    return MilvusStore(
        settings.milvus_uri,
        token=settings.token_for_milvus(),
        dense_index=settings.dense_index,
        flush=settings.should_flush,
        stop_words=settings.bm25_stop_words,
        analysis=settings.bm25_analysis,
    )


def create_app(settings: GatewaySettings, *, embedder: Embedder | None = None) -> FastAPI:
    """The gateway app. ``embedder`` injects a loaded model (tests share one across apps)."""
    choice = engines.choose(settings)
    engines.say_once(choice, settings)
    store = open_store(settings, choice)
    embedders = EmbedderHolder(
        settings, embedder, stored=lambda: [store.describe(n)[1] for n in store.list_collections()]
    )
    orders = _orders(settings)  # no connection yet: the first write without an order opens it

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if choice.migrate:  # asked for: the copy is made before anything opens the Lance folder
            await anyio.to_thread.run_sync(engines.migrate_at_start, choice, settings)
        if settings.load_model_at_startup:
            embedders.start_loading()
        # Neither the model nor Milvus holds up start-up: /healthz answers at once, /readyz tells when.
        threading.Thread(target=_connect, args=(store,), name="milvus-connect", daemon=True).start()
        sweep = asyncio.create_task(_sweep(service))
        try:
            yield
        finally:
            sweep.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sweep  # a Milvus call in flight finishes before the store closes
            await anyio.to_thread.run_sync(store.close)
            await anyio.to_thread.run_sync(orders.close)

    async def readiness() -> dict[str, str]:
        return await service.readiness()

    app = create_service_app(
        name="vector-gateway",
        version=__version__,
        description="Embeds chunks and stores them in Milvus; hybrid (BM25 + dense, fused), semantic and keyword "
        "search over collections of documents; raw vector stores for caller-supplied embeddings.",
        auth_token=settings.token_value(),
        readiness=readiness,
        lifespan=lifespan,
    )
    service = GatewayService(
        store,
        embedders,
        fusion=settings.hybrid_fusion,
        candidates=settings.fusion_candidates,
        observe=app.state.metrics.observe_stage,
        leases=LeasePolicy(seconds=settings.write_lease_s),
        orders=orders,
        growth=LiteGrowth(engine_label(store.engine, store.uri) == "milvus-lite", engines.migrate_command(settings)),
        originals=Originals(settings.originals_root, settings.originals_max_mb * 2**20),
    )
    app.state.gateway = service
    app.state.settings = settings
    app.state.vectors = VectorStores(store)
    app.include_router(router)
    app.include_router(vector_router)
    return app


def run() -> None:
    settings = settings_or_exit(GatewaySettings, "vector-gateway")
    configure_logging(settings.log_level, json_logs=settings.json_logs)
    serve(create_app(settings), settings)


if __name__ == "__main__":
    run()
