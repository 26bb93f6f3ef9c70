"""Two MCP replicas behind a round-robin balancer with no sticky sessions, as a deployment runs them.

Each request of a client goes to the other replica than the one before (scripts/rr_proxy.py), so a
replica that kept a session of its own (a 2025-11-25 `Mcp-Session-Id`) would answer "Session not
found" to half of them. Clients on both protocol revisions must not notice that there are two.
"""

from __future__ import annotations

import signal
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
from journeys import cancel_when_embedding, counts, long_text
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

    def log(self) -> list[dict[str, str]]:
        return httpx.get(self.url.removesuffix("/mcp") + "/_proxy/log", timeout=5).json()

    def steer(self, rpc: str, avoid: str) -> None:
        """The next `rpc` request goes to another replica than `avoid`, whatever the balancer's turn."""
        url = self.url.removesuffix("/mcp") + "/_proxy/steer"
        httpx.post(url, json={"rpc": rpc, "avoid": avoid}, timeout=5).raise_for_status()


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
    only through the session id it handed out (ingestion_mcp.http.cancel_relay); across replicas that
    needs the broker (tests/e2e/test_jobs_queue.py), so here the client talks to one replica.
    """
    url = balanced.url if route == "balancer" else balanced.replicas[0].url + "/mcp"
    async with _http(balanced) as http, Client(streamable_http_client(url, http_client=http), mode=protocol) as client:
        await cancel_when_embedding(
            client, {"text": long_text(660, "cancelled"), "name": "big", "collection": collection}
        )
        # Whichever replica ran it, it stops: no replica keeps a job running, nothing is stored.
        with anyio.fail_after(90):
            while any([(await client.call_tool("list_active_jobs", {})).structured_content["jobs"] for _ in range(2)]):
                await anyio.sleep(0.5)
        await anyio.sleep(3)
        assert await counts(client, collection) == (0, 0)


@pytest.fixture(scope="module")
def queued(stack_session: ServiceStack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Balanced]:
    """The deployment's shape: two replicas and a worker on one broker, behind the round-robin balancer."""
    from redis_server import SKIP_REASON, RedisServer, redis_binary

    if redis_binary() is None:
        pytest.skip(SKIP_REASON)
    stack_session.ensure_running()
    with RedisServer(tmp_path_factory.mktemp("broker")) as broker:
        env = {"INGESTION_MCP_BROKER_URL": broker.url, "INGESTION_MCP_LOG_LEVEL": "INFO"}
        replicas = (stack_session.mcp_replica("rr-a", **env), stack_session.mcp_replica("rr-b", **env))
        worker = stack_session.mcp_replica("rr-worker", **env)
        worker.command = str(Path(sys.executable).parent / "ingestion-mcp-worker")
        port = free_port()
        log = (tmp_path_factory.mktemp("proxy") / "proxy.log").open("w")
        proxy = None
        try:
            for process in (*replicas, worker):
                process.start()
            for replica in replicas:
                replica.wait_ready()
            proxy = subprocess.Popen(
                [sys.executable, str(ROOT / "scripts" / "rr_proxy.py"), "--port", str(port),
                 *[replica.url for replica in replicas]],
                stdout=log, stderr=subprocess.STDOUT,
            )  # fmt: skip
            _wait_listening(port, proxy)
            yield Balanced(f"http://127.0.0.1:{port}/mcp", replicas, stack_session.headers())
        finally:
            if proxy is not None:
                proxy.kill()
                proxy.wait(timeout=10)
            for process in (*replicas, worker):
                process.stop()
            log.close()


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_cancel_reaches_the_queued_job_whichever_replica_gets_it(
    queued: Balanced, protocol: str, collection: str
) -> None:
    """With jobs on the queue, a cancelled call stops the worker's job: a 2025-11-25 client's
    `notifications/cancelled` lands on either replica and travels to the one holding the call."""
    start = len(queued.log())
    ingest_at = None
    async with _http(queued) as http, _client(queued, http, protocol) as client:

        async def aim_the_cancel() -> None:
            nonlocal ingest_at
            ingest_at = next(e for e in queued.log()[start:] if e["rpc"] == "tools/call")["upstream"]
            if protocol == "legacy":  # 2026-07-28 cancels by closing the call's own stream
                # Round robin alone makes the other replica only likely (any request in between takes a turn).
                queued.steer("notifications/cancelled", avoid=ingest_at)

        arguments = {"text": long_text(660, "queued"), "name": "big", "collection": collection}
        await cancel_when_embedding(client, arguments, before_cancel=aim_the_cancel)
        with anyio.fail_after(90):
            while (await client.call_tool("list_active_jobs", {})).structured_content["jobs"]:
                await anyio.sleep(0.5)
        await anyio.sleep(2)
        assert await counts(client, collection) == (0, 0)
        if protocol == "legacy":
            cancel = next(e for e in queued.log()[start:] if e["rpc"] == "notifications/cancelled")
            assert cancel["upstream"] != ingest_at, "the cancel should have gone to the other replica"
        # The same client then ingests through the same balancer: the queue took the cancel, not the work.
        text = "The pilot boat leaves the harbour at slack water and returns with the evening tide."
        made = await client.call_tool("ingest_text", {"text": text, "name": "pilot", "collection": collection})
        assert made.structured_content["status"] == "indexed", made.content


async def test_a_call_whose_replica_is_killed_still_completes_on_the_queue(queued: Balanced, collection: str) -> None:
    """The replica holding a client's call is SIGKILLed mid-ingest: the call breaks, the job does not.

    The client asks the balancer (which skips the dead replica) what is running, follows the job to its
    end, and finds exactly one copy of its document with every chunk."""
    start = len(queued.log())
    async with _http(queued) as http, _client(queued, http, "2026-07-28") as client:
        embedding, broken = anyio.Event(), anyio.Event()

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            if message == "embedding":
                embedding.set()

        async def ingest() -> None:
            arguments = {"text": long_text(300, "orphaned"), "name": "orphan", "collection": collection}
            try:
                await client.call_tool("ingest_text", arguments, progress_callback=on_progress)
            except Exception:  # noqa: BLE001 - the replica died under the call: that is the point
                broken.set()

        async with anyio.create_task_group() as group:
            group.start_soon(ingest)
            with anyio.fail_after(300):
                await embedding.wait()
            accepted_by = next(e for e in queued.log()[start:] if e["rpc"] == "tools/call" and not e.get("refused"))[
                "upstream"
            ]
            victim = next(r for r in queued.replicas if r.url == accepted_by)
            await anyio.to_thread.run_sync(victim.stop, signal.SIGKILL)
            with anyio.fail_after(60):
                await broken.wait()
        try:
            with anyio.fail_after(60):
                jobs: list[dict] = []
                while not jobs:
                    listing = (await client.call_tool("list_active_jobs", {})).structured_content
                    jobs = [job for job in listing["jobs"] if job["description"] == "orphan"]
            job_id = jobs[0]["job_id"]
            with anyio.fail_after(300):
                while (job := (await client.call_tool("get_job_status", {"job_id": job_id})).structured_content["job"])[
                    "status"
                ] == "running":
                    await anyio.sleep(0.5)
            assert job["status"] == "completed", job
            assert await counts(client, collection) == (1, job["result"]["chunks"])
        finally:
            await anyio.to_thread.run_sync(victim.start)
            await anyio.to_thread.run_sync(victim.wait_ready)


def test_every_replica_s_console_shows_the_same_jobs_and_documents(queued: Balanced, collection: str) -> None:
    """Issue 23, several replicas: a file uploaded in one replica's console runs on the queue's worker; the other
    replica follows its job to the end, and both list it among the ended jobs and show its document."""
    a, b = (replica.url for replica in queued.replicas)
    text = "The lock keeper opens the upper gates at dawn and logs each barge's tonnage in the canal book. " * 3
    with httpx.Client(headers=queued.headers, timeout=60) as http:  # a bearer header: no cookie, so no CSRF token
        made = http.post(f"{a}/ingest", data={"collection": collection},
                         files={"file": ("canal.md", text.encode(), "text/markdown")})  # fmt: skip
        assert made.status_code == 303, made.text
        job_id = made.headers["location"].rsplit("/", 1)[-1]
        deadline = time.monotonic() + 120
        while 'data-status="running"' in (panel := http.get(f"{b}/jobs/{job_id}/panel")).text:
            assert time.monotonic() < deadline, panel.text
            time.sleep(0.3)
        assert 'data-status="completed"' in panel.text and 'id="job-document-link"' in panel.text, panel.text
        for replica in (a, b):
            jobs = http.get(f"{replica}/jobs")
            assert f'data-job-id="{job_id}" data-status="completed"' in jobs.text, (replica, jobs.text[-2000:])
            listing = http.get(f"{replica}/collections/{collection}")
            assert listing.status_code == 200 and ">canal<" in listing.text, (replica, listing.text[-2000:])
