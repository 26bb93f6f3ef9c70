"""A real Redis for tests: Debian's `redis-server` on a free loopback port, no persistence, stopped after.

Used by the queue tests (services/ingestion_mcp/tests/queue, tests/e2e/test_jobs_queue.py);
`.ci/run` installs the package. `redis_binary()` is None where it is not installed.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

SKIP_REASON = "redis-server is not installed (apt-get install -y redis-server; .ci/run installs it)"


def redis_binary() -> str | None:
    return shutil.which("redis-server")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class RedisServer:
    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.port = _free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        binary = redis_binary()
        assert binary, SKIP_REASON
        self.workdir.mkdir(parents=True, exist_ok=True)
        args = [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                "--daemonize", "no", "--dir", str(self.workdir)]  # fmt: skip
        log = (self.workdir / "redis.log").open("ab")
        self.process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
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

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            process.kill()
            process.wait(timeout=10)

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
