"""The deployment's shape on loopback, for `make load` and the e2e tests: Redis, N MCP replicas over
streamable HTTP, M queue workers, and a per-request round-robin balancer in front (rr_proxy.py).

    with queue_topology(stack, replicas=2, workers=1) as url:   # url: the balancer's /mcp
        ...
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))  # scripts.service_stack: the helpers the servers share
from redis_server import SKIP_REASON, RedisServer, redis_binary
from service_stack import BIN, ServiceProcess, ServiceStack, free_port

HERE = Path(__file__).resolve().parent
# Alternate clients between the two protocol revisions a deployment must serve.
PROTOCOLS = ("legacy", "2026-07-28")


@contextlib.contextmanager
def queue_topology(stack: ServiceStack, *, replicas: int = 2, workers: int = 1) -> Iterator[str]:
    if redis_binary() is None:
        raise RuntimeError(SKIP_REASON)
    with RedisServer(stack.workdir / "broker") as broker:
        env = {"INGESTION_MCP_BROKER_URL": broker.url}
        mcps = [stack.mcp_replica(f"replica-{i}", **env) for i in range(replicas)]
        runners = [stack.mcp_replica(f"worker-{i}", **env) for i in range(workers)]
        for worker in runners:
            worker.command = str(BIN / "ingestion-mcp-worker")
        proxy: subprocess.Popen[bytes] | None = None
        try:
            for process in (*mcps, *runners):
                process.start()
            for replica in mcps:
                replica.wait_ready()
            port = free_port()
            with (stack.workdir / "balancer.log").open("ab") as log:
                proxy = subprocess.Popen(
                    [sys.executable, str(HERE / "rr_proxy.py"), "--port", str(port), *[r.url for r in mcps]],
                    stdout=log, stderr=subprocess.STDOUT,
                )  # fmt: skip
            _wait_listening(port, proxy, runners)
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            if proxy is not None:
                proxy.kill()
                proxy.wait(timeout=10)
            for process in (*mcps, *runners):
                process.stop()


def _wait_listening(port: int, proxy: subprocess.Popen[bytes], workers: list[ServiceProcess]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for worker in workers:
            if worker.process is None or worker.process.poll() is not None:
                raise RuntimeError(f"{worker.name} exited:\n{worker.log_tail()}")
        if proxy.poll() is not None:
            raise RuntimeError("the balancer exited")
        try:
            httpx.get(f"http://127.0.0.1:{port}/_proxy/stats", timeout=1)
            return
        except httpx.TransportError:
            time.sleep(0.2)
    raise RuntimeError("the balancer never listened")


def http_client_factory(url: str, headers: dict[str, str]) -> Any:
    """Per simulated user, its own MCP client over HTTP through the balancer (protocols alternate)."""

    @contextlib.asynccontextmanager
    async def connect(user: int) -> AsyncIterator[Any]:
        import httpx2
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client

        async with (
            httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0, read=300.0)) as http,
            Client(streamable_http_client(url, http_client=http), mode=PROTOCOLS[user % 2]) as client,
        ):
            yield client

    return connect
