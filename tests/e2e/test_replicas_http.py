"""Two MCP replicas behind a round-robin balancer with no sticky sessions, as a deployment runs them.

Each request of a client goes to the other replica than the one before (scripts/rr_proxy.py), so a
replica that kept a session of its own (a 2025-11-25 `Mcp-Session-Id`) would answer "Session not
found" to half of them. Clients on both protocol revisions must not notice that there are two.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import anyio
import httpx
import httpx2
import pytest
from journeys import counts, long_text
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from service_stack import ServiceProcess, ServiceStack, free_port

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(420)]
ROOT = Path(__file__).resolve().parents[2]
# "legacy" is the initialize handshake of 2025-11-25; "2026-07-28" is the stateless revision.
PROTOCOLS = ["legacy", "2026-07-28"]


@dataclass
class Balanced:
    url: str
    replicas: tuple[ServiceProcess, ServiceProcess]
    headers: dict[str, str]

    def served(self) -> dict[str, int]:
        return httpx.get(self.url.removesuffix("/mcp") + "/_proxy/stats", timeout=5).json()


@pytest.fixture(scope="module")
def balanced(stack_session: ServiceStack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Balanced]:
    stack_session.ensure_running()
    replicas = (stack_session.mcp_replica("mcp-a"), stack_session.mcp_replica("mcp-b"))
    port = free_port()
    log = (tmp_path_factory.mktemp("proxy") / "proxy.log").open("w")
    proxy = None
    try:
        for replica in replicas:
            replica.start()
        for replica in replicas:
            replica.wait_ready()
        upstreams = [replica.url for replica in replicas]
        proxy = subprocess.Popen(
            [sys.executable, str(ROOT / "scripts" / "rr_proxy.py"), "--port", str(port), *upstreams],
            stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        _wait_listening(port, proxy)
        yield Balanced(f"http://127.0.0.1:{port}/mcp", replicas, stack_session.headers())
    finally:
        if proxy is not None:
            proxy.kill()
            proxy.wait(timeout=10)
        for replica in replicas:
            replica.stop()
        log.close()


def _wait_listening(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        assert process.poll() is None, "the balancer exited"
        try:
            httpx.get(f"http://127.0.0.1:{port}/_proxy/stats", timeout=1)
            return
        except httpx.TransportError:
            time.sleep(0.2)
    pytest.fail("the balancer never listened")


def _client(balanced: Balanced, http: httpx2.AsyncClient, protocol: str) -> Client:
    return Client(streamable_http_client(balanced.url, http_client=http), mode=protocol)


def _http(balanced: Balanced) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(headers=balanced.headers, timeout=httpx2.Timeout(30.0, read=300.0))


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_client_works_whichever_replica_answers(balanced: Balanced, protocol: str, collection: str) -> None:
    before = balanced.served()
    async with _http(balanced) as http, _client(balanced, http, protocol) as client:
        tools = await client.list_tools()
        assert {"ingest_text", "search", "get_job_status"} <= {tool.name for tool in tools.tools}
        text = "The harbour master records every vessel's draught and cargo in the tide ledger at each high water."
        made = await client.call_tool("ingest_text", {"text": text, "name": "tides", "collection": collection})
        assert not made.is_error, made.content
        assert made.structured_content["status"] == "indexed"
        again = await client.call_tool("ingest_text", {"text": text, "name": "tides", "collection": collection})
        assert again.structured_content["status"] == "skipped"
        found = await client.call_tool("search", {"query": "vessel draught ledger", "collection": collection})
        assert found.structured_content["results"][0]["title"] == "tides"
        assert await counts(client, collection) == (1, 1)
    after = balanced.served()
    # Both replicas answered this client's calls: nothing tied it to one of them.
    assert all(after.get(r.url, 0) - before.get(r.url, 0) >= 2 for r in balanced.replicas), (before, after)


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_progress_streams_through_the_balancer(balanced: Balanced, protocol: str, collection: str) -> None:
    steps: list[str] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        steps.append(message or "")

    async with _http(balanced) as http, _client(balanced, http, protocol) as client:
        arguments = {"text": long_text(60, "balanced"), "name": "long", "collection": collection}
        made = await client.call_tool("ingest_text", arguments, progress_callback=on_progress)
        assert made.structured_content["status"] == "indexed", made.content
    assert "embedding" in steps and steps[-1] == "done", steps


@pytest.mark.parametrize(("protocol", "route"), [("2026-07-28", "balancer"), ("legacy", "one replica")])
async def test_a_cancelled_call_stops_the_work(balanced: Balanced, protocol: str, route: str, collection: str) -> None:
    """A cancelled call stops its ingest, and nothing is stored.

    2026-07-28 cancels by closing the request's stream, which the balancer passes on to whichever
    replica runs it. 2025-11-25 POSTs `notifications/cancelled`, which a stateless replica can act on
    only through the session id it handed out (ingestion_mcp.cancel_relay); across replicas that
    needs the broker (tests/e2e/test_jobs_queue.py), so here the client talks to one replica.
    """
    url = balanced.url if route == "balancer" else balanced.replicas[0].url + "/mcp"
    async with _http(balanced) as http, Client(streamable_http_client(url, http_client=http), mode=protocol) as client:
        embedding = anyio.Event()

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            if message == "embedding":
                embedding.set()

        async def ingest() -> None:
            arguments = {"text": long_text(660, "cancelled"), "name": "big", "collection": collection}
            await client.call_tool("ingest_text", arguments, progress_callback=on_progress)

        with anyio.move_on_after(300) as outer:
            async with anyio.create_task_group() as group:
                group.start_soon(ingest)
                await embedding.wait()
                group.cancel_scope.cancel()
        assert not outer.cancelled_caught, "embedding never started"
        # Whichever replica ran it, it stops: no replica keeps a job running, nothing is stored.
        with anyio.fail_after(90):
            while any([(await client.call_tool("list_active_jobs", {})).structured_content["jobs"] for _ in range(2)]):
                await anyio.sleep(0.5)
        await anyio.sleep(3)
        assert await counts(client, collection) == (0, 0)
