"""Run the three services in this process when no service URL is configured (the laptop default).

The MCP tools talk to them through the same HTTP clients as in a deployment, over an in-process
ASGI transport: one code path, no ports, no Docker.

One data folder, many processes: Milvus Lite lets one process open a folder, so the first process on it
(an MCP server, or `ingestion-index`) becomes its *host*: it holds `host.lock` and also serves the three
services on a Unix socket beside the data (owner-only). Every other process on the folder (a second agent
app, `ingestion-index update` while the agent runs) *attaches* to that socket: no model to load, no
Milvus to open, the same index, at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import logging
import os
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import IO, Any

import anyio
import httpx

from .backend import Backend
from .clients import ServiceClient, make_http_client
from .settings import McpSettings

log = logging.getLogger("ingestion_mcp.embedded")


HOST_LOCK = "host.lock"
ATTACH_TIMEOUT_S = 180.0  # a host that just took the folder is still loading its model
MAX_SOCKET_PATH = 100  # AF_UNIX paths are limited to ~108 bytes


def data_folder(settings: McpSettings) -> Path:
    folder = settings.data_dir.expanduser().resolve()
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def socket_path(folder: Path) -> Path:
    """The host's socket: in the data folder, or (for a deep folder) a name in the temp dir derived from it."""
    beside = folder / "services.sock"
    if len(str(beside)) <= MAX_SOCKET_PATH:
        return beside
    digest = hashlib.sha256(str(folder).encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"ingestion-mcp-{digest}.sock"


@contextlib.contextmanager
def host_lock(folder: Path) -> Iterator[IO[str] | None]:
    """The folder's host lock if this process can take it, else None (another process hosts it)."""
    handle = (folder / HOST_LOCK).open("a")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        yield None
        return
    try:
        yield handle
    finally:
        fcntl.flock(handle, fcntl.LOCK_UN)
        handle.close()


def hosted_elsewhere(settings: McpSettings) -> bool:
    """Whether another process hosts this embedded data folder now."""
    if not settings.embedded:
        return False
    with host_lock(data_folder(settings)) as lock:
        return lock is None


def _embedded_apps(settings: McpSettings) -> dict[str, Any]:
    try:
        from chunker_service.main import create_app as chunker_app
        from chunker_service.settings import ChunkerSettings
        from docling_service.main import create_app as docling_app
        from docling_service.settings import DoclingSettings
        from vector_gateway.main import create_app as gateway_app
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise RuntimeError(
            "Embedded mode needs the docling, chunker and vector-gateway packages "
            "(pip install 'ingestion-mcp[embedded]'), or set DOCLING_SERVICE_URL, "
            f"CHUNKER_SERVICE_URL and VECTOR_GATEWAY_URL. Missing: {exc.name}"
        ) from exc
    return {
        "docling": docling_app(DoclingSettings()),
        "chunker": chunker_app(ChunkerSettings()),
        "vector gateway": gateway_app(gateway_settings(settings)),
    }


def gateway_settings(settings: McpSettings) -> Any:
    """The embedded gateway's settings: Milvus Lite in the data folder unless VECTOR_GATEWAY_MILVUS_URI says."""
    from vector_gateway.settings import GatewaySettings

    data_dir = settings.data_dir.expanduser().resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    configured = GatewaySettings()
    if "VECTOR_GATEWAY_MILVUS_URI" in os.environ:
        return configured
    return configured.model_copy(update={"milvus_uri": str(data_dir / "milvus.db")})


@contextlib.asynccontextmanager
async def embedded_backend(settings: McpSettings, *, index_only: bool = False) -> AsyncIterator[Backend]:
    """Host the folder if no process does, else attach to its host; a host that goes away is taken over.

    ``index_only``: a short command that only reads or clears the index (`ingestion-index status`,
    `clear`): when it must host, it opens the vector gateway alone, without loading the model, and
    serves no socket; a process arriving meanwhile waits for the folder and then hosts it itself.
    """
    folder = data_folder(settings)
    sock = socket_path(folder)
    deadline = anyio.current_time() + ATTACH_TIMEOUT_S
    while True:
        with host_lock(folder) as lock:
            if lock is not None:
                hosting = index_backend(settings) if index_only else hosted_backend(settings, sock)
                async with hosting as backend:
                    yield backend
                return
        if await _host_answers(sock):
            async with attached_backend(settings, sock) as backend:
                yield backend
            return
        if anyio.current_time() > deadline:
            raise RuntimeError(
                f"Another process holds this data folder but its services did not answer on {sock} within "
                f"{ATTACH_TIMEOUT_S:.0f} s. Stop the other ingestion-mcp / ingestion-index process, "
                "or use another data folder."
            )
        await anyio.sleep(0.2)


@contextlib.asynccontextmanager
async def index_backend(settings: McpSettings) -> AsyncIterator[Backend]:
    """The vector gateway alone, in process, its model loaded only if something embeds."""
    from vector_gateway.main import create_app as gateway_app

    app = gateway_app(gateway_settings(settings).model_copy(update={"load_model_at_startup": False}))
    absent = _absent_service_app()
    async with contextlib.AsyncExitStack() as stack:
        await stack.enter_async_context(app.router.lifespan_context(app))
        clients = {}
        for name, target in (("docling", absent), ("chunker", absent), ("vector gateway", app)):
            http = make_http_client(
                f"http://{name.replace(' ', '-')}.embedded",
                token=settings.token_value(),
                timeout_s=settings.request_timeout_s,
                transport=httpx.ASGITransport(app=target),
            )
            clients[name] = ServiceClient(name, http)
            stack.push_async_callback(clients[name].aclose)
        yield Backend(docling=clients["docling"], chunker=clients["chunker"], gateway=clients["vector gateway"])


def _absent_service_app() -> Any:
    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        body = b'{"error": "This command did not start this service.", "code": "SERVICE_UNAVAILABLE"}'
        await send({"type": "http.response.start", "status": 503, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": body})

    return app


@contextlib.asynccontextmanager
async def hosted_backend(settings: McpSettings, sock: Path) -> AsyncIterator[Backend]:
    """Run the services here, for this process (in-process ASGI) and for others (the Unix socket)."""
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
        await stack.enter_async_context(serve_on_socket(apps, sock))
        log.info("embedded services started", extra={"service": "ingestion_mcp"})
        yield Backend(docling=clients["docling"], chunker=clients["chunker"], gateway=clients["vector gateway"])


def _prefix(name: str) -> str:
    return "/" + name.replace(" ", "-")


@contextlib.asynccontextmanager
async def serve_on_socket(apps: dict[str, Any], sock: Path) -> AsyncIterator[None]:
    """Serve the apps (already started) on an owner-only Unix socket, under /docling, /chunker, /vector-gateway."""
    import uvicorn
    from starlette.applications import Starlette
    from starlette.routing import Mount

    class QuietServer(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:  # the MCP server owns the process's signals
            yield

    sock.unlink(missing_ok=True)
    router = Starlette(routes=[Mount(_prefix(name), app=app) for name, app in apps.items()])
    config = uvicorn.Config(router, uds=str(sock), lifespan="off", log_config=None, access_log=False)
    server = QuietServer(config)
    old_umask = os.umask(0o077)  # the socket file is created owner-only
    # A plain task, not a task group: whoever enters this context may leave it from another task.
    task = asyncio.get_running_loop().create_task(server.serve())
    try:
        while not server.started and not task.done():
            await anyio.sleep(0.05)
        os.umask(old_umask)
        if task.done():  # e.g. the socket could not be bound: this process still works, alone
            log.warning("could not share the services on %s; other processes cannot attach", sock)
        yield
    finally:
        os.umask(old_umask)
        server.should_exit = True
        with contextlib.suppress(Exception, SystemExit):  # uvicorn exits when it cannot bind
            await asyncio.wait_for(asyncio.shield(task), timeout=10)
        sock.unlink(missing_ok=True)


@contextlib.asynccontextmanager
async def attached_backend(settings: McpSettings, sock: Path) -> AsyncIterator[Backend]:
    """Use the services of the process that hosts this data folder, through its socket."""
    token = settings.token_value()
    clients = {}
    for name in ("docling", "chunker", "vector gateway"):
        transport = httpx.AsyncHTTPTransport(uds=str(sock))
        http = make_http_client(
            f"http://host{_prefix(name)}", token=token, timeout_s=settings.request_timeout_s, transport=transport
        )
        clients[name] = ServiceClient(name, http)
    backend = Backend(docling=clients["docling"], chunker=clients["chunker"], gateway=clients["vector gateway"])
    log.info("attached to the services of another process on %s", sock, extra={"service": "ingestion_mcp"})
    try:
        yield backend
    finally:
        await backend.aclose()


async def _host_answers(sock: Path) -> bool:
    if not sock.exists():
        return False
    try:
        async with httpx.AsyncClient(transport=httpx.AsyncHTTPTransport(uds=str(sock))) as http:
            return (await http.get("http://host/vector-gateway/healthz", timeout=5)).status_code == 200
    except httpx.TransportError:
        return False


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


def open_backend(settings: McpSettings, *, index_only: bool = False) -> contextlib.AbstractAsyncContextManager[Backend]:
    return embedded_backend(settings, index_only=index_only) if settings.embedded else remote_backend(settings)
