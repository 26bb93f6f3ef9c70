"""Run the three services in this process when no service URL is configured (the laptop default).

The MCP tools talk to them through the same HTTP clients as in a deployment, over an in-process
ASGI transport: one code path, no ports, no Docker.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import AsyncIterator
from typing import Any

import httpx

from .backend import Backend
from .clients import ServiceClient, make_http_client
from .settings import McpSettings

log = logging.getLogger("ingestion_mcp.embedded")


def _embedded_apps(settings: McpSettings) -> dict[str, Any]:
    try:
        from chunker_service.main import create_app as chunker_app
        from chunker_service.settings import ChunkerSettings
        from docling_service.main import create_app as docling_app
        from docling_service.settings import DoclingSettings
        from vector_gateway.main import create_app as gateway_app
        from vector_gateway.settings import GatewaySettings
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise RuntimeError(
            "Embedded mode needs the docling, chunker and vector-gateway packages "
            "(pip install 'ingestion-mcp[embedded]'), or set DOCLING_SERVICE_URL, "
            f"CHUNKER_SERVICE_URL and VECTOR_GATEWAY_URL. Missing: {exc.name}"
        ) from exc
    data_dir = settings.data_dir.expanduser().resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    gateway_settings = GatewaySettings()
    if "VECTOR_GATEWAY_MILVUS_URI" not in os.environ:
        gateway_settings = gateway_settings.model_copy(update={"milvus_uri": str(data_dir / "milvus.db")})
    return {
        "docling": docling_app(DoclingSettings()),
        "chunker": chunker_app(ChunkerSettings()),
        "vector gateway": gateway_app(gateway_settings),
    }


@contextlib.asynccontextmanager
async def embedded_backend(settings: McpSettings) -> AsyncIterator[Backend]:
    # Milvus Lite's in-process gRPC server logs an unimplemented AllocTimestamp call as an error on
    # paged queries; it is harmless and would drown real errors on stderr.
    logging.getLogger("grpc._server").setLevel(logging.CRITICAL)
    apps = _embedded_apps(settings)
    token = settings.token_value()
    async with contextlib.AsyncExitStack() as stack:
        clients = {}
        for name, app in apps.items():
            await stack.enter_async_context(app.router.lifespan_context(app))
            transport = httpx.ASGITransport(app=app)
            http = make_http_client(
                f"http://{name.replace(' ', '-')}.embedded",
                token=token,
                timeout_s=settings.request_timeout_s,
                transport=transport,
            )
            clients[name] = ServiceClient(name, http)
            stack.push_async_callback(clients[name].aclose)
        log.info("embedded services started", extra={"service": "ingestion_mcp"})
        yield Backend(docling=clients["docling"], chunker=clients["chunker"], gateway=clients["vector gateway"])


@contextlib.asynccontextmanager
async def remote_backend(settings: McpSettings) -> AsyncIterator[Backend]:
    token = settings.token_value()
    urls = {
        "docling": settings.docling_service_url,
        "chunker": settings.chunker_service_url,
        "vector gateway": settings.vector_gateway_url,
    }
    clients = {
        name: ServiceClient(name, make_http_client(str(url), token=token, timeout_s=settings.request_timeout_s))
        for name, url in urls.items()
    }
    backend = Backend(docling=clients["docling"], chunker=clients["chunker"], gateway=clients["vector gateway"])
    try:
        yield backend
    finally:
        await backend.aclose()


def open_backend(settings: McpSettings) -> contextlib.AbstractAsyncContextManager[Backend]:
    return embedded_backend(settings) if settings.embedded else remote_backend(settings)
