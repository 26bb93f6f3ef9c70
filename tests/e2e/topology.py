"""The queue topology the broker and queue tests run: two MCP replicas and a queue worker as processes on one Redis,
over the three services (stack_session). One class, one way to start it, one client to a replica."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from typing import Any

import redis
from redis_server import RedisServer
from service_stack import BIN, ServiceProcess, ServiceStack, session

WORKER_READY_S = 180  # a worker loads the model before it says "worker ready"; a loaded CI machine needs the margin


@dataclass
class Topology:
    stack: ServiceStack
    broker: RedisServer
    a: ServiceProcess
    b: ServiceProcess
    worker: ServiceProcess

    @property
    def processes(self) -> tuple[ServiceProcess, ...]:
        return (self.a, self.b, self.worker)

    def redis(self) -> redis.Redis:
        return redis.Redis.from_url(self.broker.url, socket_timeout=5)

    def record(self, job_id: str) -> dict[str, Any]:
        """The job's record straight from the broker (what no replica's memory holds)."""
        raw = self.redis().get(f"ingestion-mcp:job:{job_id}")
        assert raw is not None
        return json.loads(raw)

    def start_worker(self) -> None:
        ready = self.worker.log_text().count("worker ready")
        self.worker.start()
        deadline = time.monotonic() + WORKER_READY_S
        while self.worker.log_text().count("worker ready") == ready:
            assert self.worker.process is not None and self.worker.process.poll() is None, self.worker.log_tail()
            assert time.monotonic() < deadline, self.worker.log_tail()
            time.sleep(0.2)

    def alive(self) -> dict[str, bool]:
        return {p.name: p.process is not None and p.process.poll() is None for p in self.processes}

    def wait_step(self, job_id: str, steps: set[str], timeout_s: float = 240) -> dict[str, Any]:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            record = self.record(job_id)
            if record["current_step"] in steps or record["status"] != "running":
                return record
            time.sleep(0.05)
        raise TimeoutError(f"job {job_id} never reached {steps}")


@contextmanager
def running(stack: ServiceStack, broker: RedisServer, prefix: str, env: dict[str, str]) -> Iterator[Topology]:
    """The two replicas (``prefix``-a, -b) and the worker started with ``env`` on ``broker``; stopped after."""
    stack.ensure_running()
    env = {"INGESTION_MCP_BROKER_URL": broker.url, **env}
    a, b = stack.mcp_replica(f"{prefix}-a", **env), stack.mcp_replica(f"{prefix}-b", **env)
    worker = stack.mcp_replica(f"{prefix}-worker", **env)
    worker.command = str(BIN / "ingestion-mcp-worker")
    topology = Topology(stack, broker, a, b, worker)
    try:
        for replica in (a, b):
            replica.start()
        topology.start_worker()
        for replica in (a, b):
            replica.wait_ready()
        yield topology
    finally:
        for process in topology.processes:
            process.stop()


@asynccontextmanager
async def connected(topology: Topology, replica: ServiceProcess) -> AsyncIterator[Any]:
    """A real MCP client over streamable HTTP to ``replica`` (started again first if a test left it stopped)."""
    if replica.process is None or replica.process.poll() is not None:
        replica.start()
        replica.wait_ready()
    async with session(f"{replica.url}/mcp", topology.stack.auth_token) as client:
        yield client
