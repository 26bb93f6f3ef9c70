"""Run the three services in this process when no service URL is configured (the laptop default).

The MCP tools talk to them through the same HTTP clients as in a deployment, over an in-process
ASGI transport: one code path, no ports, no Docker.

One data folder, many processes: Lance and Milvus Lite let one process own a folder, so the first process on it
(an MCP server, or `ingestion-index`) becomes its *host*: it holds `host.lock` (its pid written in it) and
also serves the three services on a Unix socket in the folder's `run/` directory, both owner-only
(embedded/socket.py). Every other process on the folder (a second agent app, `ingestion-index update` while
the agent runs, a worker) *attaches* to that socket: no model to load, no index to open, the same index.

When the host exits (cleanly, or killed), the next call of an attached process finds no one at the socket
and takes the folder over: it takes `host.lock` and starts the services itself, or, if another process
was first, attaches to that one. Concurrent calls wait for the one takeover. A request the dead host was
serving fails with an error that says so (the gateway's writes are atomic: nothing half-written stays).
The Backend the tools hold stays the same object throughout (embedded/link.py).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import IO, Any

import anyio

from ..backend import Backend
from ..backend.clients import ServiceClient, make_http_client
from ..settings import McpSettings
from .link import HOST_LOCK, FolderLink
from .on_first_use import OnFirstUse

# Seconds a docling worker the embedded server started stays after its last conversion: a folder sync's files
# follow each other within it, and an idle laptop server gets the worker's ~300-450 MB back soon after.
EMBEDDED_WORKER_IDLE_S = 30.0
# A call that needs the model while it loads waits this long (the server answers before its model is loaded);
# below the 60 s after which agents give up on a call.
EMBEDDED_MODEL_WAIT_S = 45.0


def data_folder(settings: McpSettings) -> Path:
    folder = settings.data_dir.expanduser().resolve()
    folder.mkdir(parents=True, exist_ok=True)
    return folder


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


def _embedded_apps(settings: McpSettings, *, index_only: bool) -> dict[str, Any]:
    if index_only:  # the vector gateway alone, its model loaded only if something embeds
        from vector_gateway.main import create_app

        gateway = gateway_settings(settings).model_copy(update={"load_model_at_startup": False})
        absent = _absent_service_app()
        return {"docling": absent, "chunker": absent, "vector gateway": create_app(gateway)}
    try:
        from vector_gateway.main import create_app as gateway_app
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise _not_installed(exc) from exc
    # A search needs the gateway alone: the converter and the chunker start with the first call that needs them.
    return {
        "docling": OnFirstUse("docling", _docling_app),
        "chunker": OnFirstUse("chunker", _chunker_app),
        "vector gateway": gateway_app(gateway_settings(settings)),
    }


def _docling_app() -> Any:
    try:
        from docling_service.main import create_app
        from docling_service.settings import DoclingSettings
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise _not_installed(exc) from exc
    return create_app(embedded_docling_settings(DoclingSettings()))


def _chunker_app() -> Any:
    try:
        from chunker_service.main import create_app
        from chunker_service.settings import ChunkerSettings
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise _not_installed(exc) from exc
    return create_app(ChunkerSettings())


def _not_installed(exc: ImportError) -> RuntimeError:
    return RuntimeError(
        "Embedded mode needs the docling, chunker and vector-gateway packages "
        "(pip install 'ingestion-mcp-server[embedded]'), or set DOCLING_SERVICE_URL, "
        f"CHUNKER_SERVICE_URL and VECTOR_GATEWAY_URL. Missing: {exc.name}"
    )


def embedded_docling_settings(docling: Any) -> Any:
    """A laptop's idle server holds no docling: nothing starts with it (the converter's fork server and a worker
    start with the first conversion), and the worker exits after EMBEDDED_WORKER_IDLE_S of quiet, not the service's
    5 minutes, the fork server with it (docs/memory.md). Set DOCLING_LAZY_START, DOCLING_WORKER_WARM or
    DOCLING_WORKER_IDLE_S to choose otherwise."""
    update: dict[str, Any] = {}
    if "lazy_start" not in docling.model_fields_set:
        update["lazy_start"] = True
    if "worker_warm" not in docling.model_fields_set:
        update["worker_warm"] = False
    if "worker_idle_s" not in docling.model_fields_set:
        update["worker_idle_s"] = EMBEDDED_WORKER_IDLE_S
    return docling.model_copy(update=update)


def gateway_settings(settings: McpSettings) -> Any:
    """The embedded gateway's settings: the index in the data folder (the Lance tables' lance/, or Milvus Lite's
    milvus.db: one an earlier version wrote, or VECTOR_GATEWAY_INDEX_ENGINE=milvus) unless VECTOR_GATEWAY_MILVUS_URI
    / _LANCE_URI says; any model file the gateway derives (another model's ONNX export, its int8 variant) in the
    data folder's models/, unless VECTOR_GATEWAY_EMBEDDING_CACHE_DIR says: nothing is written outside the data folder
    (docs/privacy.md; the bundled model ships both files made, so the user's install derives none); and a call waits
    for the model while it loads (EMBEDDED_MODEL_WAIT_S) unless VECTOR_GATEWAY_MODEL_WAIT_S says."""
    from vector_gateway.settings import GatewaySettings

    data_dir = settings.data_dir.expanduser().resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    configured = GatewaySettings()
    update: dict[str, Any] = {}
    if "VECTOR_GATEWAY_MILVUS_URI" not in os.environ:
        update["milvus_uri"] = str(data_dir / "milvus.db")
    if "VECTOR_GATEWAY_LANCE_URI" not in os.environ:
        update["lance_uri"] = str(data_dir / "lance")
    if "VECTOR_GATEWAY_EMBEDDING_CACHE_DIR" not in os.environ:
        update["embedding_cache_dir"] = data_dir / "models"
    if "model_wait_s" not in configured.model_fields_set:
        update["model_wait_s"] = EMBEDDED_MODEL_WAIT_S
    return configured.model_copy(update=update)


def embedded_index(settings: McpSettings) -> str:
    """The index the embedded gateway serves, as the ready message names it: "index: lance", or an earlier
    version's Milvus Lite index kept, with the command that moves it (the gateway's log says the same once)."""
    try:
        from vector_gateway import engines
    except ImportError:  # pragma: no cover - depends on the install
        return "index: not installed"
    gateway = gateway_settings(settings)
    choice = engines.choose(gateway)
    if choice.engine == "milvus" and choice.lite is not None:
        return f"index: {choice.label}, from an earlier version; move it to Lance: {engines.migrate_command(gateway)}"
    return f"index: {choice.label}"


def _absent_service_app() -> Any:
    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        body = b'{"error": "This command did not start this service.", "code": "SERVICE_UNAVAILABLE"}'
        await send({"type": "http.response.start", "status": 503, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": body})

    return app


@contextlib.asynccontextmanager
async def embedded_backend(
    settings: McpSettings, *, index_only: bool = False, background: bool = False
) -> AsyncIterator[Backend]:
    """Host the folder if no process does, else attach to its host; a host that goes away is taken over.

    ``index_only``: a short command that only reads or clears the index (`ingestion-index status`,
    `clear`): when it must host, it opens the vector gateway alone, without loading the model, and
    serves no socket; a process arriving meanwhile waits for the folder and then hosts it itself.
    Entering and leaving may happen in different tasks (the worker's start-up and shut-down hooks).
    ``background``: yield at once and start meanwhile (the MCP server, which answers from its first moment); a
    call waits for the start.
    """
    folder = data_folder(settings)
    link = FolderLink(settings, folder, lambda: _embedded_apps(settings, index_only=index_only), share=not index_only)
    if background:
        link.start_soon()
    else:
        await link.start()
    backend = link.backend()
    try:
        yield backend
    finally:
        with anyio.CancelScope(shield=True):
            await backend.aclose()
            await link.aclose()


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


def open_backend(
    settings: McpSettings, *, index_only: bool = False, background: bool = False
) -> contextlib.AbstractAsyncContextManager[Backend]:
    """The embedded services (``background``: started while the caller goes on) or the configured services."""
    if settings.embedded:
        return embedded_backend(settings, index_only=index_only, background=background)
    return remote_backend(settings)
