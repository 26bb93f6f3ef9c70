"""Jobs on the real queue: two MCP replicas and a worker process on one Redis, as a deployment runs them.

Every call goes through a real MCP client over streamable HTTP. A job accepted by one replica runs on
the worker; the other replica reports its progress and result, cancels it, and still answers for it
when the accepting replica is killed. A worker killed mid-job (SIGKILL) loses its lease and the job is
run again; afterwards the index holds exactly one copy of the document.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
import redis
from journeys import long_text
from mcp import Client
from redis_server import SKIP_REASON, RedisServer, redis_binary
from service_stack import ServiceProcess, ServiceStack, call, collection_state
from topology import Topology, connected, running

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    if redis_binary() is None:
        pytest.skip(SKIP_REASON)
    with RedisServer(tmp_path_factory.mktemp("broker")) as server:
        yield server


@pytest.fixture(scope="module")
def topology(stack_session: ServiceStack, broker: RedisServer) -> Iterator[Topology]:
    env = {"INGESTION_MCP_SYNC_WAIT_S": "2", "INGESTION_MCP_JOB_LEASE_S": "3", "INGESTION_MCP_LOG_LEVEL": "INFO",
           "INGESTION_MCP_WATCH_LEASE_S": "3", "INGESTION_MCP_WATCH_REFRESH_S": "1"}  # fmt: skip
    with running(stack_session, broker, "queue", env) as topology:
        yield topology


async def start_long_ingest(client: Client, collection: str, marker: str, paragraphs: int = 300) -> str:
    started = await call(client, "ingest_text", text=long_text(paragraphs, marker), name=marker, collection=collection)
    assert started.get("job_id"), f"the ingest should outlive the 2 s wait: {started}"
    return started["job_id"]


async def follow(client: Client, job_id: str, until: Any = None, timeout: float = 300) -> list[dict[str, Any]]:
    """get_job_status answers until the job ends (or ``until(job)`` holds): every answer's job."""
    seen: list[dict[str, Any]] = []
    with anyio.fail_after(timeout):
        while True:
            job = (await call(client, "get_job_status", job_id=job_id))["job"]
            seen.append(job)
            if job["status"] != "running" or (until is not None and until(job)):
                return seen
            await anyio.sleep(0.2)


async def test_a_long_ingest_runs_on_the_worker_and_another_replica_reports_it(
    topology: Topology, collection: str
) -> None:
    async with connected(topology, topology.a) as via_a:
        job_id = await start_long_ingest(via_a, collection, "worker-run")
    async with connected(topology, topology.b) as via_b:
        active = await call(via_b, "list_active_jobs")
        assert job_id in [job["job_id"] for job in active["jobs"]], active
        seen = await follow(via_b, job_id)
    final = seen[-1]
    assert final["status"] == "completed", final
    progress = [job["progress"] for job in seen]
    assert progress == sorted(progress) and len(set(progress)) >= 3, progress
    assert {"embedding", "storing"} <= set(final["step_ms"]), final
    stored = collection_state(topology.stack, collection)
    assert stored["documents"] == 1 and stored["chunk_rows"] == final["result"]["chunks"] > 0, stored


async def test_a_cancel_through_the_other_replica_stops_the_ingest(topology: Topology, collection: str) -> None:
    async with connected(topology, topology.a) as via_a:
        job_id = await start_long_ingest(via_a, collection, "cancelled", paragraphs=660)
    async with connected(topology, topology.b) as via_b:
        await follow(via_b, job_id, until=lambda job: job["current_step"] == "embedding")
        answer = await call(via_b, "cancel_job", job_id=job_id)
        assert answer["success"], answer
        final = (await follow(via_b, job_id, timeout=60))[-1]
    assert final["status"] == "cancelled", final
    assert collection_state(topology.stack, collection)["chunk_rows"] == 0, "nothing of it is stored"
    async with connected(topology, topology.a) as via_a:
        assert (await call(via_a, "get_job_status", job_id=job_id))["job"]["status"] == "cancelled"


async def test_a_worker_killed_mid_job_leads_to_a_retry_and_one_exact_copy(topology: Topology, collection: str) -> None:
    async with connected(topology, topology.a) as via_a:
        job_id = await start_long_ingest(via_a, collection, "killed")
        await follow(via_a, job_id, until=lambda job: job["current_step"] == "embedding")
        topology.worker.stop(signal.SIGKILL)
        assert topology.record(job_id)["status"] == "running"
        topology.start_worker()
        final = (await follow(via_a, job_id))[-1]
    assert final["status"] == "completed", final
    assert topology.record(job_id)["attempt"] == 2, "the job ran again on the new worker"
    stored = collection_state(topology.stack, collection)
    assert stored["documents"] == 1 and stored["chunk_rows"] == final["result"]["chunks"] > 0, stored


async def test_a_job_outlives_the_replica_that_accepted_it(topology: Topology, collection: str) -> None:
    async with connected(topology, topology.a) as via_a:
        job_id = await start_long_ingest(via_a, collection, "orphan")
    topology.a.stop(signal.SIGKILL)
    async with connected(topology, topology.b) as via_b:
        final = (await follow(via_b, job_id))[-1]
    assert final["status"] == "completed", final
    stored = collection_state(topology.stack, collection)
    assert stored["documents"] == 1 and stored["chunk_rows"] == final["result"]["chunks"] > 0, stored


LEADS = "this process now watches the synced folders"


def watching_replica(topology: Topology, broker: redis.Redis, timeout: float = 30) -> ServiceProcess:
    """The replica that holds the watching lease: its pid is in the lease's value (host:pid:unique)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        held = broker.get("ingestion-mcp:watch-leader")
        for replica in (topology.a, topology.b):
            alive = replica.process is not None and replica.process.poll() is None
            if held and alive and held.decode().split(":")[1] == str(replica.process.pid):
                return replica
        time.sleep(0.2)
    raise AssertionError(f"no live replica holds the watching lease: {broker.get('ingestion-mcp:watch-leader')}")


async def searchable(client: Client, collection: str, query: str, word: str, timeout: float = 90) -> float:
    """Seconds until a search finds ``word`` in the collection."""
    began = time.monotonic()
    with anyio.fail_after(timeout):
        while True:
            found = await call(client, "search", query=query, collection=collection)
            if any(word in hit["text"] for hit in found.get("results") or []):
                return time.monotonic() - began
            await anyio.sleep(0.25)


async def test_a_watched_folder_is_synced_by_the_worker_and_one_replica_watches(
    topology: Topology, collection: str
) -> None:
    """sync_folder(watch=true) on the queue: the sync runs on the worker, the watch is a Redis record, exactly
    one replica follows the folder, and when it is killed (SIGKILL) the other takes over within the lease."""
    folder = topology.stack.workdir / f"watched-{collection}"
    folder.mkdir()
    (folder / "heron.md").write_text("# Heron\n\nA grey heron stands motionless in the shallows of the mill pond.\n")
    (folder / "otter.md").write_text("# Otter\n\nOtters returned to the river once the weir got its fish pass.\n")
    async with connected(topology, topology.a) as via_a:
        started = await call(via_a, "sync_folder", folder=str(folder), collection=collection, watch=True)
        assert started["watched"] is True, started
        if started.get("job_id"):
            final = (await follow(via_a, started["job_id"]))[-1]
            assert final["status"] == "completed" and final["result"]["counts"]["added"] == 2, final
    broker = redis.Redis.from_url(topology.broker.url)
    assert broker.smembers("ingestion-mcp:folders"), "the watch is a record in the broker, not a replica's memory"
    leader = watching_replica(topology, broker)
    other = topology.b if leader is topology.a else topology.a
    since = len(other.log_text())  # (earlier tests restarted replicas: only what the other logs from now counts)

    (folder / "heron.md").write_text("# Heron\n\nThe heron swallowed a whole eel beside the sluice gate.\n")
    async with connected(topology, other) as client:
        seconds = await searchable(client, collection, "heron swallowed an eel", "eel")
        print(f"watched edit searchable after {seconds:.1f} s (replica watching, worker syncing)")
    assert LEADS not in other.log_text()[since:], "exactly one replica watches"
    leader.stop(signal.SIGKILL)
    assert watching_replica(topology, broker) is other, "the other replica did not take over the watching"
    (folder / "otter.md").unlink()
    (folder / "kingfisher.md").write_text("# Kingfisher\n\nA kingfisher dives from the alder branch for minnows.\n")
    async with connected(topology, other) as client:
        await searchable(client, collection, "kingfisher dives for minnows", "kingfisher")
        with anyio.fail_after(60):
            while collection_state(topology.stack, collection)["documents"] != 2:
                await anyio.sleep(0.25)
        with anyio.fail_after(60):  # changes seen during a sync are counted, then synced: the count returns to 0
            while (shown := await call(client, "get_collections", collection=collection))["synced_folders"][0][
                "changed_since"
            ]:
                await anyio.sleep(0.25)
    state = collection_state(topology.stack, collection)
    assert sorted(Path(s).name for s in state["sources"]) == ["heron.md", "kingfisher.md"], state
    assert not state["unreadable_chunks"], state
    (synced,) = shown["synced_folders"]
    assert synced["watched"] and synced["last_synced"] and synced["last_result"], synced
    async with connected(topology, other) as client:
        await call(client, "sync_folder", folder=str(folder), collection=collection, watch=False)


async def test_a_sync_whose_worker_is_killed_goes_on_without_losing_or_doubling(
    topology: Topology, collection: str
) -> None:
    """Issue 37: a sync's worker killed with SIGKILL after its first batch is stored. The job is run again by
    another worker; what the first try wrote is found in step (written once), the rest is added; the folder's
    record says what the sync did. Counted: files acknowledged in the answer, stored, lost, doubled."""
    folder = topology.stack.workdir / f"killed-sync-{collection}"
    folder.mkdir()
    notes = 48
    for number in range(notes):
        (folder / f"note{number:02}.md").write_text(long_text(5, f"killed sync note {number}"))
    async with connected(topology, topology.a) as via_a:
        started = await call(via_a, "sync_folder", folder=str(folder), collection=collection)
        assert started.get("job_id"), f"the sync should outlive the 2 s wait: {started}"
        job_id = started["job_id"]
        # Past the first batch (16 files stored), before the end.
        seen = await follow(via_a, job_id, until=lambda job: 40 <= job["progress"] < 90)
        assert seen[-1]["status"] == "running", seen[-1]
        topology.worker.stop(signal.SIGKILL)
        stored_when_killed = collection_state(topology.stack, collection)["documents"]
        topology.start_worker()
        final = (await follow(via_a, job_id))[-1]
        shown = await call(via_a, "get_collections", collection=collection)
    assert final["status"] == "completed" and topology.record(job_id)["attempt"] == 2, final
    counts = final["result"]["counts"]
    state = collection_state(topology.stack, collection)
    acknowledged = counts["added"] + counts["unchanged"]
    lost = notes - len(state["sources"])
    doubled = state["documents"] - len(state["sources"])
    print(f"\nkilled mid-sync: {stored_when_killed} stored when killed; the retry: {counts}; acknowledged "
          f"{acknowledged}, stored {state['documents']}, lost {lost}, doubled {doubled}")  # fmt: skip
    assert 16 <= stored_when_killed < notes, stored_when_killed
    assert acknowledged == notes and counts["failed"] == 0 and counts["unchanged"] >= stored_when_killed, counts
    assert state["documents"] == notes and lost == 0 and doubled == 0, state
    assert state["chunk_rows"] == sum(state["sources"].values()) and not state["unreadable_chunks"], state
    (synced,) = shown["synced_folders"]
    assert synced["last_result"] == counts and "error" not in synced, synced
