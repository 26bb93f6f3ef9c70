"""Broker faults, as an operator meets them, through real MCP clients over streamable HTTP (issue 20).

Topology: the three services as processes (stack_session), one Redis with its append-only file (as compose
and OpenShift run it), two MCP replicas and one queue worker as processes. Each test injects a real fault
(kill -9 and restart, SIGSTOP, a full broker, a worker SIGKILL or SIGTERM at a chosen step) and checks what
an agent and an operator see: which processes survive, what the tools answer and how fast, what is stored.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import time
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import pytest
import redis
from journeys import long_text
from mcp import Client
from redis_server import SKIP_REASON, RedisServer, redis_binary
from service_stack import ServiceProcess, ServiceStack, call, collection_state, stage_count
from topology import Topology, connected, running

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]
LEASE_S = 6
PAYLOAD_MB = 1


@pytest.fixture(scope="module")
def topology(stack_session: ServiceStack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Topology]:
    if redis_binary() is None:
        pytest.skip(SKIP_REASON)
    with RedisServer(tmp_path_factory.mktemp("aof-broker"), persist=True) as broker:
        env = {"INGESTION_MCP_SYNC_WAIT_S": "3",
               "INGESTION_MCP_JOB_LEASE_S": str(LEASE_S), "INGESTION_MCP_BROKER_TIMEOUT_S": "1",
               "INGESTION_MCP_JOB_GRACE_S": "20", "INGESTION_MCP_MAX_PAYLOAD_MB": str(PAYLOAD_MB),
               "INGESTION_MCP_LOG_LEVEL": "INFO"}  # fmt: skip
        with running(stack_session, broker, "faults", env) as topology:
            yield topology


@pytest.fixture
def healthy(topology: Topology) -> Topology:
    """Every test starts with the broker up and every process running (a failed test may have left a fault)."""
    if topology.broker.process is not None and topology.broker.process.poll() is None:
        topology.broker.thaw()
        topology.redis().config_set("maxmemory", 0)
    else:
        topology.broker.start()
    for replica in (topology.a, topology.b):
        if replica.process is None or replica.process.poll() is not None:
            replica.start()
            replica.wait_ready()
    if topology.worker.process is None or topology.worker.process.poll() is not None:
        topology.start_worker()
    return topology


async def ended(client: Client, job_id: str, timeout: float = 300) -> dict[str, Any]:
    with anyio.fail_after(timeout):
        while True:
            job = (await call(client, "get_job_status", job_id=job_id))["job"]
            if job["status"] != "running":
                return job
            await anyio.sleep(0.3)


def readyz(replica: ServiceProcess) -> tuple[int, dict[str, Any]]:
    answer = httpx.get(f"{replica.url}/readyz", timeout=10)
    return answer.status_code, answer.json()


async def test_replicas_and_the_worker_ride_out_a_broker_restart(healthy: Topology, collection: str) -> None:
    """kill -9 of Redis: both replicas and the worker stay up; search answers meanwhile, job tools say
    SERVICE_UNAVAILABLE within seconds, /readyz reports the broker and stays 200; after the restart the same
    processes queue and run jobs again."""
    topology = healthy
    async with connected(topology, topology.a) as via_a:
        first = await call(
            via_a, "ingest_text", text=long_text(3, "before-restart"), name="before", collection=collection
        )
        assert first["success"], first
        topology.broker.kill()
        await anyio.sleep(2)
        assert all(topology.alive().values()), {p.name: p.log_tail() for p in topology.processes}
        for replica in (topology.a, topology.b):
            status, body = readyz(replica)
            assert status == 200 and body["status"] == "degraded" and body["checks"]["broker"] != "ok", body
        started = time.monotonic()
        status_call = await call(via_a, "get_job_status", job_id="job_0123456789abcdef")
        assert status_call["is_error"] and "broker is unreachable" in status_call["error"], status_call
        assert "INGESTION_MCP_BROKER_URL" in status_call["suggestion"], status_call
        assert time.monotonic() - started < 8, "a job tool answers within a bounded time while Redis is away"
        found = await call(via_a, "search", query="before-restart", collection=collection)
        assert found["success"] and found["results"], "search needs no broker"
    async with connected(topology, topology.b) as via_b:
        found = await call(via_b, "search", query="before-restart", collection=collection)
        assert found["success"] and found["results"]
        topology.broker.start()  # same port, same append-only file
        await anyio.sleep(1)
        second = await call(
            via_b, "ingest_text", text=long_text(3, "after-restart"), name="after", collection=collection
        )
        if second.get("job_id"):
            second = (await ended(via_b, second["job_id"]))["result"]
        assert second.get("status") == "indexed", second
    assert all(topology.alive().values())
    assert readyz(topology.a)[1]["status"] == "ok"


async def test_a_frozen_broker_never_runs_a_job_twice_at_once(healthy: Topology, collection: str) -> None:
    """SIGSTOP past the lease while a job embeds: the worker stops the run before its lease can lapse, and the
    job runs again only after that; it ends completed with one copy stored."""
    topology = healthy
    async with connected(topology, topology.a) as via_a:
        answer = await call(via_a, "ingest_text", text=long_text(400, "frozen"), name="frozen", collection=collection)
        job_id = answer["job_id"]
        topology.wait_step(job_id, {"embedding"})
        topology.broker.freeze()
        await anyio.sleep(LEASE_S + 4)
        topology.broker.thaw()
        final = await ended(via_a, job_id)
    assert final["status"] == "completed" and final["result"]["status"] == "indexed", final
    runs = worker_runs(topology.worker, job_id)
    assert len(runs) >= 2, runs
    assert all(later[0] >= earlier[1] for earlier, later in itertools.pairwise(runs)), runs
    stored = collection_state(topology.stack, collection)
    assert stored["documents"] == 1 and stored["unreadable_chunks"] == {}, stored


def worker_runs(worker: ServiceProcess, job_id: str) -> list[tuple[str, str]]:
    """(start, end) of each run of the job, from arq's own log lines (a start "→", an end "←", "↻", "!" or "⊘");
    a run still going has end "~"."""
    ref = f"{job_id}:ingestion_job"
    runs: list[tuple[str, str]] = []
    started: str | None = None
    for line in worker.log_text().splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        message = entry.get("msg", "")
        if ref not in message:
            continue
        if f"→ {ref}" in message:
            if started is not None:  # a second start before an end: that run is still going
                runs.append((started, "~"))
            started = entry["ts"]
        elif started is not None and any(f"{mark} {ref}" in message for mark in "←↻!⊘"):
            runs.append((started, entry["ts"]))
            started = None
    return sorted(runs + ([(started, "~")] if started else []))


async def test_the_last_submitted_write_wins(healthy: Topology, collection: str) -> None:
    """Two ingests of one name: the first is long and is still embedding when the second, short one is submitted
    and stored, so the first one's write starts last. The index keeps the second, the one submitted last, and
    the first answers skipped (a newer write was committed)."""
    topology = healthy
    async with connected(topology, topology.a) as via_a, connected(topology, topology.b) as via_b:
        older = await call(via_a, "ingest_text", text=long_text(900, "older-submission"), name="same-name",
                           collection=collection)  # fmt: skip
        topology.wait_step(older["job_id"], {"embedding"})
        newer = await call(via_b, "ingest_text", text=long_text(4, "newer-submission"), name="same-name",
                           collection=collection)  # fmt: skip
        newer_result = (await ended(via_b, newer["job_id"]))["result"] if newer.get("job_id") else newer
        older_step = topology.record(older["job_id"])["current_step"]
        assert older_step in ("embedding", "storing"), f"the older write must commit after the newer ({older_step})"
        older_result = (await ended(via_a, older["job_id"]))["result"]
        listing = await call(via_a, "list_documents", collection=collection)
        assert len(listing["documents"]) == 1, listing
        content = await call(via_a, "get_document", doc_id=listing["documents"][0]["doc_id"], collection=collection)
    assert "newer-submission" in json.dumps(content) and "older-submission" not in json.dumps(content)
    assert newer_result["status"] == "indexed" and older_result["status"] == "skipped", (newer_result, older_result)


async def test_a_retry_reports_what_its_first_try_committed(healthy: Topology, collection: str) -> None:
    """The worker is frozen once its write has reached the gateway, the gateway commits, then the worker is killed
    before it could record the end: the retry finds that commit and answers indexed, the truth, not "skipped:
    unchanged since it was ingested", and nothing is written twice."""
    topology = healthy
    gateway, headers = topology.stack.gateway, topology.stack.headers()
    async with connected(topology, topology.a) as via_a:
        for attempt in range(3):
            text = long_text(900, f"killed-storing-{attempt}")
            answer = await call(via_a, "ingest_text", text=text, name=f"ks-{attempt}", collection=collection)
            job_id = answer["job_id"]
            committed = stage_count(gateway, "storing", headers)
            topology.wait_step(job_id, {"storing"})
            await anyio.sleep(1.0)  # the write is on its way (its rows take seconds to store)
            worker = topology.worker.process
            assert worker is not None
            os.killpg(worker.pid, signal.SIGSTOP)
            landed = await until(lambda: stage_count(gateway, "storing", headers) > committed, 90)  # noqa: B023 - awaited here
            record = topology.record(job_id)
            topology.worker.stop(signal.SIGKILL)
            topology.start_worker()
            final = await ended(via_a, job_id)
            if landed and record["status"] == "running":  # caught between its commit and its record
                assert final["status"] == "completed" and final["result"]["status"] == "indexed", final
                assert topology.record(job_id)["attempt"] == 2
                stored = collection_state(topology.stack, collection)
                assert stored["unreadable_chunks"] == {} and list(stored["sources"]).count(f"ks-{attempt}") == 1
                return
    pytest.fail("the worker was never caught between its commit and its record")


async def until(predicate: Any, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        await anyio.sleep(0.1)
    return False


async def test_a_rollout_lets_a_storing_job_finish(healthy: Topology, collection: str) -> None:
    """SIGTERM while the job stores: the commit completes, the job says completed (not "nothing was written"),
    and the worker exits within its grace period."""
    topology = healthy
    async with connected(topology, topology.a) as via_a:
        answer = await call(via_a, "ingest_text", text=long_text(700, "sigterm-storing"), name="ss",
                            collection=collection)  # fmt: skip
        topology.wait_step(answer["job_id"], {"storing"})
        topology.worker.stop(signal.SIGTERM, timeout_s=40)
        record = topology.record(answer["job_id"])
        topology.start_worker()
        final = await ended(via_a, answer["job_id"])
    assert record["status"] == "completed", record
    assert final["status"] == "completed" and final["result"]["status"] == "indexed", final
    assert collection_state(topology.stack, collection)["documents"] == 1


async def test_a_full_broker_refuses_new_jobs_and_running_ones_finish(healthy: Topology, collection: str) -> None:
    topology = healthy
    client = topology.redis()
    async with connected(topology, topology.a) as via_a:
        running = await call(via_a, "ingest_text", text=long_text(200, "running-when-full"), name="full-running",
                             collection=collection)  # fmt: skip
        topology.wait_step(running["job_id"], {"embedding"})
        used = int(client.info("memory")["used_memory"])
        client.config_set("maxmemory", used + 2 * 2**20)
        junk = 0
        try:
            while True:
                client.set(f"junk:{junk}", b"x" * 65536)
                junk += 1
        except redis.exceptions.OutOfMemoryError:
            pass
        refused = await call(via_a, "ingest_text", text=long_text(2, "refused"), name="refused", collection=collection)
        assert refused["is_error"] and "The job queue is full" in refused["error"], refused
        assert "maxmemory" in refused["suggestion"], refused
        final = await ended(via_a, running["job_id"])
        assert final["status"] == "completed", final
        client.delete(*(f"junk:{n}" for n in range(junk)))
        client.config_set("maxmemory", 0)
    assert all(topology.alive().values())


async def test_a_broker_fault_during_the_wait_is_not_a_cancel(healthy: Topology, collection: str) -> None:
    """Redis goes away while a tool waits for its job: the call still answers with the job id (not "the client
    cancelled the request"), and once Redis is back the job goes on to the end."""
    topology = healthy
    async with connected(topology, topology.b) as via_b:
        with anyio.fail_after(60):
            async with anyio.create_task_group() as tasks:
                answer: dict[str, Any] = {}

                async def ingest() -> None:
                    answer.update(await call(via_b, "ingest_text", text=long_text(300, "wait-fault"), name="wf",
                                             collection=collection))  # fmt: skip

                tasks.start_soon(ingest)
                await anyio.sleep(1.0)
                topology.broker.kill()
                await anyio.sleep(4)
                topology.broker.start()  # same port, its append-only file
        assert answer.get("job_id") and not answer["is_error"], answer
        final = await ended(via_b, answer["job_id"])
    assert final["status"] == "completed", final


async def test_one_payload_cap_named_in_every_refusal(healthy: Topology, collection: str) -> None:
    """One cap (INGESTION_MCP_MAX_PAYLOAD_MB): a text over it gets the tool's own answer naming the setting; a
    body far past it is refused by the HTTP layer, which names the same setting; nothing is queued or stored."""
    topology = healthy
    text = "word " * (int(1.5 * PAYLOAD_MB * 2**20) // 5)
    async with connected(topology, topology.a) as via_a:
        answer = await call(via_a, "ingest_text", text=text, name="big", collection=collection)
    assert answer["is_error"] and "INGESTION_MCP_MAX_PAYLOAD_MB" in answer["error"], answer
    assert "ingest_document" in answer["suggestion"], answer
    huge = "word " * (3 * PAYLOAD_MB * 2**20 // 5)
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": {"name": "ingest_text", "arguments": {"text": huge}}})  # fmt: skip
    direct = httpx.post(f"{topology.a.url}/mcp", content=body, timeout=30,
                        headers={**topology.stack.headers(), "content-type": "application/json",
                                 "accept": "application/json, text/event-stream"})  # fmt: skip
    assert direct.status_code == 413 and "INGESTION_MCP_MAX_PAYLOAD_MB" in direct.text, direct.text[:300]
    assert collection_state(topology.stack, collection)["documents"] == 0
    assert topology.redis().scard("ingestion-mcp:jobs:active") == 0


async def test_the_queue_reports_its_depth_and_queues_json(healthy: Topology, collection: str) -> None:
    topology = healthy
    depth = httpx.get(f"{topology.b.url}/queue", headers=topology.stack.headers(), timeout=10)
    assert depth.status_code == 200 and set(depth.json()) == {"queued", "running", "depth"}, depth.text
    assert httpx.get(f"{topology.b.url}/queue", timeout=10).status_code == 401, "the token guards it"
    client = topology.redis()
    worker = topology.worker.process
    assert worker is not None
    async with connected(topology, topology.a) as via_a:
        # The worker paused: the job stays on the queue past the call's wait (on a quiet machine it once finished
        # within it, and the answer had no job to look at).
        os.killpg(worker.pid, signal.SIGSTOP)
        try:
            text = long_text(100, "json-payload")
            answer = await call(via_a, "ingest_text", text=text, name="jp", collection=collection)
            payload = client.get(f"arq:job:{answer['job_id']}")
            assert payload is not None, answer
            assert json.loads(payload)["a"][0] == answer["job_id"], "its payload is JSON, never a pickle"
        finally:
            os.killpg(worker.pid, signal.SIGCONT)
        assert (await ended(via_a, answer["job_id"]))["status"] == "completed"
