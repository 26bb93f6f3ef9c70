"""The queue under broker faults, on a real Redis of its own: restarted, frozen, full, losing jobs.

Workers run in this process (ingestion_mcp.cli.worker_command's arq worker); the end-to-end versions with worker and
replica processes behind a balancer are tests/e2e/test_broker_faults.py and the fault suite (bench.chaos).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import math
import pickle
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from arq.constants import job_key_prefix
from ingestion_mcp.jobs import Job
from ingestion_mcp.jobs.queue import FUNCTION, QUEUE, RedisJobStore, job_serializer, record_key
from ingestion_mcp.jobs.queue_worker import sweep_lost
from ingestion_mcp.settings import McpSettings
from redis.exceptions import OutOfMemoryError

from scripts.redis_server import SKIP_REASON, RedisServer, redis_binary

from .conftest import RUNS
from .test_worker import STAGES, running_worker, until, within


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[RedisServer]:
    """A broker this test may kill, freeze or fill: append-only file, as a deployment runs it."""
    if redis_binary() is None:
        pytest.skip(SKIP_REASON)
    with RedisServer(tmp_path / "redis", persist=True) as server:
        yield server


@pytest.fixture
def settings(own_redis: RedisServer, tmp_path: Path) -> McpSettings:
    return McpSettings(broker_url=own_redis.url, data_dir=tmp_path, job_lease_s=3, broker_timeout_s=0.5,
                       job_retention_s=120)  # fmt: skip


@pytest.fixture
async def store(settings: McpSettings) -> AsyncIterator[RedisJobStore]:
    replica = RedisJobStore.from_settings(settings)
    yield replica
    await replica.aclose()


def overlapping(tag: str) -> list[tuple[float, float]]:
    """Pairs of runs of one job that were alive at the same time."""
    runs = sorted((start, end) for start, end, _ in RUNS.get(tag, []))
    return [(a, b) for (a, a_end), (b, _) in itertools.pairwise(runs) if b < a_end]


async def test_a_worker_rides_out_a_broker_restart(
    own_redis: RedisServer, settings: McpSettings, store: RedisJobStore
) -> None:
    async with running_worker(settings) as worker:
        first = await store.submit("test_staged", {"stages": ["reading"], "stage_s": 0.1, "tag": "r1"}, "before")
        assert (await store.wait(first.id, 20)).status == "completed"
        own_redis.kill()
        await asyncio.sleep(2)  # the worker polls a dead broker meanwhile
        assert worker.main_task is not None and not worker.main_task.done(), "the worker is still running"
        own_redis.start()  # same port, same append-only file
        second = await store.submit("test_staged", {"stages": ["reading"], "stage_s": 0.1, "tag": "r2"}, "after")
        done = await store.wait(second.id, 30)
        assert done.status == "completed", done.error
        assert worker.broker_errors == 0, "the worker's polls succeed again"
    assert (await store.get(first.id)) is not None, "records written before the restart are still there (AOF)"


async def test_a_frozen_broker_never_runs_a_job_twice_at_once(
    own_redis: RedisServer, settings: McpSettings, store: RedisJobStore
) -> None:
    """Frozen longer than the lease: the running job stops itself before its lease lapses, although every broker
    call meanwhile hangs for the broker's timeout; another start runs it after the broker is back, never while
    the first run is alive."""
    slow_calls = settings.model_copy(update={"job_lease_s": 6, "broker_timeout_s": 2})
    params = {"stages": STAGES * 3, "stage_s": 0.5, "tag": "frozen"}
    async with within(240), running_worker(slow_calls), running_worker(slow_calls):
        job = await store.submit("test_staged", params, "frozen broker")
        await until(store, job.id, "converting")
        own_redis.freeze()
        await asyncio.sleep(9)  # > lease (6 s)
        own_redis.thaw()
        done = await store.wait(job.id, 90)
    assert done.status == "completed", done.error
    assert done.attempt >= 2 and len(RUNS["frozen"]) >= 2, "the job was run again after the freeze"
    assert overlapping("frozen") == [], RUNS["frozen"]


def timed_starts(worker: Any, starts: list[list[float]]) -> None:
    """Record when each start of the worker's one function began and returned (the whole start, as arq sees it:
    the run, and the writing of its end)."""
    function = worker.functions[FUNCTION]
    inner = function.coroutine

    async def timed(ctx: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        span = [time.monotonic(), math.inf]
        starts.append(span)
        try:
            return await inner(ctx, *args, **kwargs)
        finally:
            span[1] = time.monotonic()

    function.coroutine = timed


async def test_a_run_that_cannot_record_its_end_is_over_before_its_lease(
    own_redis: RedisServer, settings: McpSettings, store: RedisJobStore
) -> None:
    """The job's work ends just as the broker freezes: its end cannot be written. The start gives up writing it
    when its lease ends (the next run finds the job not ended and runs it), never while another start runs it."""
    slow_calls = settings.model_copy(update={"job_lease_s": 6, "broker_timeout_s": 2})
    params = {"stages": ["reading", "converting"], "stage_s": 0.5, "after_s": 0.3, "tag": "tail"}
    starts: list[list[float]] = []
    async with within(240), running_worker(slow_calls) as one, running_worker(slow_calls) as other:
        timed_starts(one, starts)
        timed_starts(other, starts)
        job = await store.submit("test_staged", params, "frozen at the end")
        await until(store, job.id, "converting")
        own_redis.freeze()
        frozen_at = time.monotonic()
        await asyncio.sleep(10)  # > lease (6 s): the run ended meanwhile, its end unwritten
        own_redis.thaw()
        done = await store.wait(job.id, 60)
    spans = sorted(starts)
    assert spans[0][1] < frozen_at + 6, "the first start ended before its lease could lapse"
    assert done.status == "completed", done.error
    assert len(RUNS["tail"]) >= 2, "the job was run again after the freeze"
    assert all(b[0] >= a[1] for a, b in itertools.pairwise(spans)), spans


async def test_a_full_broker_refuses_new_jobs_while_running_ones_finish(
    own_redis: RedisServer, settings: McpSettings, store: RedisJobStore
) -> None:
    async with running_worker(settings):
        job = await store.submit("test_staged", {"stages": STAGES, "stage_s": 0.6, "tag": "full"}, "running")
        await until(store, job.id, "reading")
        await store.redis.config_set("maxmemory", "4mb")
        filler = 0
        with pytest.raises(OutOfMemoryError):  # fill it until Redis refuses writes
            while True:
                await store.redis.set(f"junk:{filler}", b"x" * 65536)
                filler += 1
        refused = None
        try:
            await store.submit("test_staged", {"stages": ["reading"], "stage_s": 0.1, "tag": "late"}, "refused")
        except Exception as exc:  # noqa: BLE001 - asserted below
            refused = exc
        assert getattr(refused, "code", None) == "QUEUE_FULL", refused
        assert "memory limit" in str(refused) and "go on" in str(refused)
        done = await store.wait(job.id, 30)
        assert done.status == "completed", "the running job still finished, its progress and result written"
        assert await store.redis.exists(job_key_prefix + job.id) == 0, "its payload left the full broker"
        await store.redis.delete(*(f"junk:{n}" for n in range(filler)))
        again = await store.submit("test_staged", {"stages": ["reading"], "stage_s": 0.1, "tag": "later"}, "ok")
        assert (await store.wait(again.id, 20)).status == "completed"


async def test_results_keep_no_input_text(settings: McpSettings, store: RedisJobStore) -> None:
    marker = "zebra-quartz-marker"
    async with running_worker(settings):
        params = {"stages": ["reading"], "stage_s": 0.1, "tag": "no-text", "text": marker * 100}
        job = await store.submit("test_staged", params, "text")
        assert (await store.wait(job.id, 20)).status == "completed"
        await asyncio.sleep(0.3)  # arq's clean-up after the job
    holding = [key async for key in store.redis.scan_iter() if marker.encode() in (await _dump(store, key))]
    assert holding == [], "nothing in Redis keeps the job's input after it ended"


async def _dump(store: RedisJobStore, key: bytes) -> bytes:
    kind = (await store.redis.type(key)).decode()
    if kind == "string":
        return await store.redis.get(key) or b""
    if kind == "set":
        return b" ".join(await store.redis.smembers(key))  # type: ignore[misc]  # redis-py types the asyncio client's set calls as sync-or-awaitable
    if kind == "zset":
        return b" ".join(await store.redis.zrange(key, 0, -1))
    return b""


async def test_a_job_the_queue_gives_up_ends_failed_with_the_reason(
    settings: McpSettings, store: RedisJobStore
) -> None:
    job = await store.submit("test_staged", {"stages": ["reading"], "stage_s": 0.1, "tag": "expired"}, "expires")
    await store.redis.delete(job_key_prefix + job.id)  # what arq's expiry of a job waiting too long does
    async with running_worker(settings):
        done = await store.wait(job.id, 20)
    assert done.status == "failed" and done.failure is not None and done.failure.code == "JOB_EXPIRED", done.error
    assert "never ran" in (done.error or "")


async def test_a_job_the_broker_lost_is_ended_by_the_sweep(store: RedisJobStore) -> None:
    job = await store.submit("test_staged", {"stages": ["reading"], "stage_s": 0.1, "tag": "lost"}, "lost")
    await store.redis.zrem(QUEUE, job.id)
    await store.redis.delete(job_key_prefix + job.id)
    assert await sweep_lost(store) == 1
    ended = await store.get(job.id)
    assert ended is not None and ended.failure is not None and ended.failure.code == "JOB_LOST"
    assert [j.id for j in await store.active()] == []


async def test_a_pickled_payload_never_runs(settings: McpSettings, store: RedisJobStore, tmp_path: Path) -> None:
    """Whoever can write to Redis cannot make a worker run code: payloads are JSON, a pickle is refused."""
    proof = tmp_path / "pwned"

    class Exploit:
        def __reduce__(self) -> tuple[object, tuple[str]]:
            return (__import__("os").system, (f"touch {proof}",))

    job = Job(id="job_pickled0000000", type="test_staged", description="hostile")
    await store.save(job)
    data = {"t": 0, "f": "ingestion_job", "a": [job.id, "test_staged", Exploit(), None], "k": {}, "et": 0}
    await store.redis.set(job_key_prefix + job.id, pickle.dumps(data))
    await store.redis.zadd(QUEUE, {job.id: 1})
    async with running_worker(settings):
        done = await store.wait(job.id, 20)
    assert not proof.exists()
    assert done.status == "failed" and done.failure is not None and done.failure.code == "JOB_FAILED"
    assert json.loads(job_serializer({"a": 1})) == {"a": 1}


async def test_a_stop_while_storing_lets_the_job_complete(settings: McpSettings, store: RedisJobStore) -> None:
    """A rollout (the worker cancels its jobs) meets the job storing: the commit completes and the job says so."""
    params = {"stages": ["reading", "storing"], "stage_s": 1.5, "tag": "sigterm-store"}
    async with running_worker(settings):
        job = await store.submit("test_staged", params, "stop me while storing")
        await until(store, job.id, "storing")
    done = await store.get(job.id)
    assert done is not None and done.status == "completed", (done.status, done.error) if done else None
    assert RUNS["sigterm-store"][0][2] == ["reading", "storing"]
    assert await store.redis.exists(record_key(job.id))


async def test_the_liveness_check_passes_while_the_broker_is_away(
    own_redis: RedisServer, settings: McpSettings
) -> None:
    """`ingestion-mcp-worker --check` (the liveness probe) asks whether the worker's loop runs, not whether Redis
    answers: a broker outage must not get every worker restarted."""
    from ingestion_mcp.cli.worker_command import check, heartbeat_file

    heartbeat_file(settings).unlink(missing_ok=True)
    assert await asyncio.to_thread(check, settings) == 1, "no worker yet"
    async with running_worker(settings):
        await asyncio.sleep(0.5)
        assert await asyncio.to_thread(check, settings) == 0
        own_redis.kill()
        await asyncio.sleep(2)
        assert await asyncio.to_thread(check, settings) == 0, "the loop runs on, waiting for the broker"
        own_redis.start()


async def test_a_broker_error_while_starting_a_job_costs_no_slot(settings: McpSettings, store: RedisJobStore) -> None:
    """arq counts a job before the broker calls that start it; a broker error there (injected: the moment between
    two calls of one start cannot be hit from outside) used to keep the slot taken for good, and after
    max_jobs such errors the worker never polled again."""
    from redis.exceptions import ConnectionError as RedisConnectionError

    async with running_worker(settings) as worker:
        real = worker.pool.pipeline
        failures = 0

        def failing(*args: object, **kwargs: object) -> object:
            nonlocal failures
            if failures < 5:
                failures += 1
                raise RedisConnectionError("injected: the broker went away mid-start")
            return real(*args, **kwargs)

        worker.pool.pipeline = failing  # type: ignore[method-assign]  # the injected fault
        job = await store.submit("test_staged", {"stages": ["reading"], "stage_s": 0.1, "tag": "slot"}, "slot")
        done = await store.wait(job.id, 30)
        worker.pool.pipeline = real  # type: ignore[method-assign]  # the real one back
    assert failures == 5 and done.status == "completed", done.error
    assert worker.job_counter == 0
