"""How this process reaches its data folder's services: it hosts them, or it is attached to the process that does.

The host runs the services in one long-lived task of its own (their lifespans entered and left there, whichever
request started them) and holds ``host.lock``, its pid written in it. An attached process sends requests to the
host's socket; when a connection is refused (nothing was sent: the host is gone), one takeover runs for all the
calls that found it so and each waits for it: take ``host.lock`` and host, or attach to whoever was first. A
request the host was serving when it died fails with an error that says so. The Backend built here stays the
same object throughout: its clients' transport routes each request to the current host.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import httpx

from ..backend import Backend
from ..backend.clients import ServiceClient, make_http_client
from ..errors import UpstreamError
from ..settings import McpSettings
from .asgi_stream import StreamingASGITransport
from .on_first_use import OnFirstUse, StartRequest
from .socket import NotPrivate, PrivateDir, prefix, serve_privately, socket_dir

log = logging.getLogger("ingestion_mcp.embedded")

HOST_LOCK = "host.lock"
ATTACH_TIMEOUT_S = 180.0  # a host that just took the folder is still loading its model
# A call waits this long for a takeover (a cold start: ~10-20 s on 2 cores), then says so: agents time out at 60 s.
TAKEOVER_WAIT_S = 50.0
SERVICES = ("docling", "chunker", "vector gateway")
IN_FLIGHT = (
    "The process hosting the data folder {folder} (pid {pid}) {why} while this request was in flight; "
    "the data folder keeps nothing half-written."
)
STILL_STARTING = (
    "The host (pid {pid}) of the data folder {folder} stopped; this process is taking the folder over and its "
    "services are still starting (the embedding model loads)."
)
CALL_AGAIN = "Call again: this process takes the folder over (or attaches to its new host) on the next call."
STARTING = "ingestion-mcp started {age:.0f} s ago; the services of the data folder {folder} are still starting."


def _take_host_lock(folder: Path) -> int | None:
    """The host lock's descriptor (held until closed), with this process's pid written in it; None if taken."""
    fd = os.open(folder / HOST_LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


def host_pid(folder: Path) -> str:
    """The pid the folder's (current or last) host wrote in host.lock, for messages."""
    with contextlib.suppress(OSError):
        return (folder / HOST_LOCK).read_text().strip() or "unknown"
    return "unknown"


class _Hosting:
    """This process hosts the folder: requests go to the apps in process."""

    def __init__(self, apps: dict[str, Any], stop: asyncio.Event, task: asyncio.Task[None]) -> None:
        # The docling service streams a conversion's progress; httpx's ASGITransport would buffer it.
        self.transports: dict[str, httpx.AsyncBaseTransport] = {
            name: StreamingASGITransport(app) if name == "docling" else httpx.ASGITransport(app=app)
            for name, app in apps.items()
        }
        self.stop, self.task = stop, task

    async def send(self, name: str, request: httpx.Request) -> httpx.Response:
        return await self.transports[name].handle_async_request(request)

    async def aclose(self) -> None:
        self.stop.set()
        with anyio.move_on_after(60, shield=True):  # the services close in their own task
            with contextlib.suppress(Exception):
                await self.task


class _Attached:
    """Another process hosts the folder: requests go to its socket, under /docling, /chunker, /vector-gateway."""

    def __init__(self, place: PrivateDir, pid: str) -> None:
        self.place, self.pid = place, pid
        self.transport = httpx.AsyncHTTPTransport(uds=place.address)

    async def send(self, name: str, request: httpx.Request) -> httpx.Response:
        url = request.url.copy_with(path=prefix(name) + request.url.path)
        forwarded = httpx.Request(
            request.method, url, headers=request.headers, stream=request.stream, extensions=request.extensions
        )
        return await self.transport.handle_async_request(forwarded)

    async def aclose(self) -> None:
        await self.transport.aclose()
        self.place.close()


class FolderLink:
    """This process's way to the folder's services: hosting them, or attached to the process that does."""

    def __init__(self, settings: McpSettings, folder: Path, apps: Callable[[], dict[str, Any]], *, share: bool) -> None:
        """``apps``: the services to run when this process hosts; ``share``: serve them to others on the socket."""
        self.settings, self.folder, self.apps, self.share = settings, folder, apps, share
        self.sockets = socket_dir(folder)
        self.role: _Hosting | _Attached | None = None
        self.generation = 0
        self._retired: list[_Hosting | _Attached] = []
        self._recovery: asyncio.Task[None] | None = None
        self._starting: asyncio.Task[None] | None = None
        self._began = 0.0

    async def start(self) -> None:
        self._switch(await self._establish())

    def start_soon(self) -> None:
        """Start in the background (the MCP server answers meanwhile); a call made before the services run waits
        for them, up to TAKEOVER_WAIT_S, then says they are still starting. A start that failed is tried again by
        the next call."""
        self._began = anyio.current_time()
        self._starting = asyncio.get_running_loop().create_task(self.start())
        self._starting.add_done_callback(lambda task: task.cancelled() or task.exception())  # read: no warning

    async def _started(self) -> _Hosting | _Attached:
        """The role once the background start is done, or an error that says why there is none yet."""
        assert self._starting is not None
        if self._starting.done() and not self._starting.cancelled() and self._starting.exception() is not None:
            self._starting = asyncio.get_running_loop().create_task(self.start())  # the last try failed: again
        with anyio.move_on_after(TAKEOVER_WAIT_S) as waiting:
            try:
                await asyncio.shield(self._starting)  # a caller that leaves does not stop the start
            except UpstreamError:
                raise
            except Exception as exc:  # the services could not start here: say why
                raise self._error(
                    f"The services of the data folder {{folder}} could not start: {type(exc).__name__}: {exc}",
                    "Fix what the message names and call again, or restart ingestion-mcp.", None,
                ) from exc  # fmt: skip
        if waiting.cancelled_caught or self.role is None:
            age = anyio.current_time() - self._began
            raise self._error(STARTING.format(age=age, folder="{folder}"), "Call again in a few seconds.", None)
        return self.role

    def backend(self) -> Backend:
        """A Backend whose clients always reach the current host; the same object for the process's life."""
        clients = {name: ServiceClient(name, self._http(name)) for name in SERVICES}
        return Backend(docling=clients["docling"], chunker=clients["chunker"], gateway=clients["vector gateway"])

    def _http(self, name: str) -> httpx.AsyncClient:
        base_url = f"http://{name.replace(' ', '-')}.embedded"
        token, timeout_s = self.settings.token_value(), self.settings.request_timeout_s
        return make_http_client(base_url, token=token, timeout_s=timeout_s, transport=_Routed(self, name))

    async def send(self, name: str, request: httpx.Request) -> httpx.Response:
        if self.role is None and self._starting is not None:
            await self._started()
        role, generation = self.role, self.generation
        if role is None:
            raise self._error("This process has closed its link to the data folder {folder}.", "Restart it.", role)
        try:
            return await self._send(role, name, request)
        except httpx.ConnectError:  # nothing was sent: the host is gone; take over, or find its successor
            await self._recover(generation)
        try:
            return await self._send(self.role or role, name, request)
        except httpx.ConnectError:
            raise self._error(
                "The process hosting the data folder {folder} (pid {pid}) stopped answering right after this "
                "process attached to it.",
                "Retry; if it keeps failing, stop the other ingestion-mcp / ingestion-index processes on the folder.",
                self.role,
            ) from None

    async def _send(self, role: _Hosting | _Attached, name: str, request: httpx.Request) -> httpx.Response:
        try:
            return await role.send(name, request)
        except (httpx.ConnectError, httpx.TimeoutException):
            raise
        except httpx.TransportError as exc:  # the request reached the host, which went away before it answered
            why = f"stopped ({type(exc).__name__})"
            raise self._error(IN_FLIGHT.replace("{why}", why), CALL_AGAIN, role) from None

    async def _recover(self, generation: int) -> None:
        """One takeover for all the calls that found the host gone; each waits for it (cancellable)."""
        if self.generation != generation:
            return  # another call already took over or re-attached
        if self._recovery is None or self._recovery.done():
            self._recovery = asyncio.get_running_loop().create_task(self._take_over())
            self._recovery.add_done_callback(lambda task: task.cancelled() or task.exception())  # all waiters gone
        with anyio.move_on_after(TAKEOVER_WAIT_S) as waiting:
            await asyncio.shield(self._recovery)  # a caller that leaves does not stop the takeover
        if waiting.cancelled_caught:
            raise self._error(STILL_STARTING, "Retry in a few seconds.", self.role)

    async def _take_over(self) -> None:
        began, old = anyio.current_time(), self.role
        try:
            role = await self._establish()
        except UpstreamError:
            raise
        except Exception as exc:  # the services could not start here: say where and why
            raise self._error(
                f"The host (pid {{pid}}) of the data folder {{folder}} stopped, and this process could not take the "
                f"folder over: {type(exc).__name__}: {exc}",
                "Restart this app, or start another ingestion-mcp on the folder, which then hosts it.",
                old,
            ) from exc
        deadline = began + ATTACH_TIMEOUT_S
        await self._wait_ready(role, deadline)  # the new host loads its model: calls keep their retries
        self._switch(role)
        if old is not None:
            self._retired.append(old)  # calls may still hold it; closed with the link
        how = "took over hosting" if isinstance(role, _Hosting) else f"attached to the new host (pid {role.pid}) of"
        log.info("%s the data folder %s in %.1f s", how, self.folder, anyio.current_time() - began)

    def _switch(self, role: _Hosting | _Attached) -> None:
        self.role, self.generation = role, self.generation + 1

    async def _establish(self) -> _Hosting | _Attached:
        """Host the folder if no process does, else attach to its host; wait while a new host starts."""
        deadline = anyio.current_time() + ATTACH_TIMEOUT_S
        while True:
            lock = _take_host_lock(self.folder)
            if lock is not None:
                return await self._host(lock)
            attached = await self._attach()
            if isinstance(attached, _Attached):
                return attached
            why = attached
            if anyio.current_time() > deadline:
                raise self._error(
                    "Another process (pid {pid}) holds the data folder {folder} but its services did not answer "
                    f"within {ATTACH_TIMEOUT_S:.0f} s ({why}).",
                    "Stop the other ingestion-mcp / ingestion-index process, or use another data folder.",
                    None,
                )
            await anyio.sleep(0.2)

    async def _host(self, lock: int) -> _Hosting:
        """Start the services in a task of their own (entered and left there), and wait until they run."""
        loop = asyncio.get_running_loop()
        started: asyncio.Future[dict[str, Any]] = loop.create_future()
        stop = asyncio.Event()
        task = loop.create_task(self._run_host(lock, started, stop))
        try:
            apps = await asyncio.shield(started)
        except asyncio.CancelledError:  # this process is closing: the services stop once started
            stop.set()
            self._retired.append(_Hosting({}, stop, task))  # closing the link waits for them to stop
            raise
        return _Hosting(apps, stop, task)

    async def _run_host(self, lock: int, started: asyncio.Future[dict[str, Any]], stop: asyncio.Event) -> None:
        try:
            async with contextlib.AsyncExitStack() as stack:
                stack.callback(os.close, lock)  # released last, once Milvus is closed
                # Milvus Lite's in-process gRPC server logs an unimplemented AllocTimestamp call as an error
                # on paged queries; it is harmless and would drown real errors on stderr.
                logging.getLogger("grpc._server").setLevel(logging.CRITICAL)
                apps = await anyio.to_thread.run_sync(self.apps)  # imports: off the event loop, which answers MCP
                requests: asyncio.Queue[StartRequest] = asyncio.Queue()
                # The gateway first: its model loads in the background meanwhile.
                for app in sorted(apps.values(), key=lambda app: app is not apps.get("vector gateway")):
                    if isinstance(app, OnFirstUse):
                        app.submit = requests.put_nowait  # started here, by the first request that needs it
                    elif hasattr(app, "router"):
                        await stack.enter_async_context(app.router.lifespan_context(app))
                if self.share:  # a short command serves no one: a newcomer waits, then hosts
                    unfinished = {"error": IN_FLIGHT.format(folder=self.folder, pid=os.getpid(), why="exited"),
                                  "suggestion": CALL_AGAIN, "code": "SERVICE_UNAVAILABLE"}  # fmt: skip
                    await stack.enter_async_context(serve_privately(apps, self.sockets, unfinished=unfinished))
                log.info("embedded services started; hosting %s", self.folder, extra={"service": "ingestion_mcp"})
                started.set_result(apps)
                await _start_on_request(stack, requests, stop)
        except BaseException as exc:
            if not started.done() and isinstance(exc, asyncio.CancelledError):
                started.cancel()
            elif not started.done():
                started.set_exception(exc)
            elif not isinstance(exc, asyncio.CancelledError):
                log.error("the embedded services stopped: %s", exc)
            if isinstance(exc, asyncio.CancelledError | KeyboardInterrupt | SystemExit):
                raise

    async def _attach(self) -> _Attached | str:
        """Attach to the host's socket once it answers; else why not (the directory is checked first)."""
        try:
            place = PrivateDir.open(self.sockets, create=False)
        except NotPrivate as exc:
            return str(exc)
        role = _Attached(place, host_pid(self.folder))
        try:
            response = await role.send("vector gateway", self._probe("/healthz"))
            await response.aclose()
            if response.status_code == 200:
                log.info("attached to the services of pid %s on %s", role.pid, place.socket_file)
                return role
            why = f"the host answered HTTP {response.status_code}"
        except httpx.TransportError as exc:
            why = f"no answer on {place.socket_file}: {type(exc).__name__}"
        await role.aclose()
        return why

    def _probe(self, path: str) -> httpx.Request:
        """A health request to the vector gateway (a mounted app sees its prefix: its open paths want the token)."""
        token = self.settings.token_value()
        return httpx.Request("GET", f"http://host{path}", headers={"Authorization": f"Bearer {token}"} if token else {})

    async def _wait_ready(self, role: _Hosting | _Attached, deadline: float) -> None:
        """Until the vector gateway answers /readyz (its model loaded), fails for good, or the deadline passes."""
        while anyio.current_time() < deadline:
            try:
                response = await role.send("vector gateway", self._probe("/readyz"))
                body = await response.aread()
            except httpx.TransportError:
                return  # the call that follows says what is wrong
            if response.status_code != 503 or b'"failed' in body:  # ready, or waiting would not help
                return
            await anyio.sleep(0.2)

    def _error(self, message: str, suggestion: str, role: _Hosting | _Attached | None) -> UpstreamError:
        """An error naming the data folder and its host process (the role's, else the pid in host.lock)."""
        pid = role.pid if isinstance(role, _Attached) else host_pid(self.folder)
        text = message.replace("{folder}", str(self.folder)).replace("{pid}", pid)  # not format(): exc texts
        return UpstreamError(text, suggestion, code="SERVICE_UNAVAILABLE", status=503)

    async def aclose(self) -> None:
        for task in (self._recovery, self._starting):
            if task is not None and not task.done():
                task.cancel()
        self._starting = None
        roles, self.role = [*self._retired, self.role], None
        for role in roles:
            if role is not None:
                await role.aclose()


async def _start_on_request(
    stack: contextlib.AsyncExitStack, requests: asyncio.Queue[StartRequest], stop: asyncio.Event
) -> None:
    """Until ``stop``: start each service that starts on first use when asked, in this task (the host's), where
    its lifespan is left again with the others'."""
    stopping = asyncio.ensure_future(stop.wait())
    try:
        while True:
            asked = asyncio.ensure_future(requests.get())
            await asyncio.wait({asked, stopping}, return_when=asyncio.FIRST_COMPLETED)
            if not asked.done():
                asked.cancel()
                return
            service, done = asked.result()
            try:
                app = await anyio.to_thread.run_sync(service.make)  # its imports: off the event loop
                if hasattr(app, "router"):
                    await stack.enter_async_context(app.router.lifespan_context(app))
            except Exception as exc:  # noqa: BLE001 - the callers hear why; the next request tries again
                log.error("the %s service could not start: %s", service.name, exc)
                if not done.done():
                    done.set_exception(exc)
                continue
            service.app = app
            log.info("the %s service started on first use", service.name, extra={"service": "ingestion_mcp"})
            if not done.done():
                done.set_result(None)
    finally:
        stopping.cancel()


class _Routed(httpx.AsyncBaseTransport):
    def __init__(self, link: FolderLink, name: str) -> None:
        self.link, self.name = link, name

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        return await self.link.send(self.name, request)
