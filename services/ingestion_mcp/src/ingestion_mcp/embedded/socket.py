"""The data folder's Unix socket, private to its owner: a 0700 directory, a 0600 socket, a short address.

The socket lives in ``run/`` inside the data folder. AF_UNIX addresses hold ~104 bytes, so for a deep
folder the address goes through the directory's open descriptor (``/proc/self/fd/<fd>/services.sock``):
short, and it reaches exactly the directory that was checked. Where /proc is missing (macOS), a deep
folder's socket goes to a per-user runtime directory that is verified private ($XDG_RUNTIME_DIR, or a
temp dir that is the user's own, as macOS gives each user); never to a shared /tmp.

The host binds the socket itself (uvicorn's own ``uds=`` bind chmods it to 0666) and checks the modes
again once uvicorn serves it; an attaching process checks the directory before it connects.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
import socket
import stat
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio

log = logging.getLogger("ingestion_mcp.embedded")

SOCKET_NAME = "services.sock"
RUN_DIR = "run"
MAX_ADDRESS = 100  # sun_path: 108 bytes on Linux, 104 on macOS, with its NUL
PROC_FD = Path("/proc/self/fd")


class NotPrivate(Exception):
    """The socket or its directory is not the owner's alone, or cannot be made so."""


def socket_dir(folder: Path, *, proc: Path = PROC_FD) -> Path:
    """The directory of the folder's socket: ``run/`` in it, unless the path is too deep to address without /proc."""
    beside = folder / RUN_DIR
    if len(str(beside / SOCKET_NAME)) <= MAX_ADDRESS or proc.is_dir():
        return beside
    digest = hashlib.sha256(str(folder).encode()).hexdigest()[:16]
    for root in _runtime_roots():
        if _problem(root.stat(), f"runtime directory {root}") is None:
            return root / f"ingestion-mcp-{digest}"
    return beside  # too long to bind: the host says so and serves this process alone


def _runtime_roots() -> Iterator[Path]:
    for value in (os.environ.get("XDG_RUNTIME_DIR"), tempfile.gettempdir()):
        if value and Path(value).is_dir():
            yield Path(value)


def _problem(st: os.stat_result, what: str, *, kind: int = stat.S_IFDIR, mode: int | None = None) -> str | None:
    """Why ``st`` is not private to this user (None if it is)."""
    if stat.S_IFMT(st.st_mode) != kind:
        return f"{what} is not a {'directory' if kind == stat.S_IFDIR else 'socket'}"
    if st.st_uid != os.geteuid():
        return f"{what} belongs to uid {st.st_uid}, not to this user (uid {os.geteuid()})"
    perms = stat.S_IMODE(st.st_mode)
    if (mode is not None and perms != mode) or perms & 0o077:
        return f"{what} has mode {perms:04o}; it must be {mode or 0o700:04o} (owner only)"
    return None


class PrivateDir:
    """An open handle on the socket's directory, checked to be this user's alone."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path, self.fd = path, fd

    @classmethod
    def open(cls, path: Path, *, create: bool) -> PrivateDir:
        """Open and check the directory. ``create`` (the host): make it, or make an existing one 0700."""
        if create:
            with contextlib.suppress(FileExistsError):
                path.mkdir(mode=0o700)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except OSError as exc:
            raise NotPrivate(f"cannot open the socket directory {path}: {exc.strerror}") from None
        try:
            problem = _problem(os.fstat(fd), f"socket directory {path}")
            if problem and create and os.fstat(fd).st_uid == os.geteuid():
                os.fchmod(fd, 0o700)
                problem = _problem(os.fstat(fd), f"socket directory {path}")
            if problem:
                raise NotPrivate(problem)
        except BaseException:
            os.close(fd)
            raise
        return cls(path, fd)

    @property
    def socket_file(self) -> Path:
        return self.path / SOCKET_NAME

    @property
    def address(self) -> str:
        """What to bind or connect to: the path, or (too long) the same file through the open directory."""
        direct = str(self.socket_file)
        if len(direct) <= MAX_ADDRESS:
            return direct
        through = PROC_FD / str(self.fd) / SOCKET_NAME
        return str(through) if PROC_FD.is_dir() else direct

    def socket_problem(self) -> str | None:
        """Why the socket file is not this user's alone with mode 0600 (None if it is)."""
        try:
            st = os.stat(self.address)
        except OSError as exc:
            return f"socket {self.socket_file}: {exc.strerror}"
        return _problem(st, f"socket {self.socket_file}", kind=stat.S_IFSOCK, mode=0o600)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)


def bind_private(place: PrivateDir) -> socket.socket:
    """A listening socket at ``place``, created 0600 (a stale one from a killed host is replaced)."""
    address = place.address
    if len(address) > MAX_ADDRESS:
        raise NotPrivate(f"the socket path {address} is too long for a Unix socket; use a shorter data folder path")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(address)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old_umask = os.umask(0o177)  # the file is created 0600: no moment when others could connect
    try:
        sock.bind(address)
        os.chmod(address, 0o600)
        problem = place.socket_problem()
        if problem:
            raise NotPrivate(problem)
        sock.listen(128)
    except BaseException:
        sock.close()
        raise
    finally:
        os.umask(old_umask)
    return sock


@contextlib.asynccontextmanager
async def serve_privately(
    apps: dict[str, Any], directory: Path, *, unfinished: dict[str, str] | None = None
) -> AsyncIterator[PrivateDir | None]:
    """Serve the apps (already started) on the folder's private socket, under /docling, /chunker, /vector-gateway.

    Yields the socket's directory, or None when the services cannot be shared privately (logged): this
    process then works alone. ``unfinished``: the error body (HTTP 500) of a request still unanswered when
    the server stops. Enter and leave it in one task: the server runs in a task group."""
    try:
        place = PrivateDir.open(directory, create=True)
    except NotPrivate as exc:
        log.warning("not sharing this data folder's services: %s; other processes cannot attach", exc)
        yield None
        return
    try:
        sock = bind_private(place)
    except (OSError, NotPrivate) as exc:
        log.warning("not sharing this data folder's services: %s; other processes cannot attach", exc)
        place.close()
        yield None
        return
    server = _server(apps, unfinished)
    try:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(_serve, server, sock)
            while not server.started and not server.should_exit:
                await anyio.sleep(0.02)
            problem = place.socket_problem() if server.started else "the server did not start"
            if problem:  # checked once uvicorn serves it: nothing may have widened the mode meanwhile
                log.warning("refusing to share this data folder's services: %s", problem)
                server.should_exit = True
                yield None
            else:
                yield place
            server.should_exit = True
    finally:
        with contextlib.suppress(OSError):
            os.unlink(place.address)
        place.close()


def _server(apps: dict[str, Any], unfinished: dict[str, str] | None) -> Any:
    import uvicorn
    from starlette.applications import Starlette
    from starlette.routing import Mount

    class QuietServer(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:  # the MCP server owns the process's signals
            yield

    router = Starlette(routes=[Mount(prefix(name), app=app) for name, app in apps.items()])
    app = answer_unfinished(router, unfinished) if unfinished else router
    # Work of other processes in flight when this one exits gets this long to finish.
    config = uvicorn.Config(app, lifespan="off", log_config=None, access_log=False, timeout_graceful_shutdown=10)
    return QuietServer(config)


def answer_unfinished(app: Any, body: dict[str, str]) -> Any:
    """``app``, but a request still unanswered when the server stops gets ``body`` instead of a bare 500."""
    payload = json.dumps(body).encode()

    async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
        answered = False

        async def tracked(message: dict[str, Any]) -> None:
            nonlocal answered
            answered = answered or message["type"] == "http.response.start"
            await send(message)

        try:
            await app(scope, receive, tracked)
        except asyncio.CancelledError:  # uvicorn ends what the graceful shutdown left: the request is over
            if scope["type"] != "http" or answered:
                raise
            headers = [(b"content-type", b"application/json")]
            await send({"type": "http.response.start", "status": 500, "headers": headers})
            await send({"type": "http.response.body", "body": payload})

    return guarded


async def _serve(server: Any, sock: socket.socket) -> None:
    try:
        await server.serve(sockets=[sock])
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - this process keeps its own services
        log.warning("the data folder's socket server stopped: %s; other processes cannot attach", exc)
    finally:
        server.should_exit = True
        sock.close()


def prefix(name: str) -> str:
    return "/" + name.replace(" ", "-")
