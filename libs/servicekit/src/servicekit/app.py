"""Build a service's FastAPI app with the parts every service shares."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import FastAPI, Response
from fastapi.responses import JSONResponse
from ingestion_contracts import HealthStatus
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from .errors import install_error_handlers
from .middleware import Metrics, ServiceMiddleware
from .settings import ServiceSettings

# A readiness check returns {check_name: "ok" | reason}; anything but "ok" means not ready.
ReadinessCheck = Callable[[], dict[str, str] | Awaitable[dict[str, str]]]


def create_service_app(
    *,
    name: str,
    version: str,
    description: str,
    auth_token: str | None,
    readiness: ReadinessCheck | None = None,
    lifespan: Any = None,
) -> FastAPI:
    app = FastAPI(
        title=name,
        version=version,
        description=description,
        lifespan=lifespan,
        responses={
            401: {"description": "Missing or invalid bearer token"},
            422: {"description": "Invalid request"},
        },
    )
    metrics = Metrics(name)
    app.state.metrics = metrics
    install_error_handlers(app)

    @app.get("/healthz", operation_id="healthz", tags=["health"])
    async def healthz() -> HealthStatus:
        """Liveness: the process is up."""
        return HealthStatus(status="ok", service=name, version=version)

    @app.get(
        "/readyz",
        operation_id="readyz",
        tags=["health"],
        response_model=HealthStatus,
        responses={503: {"model": HealthStatus, "description": "Not ready"}},
    )
    async def readyz() -> HealthStatus | JSONResponse:
        """Readiness: dependencies reachable and models loaded."""
        checks: dict[str, str] = {}
        if readiness is not None:
            result = readiness()
            checks = await result if inspect.isawaitable(result) else result
        ready = all(v == "ok" for v in checks.values())
        body = HealthStatus(status="ok" if ready else "unavailable", service=name, version=version, checks=checks)
        if not ready:
            return JSONResponse(status_code=503, content=body.model_dump(), headers={"Retry-After": "5"})
        return body

    @app.get("/metrics", operation_id="metrics", tags=["health"], include_in_schema=False)
    async def metrics_endpoint() -> Response:
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    app.add_middleware(ServiceMiddleware, auth_token=auth_token, metrics=metrics)
    return app


def serve(app: FastAPI, settings: ServiceSettings) -> None:
    """Serve ``app`` with uvicorn on the settings' host and port until stopped."""
    import uvicorn

    from .memory import configure_allocators, configure_idle_trim

    configure_allocators()  # before uvicorn's threads allocate (docs/memory.md)
    configure_idle_trim(settings.idle_trim_s)
    # access_log=False: ServiceMiddleware logs every request already, as JSON with its request id.
    # log_config=None: uvicorn's own records go to the root handler (JSON), not to plain-text handlers of its own.
    uvicorn.run(app, host=settings.host, port=settings.port, log_level=settings.log_level.lower(), access_log=False,
                log_config=None)  # fmt: skip
