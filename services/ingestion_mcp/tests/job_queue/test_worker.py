"""The worker on a real Redis: jobs run, report progress, cancel between stages, survive a stopped worker.

The worker is ingestion_mcp.cli.worker_command's arq worker, in this process, running the `test_staged` kind
(conftest.py); the end-to-end test runs real ingests in a worker process (tests/e2e/test_jobs_queue.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import signal
from collections.abc import AsyncIterator
from typing import Any

import pytest
from ingestion_mcp.cli.worker_command import build_worker
from ingestion_mcp.jobs.queue import RedisJobStore
from ingestion_mcp.settings import McpSettings
from ingestion_mcp.state import AppState

from .conftest import RUNS, claim_as_worker, with_test_kinds


@contextlib.asynccontextmanager
async def running_worker(settings: McpSettings) -> AsyncIterator[Any]:
    async def startup(ctx: dict[str, Any]) -> None:
        ctx["state"] = with_test_kinds(AppState.create(settings, backend=None))  # type: ignore[arg-type]  # these job kinds never call a service

    worker = build_worker(settings, handle_signals=False)
    worker.on_startup = startup
    task = asyncio.create_task(worker.async_run())
    try:
        yield worker
    finally:
        worker.handle_sig(signal.SIGUSR1)  # what SIGTERM does to a worker process
        await _ended(task, "the worker's loop")
        await _ended(asyncio.ensure_future(worker.close()), "the worker's close")


async def _ended(task: asyncio.Future[Any], what: str, within_s: float = 60) -> None:
    """Wait for a part of the worker to stop; one that does not is a failure that shows every task's stack."""
    await asyncio.wait({task}, timeout=within_s)
    if not task.done():
        pytest.fail(f"{what} did not end within {within_s:.0f} s of SIGTERM; the tasks:\n{task_stacks()}")
    if not task.cancelled() and (error := task.exception()) is not None:
        raise error


def task_stacks() -> str:
    stacks = io.StringIO()
    for each in asyncio.all_tasks():
        each.print_stack(limit=12, file=stacks)
    return stacks.getvalue()


@contextlib.asynccontextmanager
async def within(seconds: float) -> AsyncIterator[None]:
    """Fail a test still running after ``seconds`` with every task's stack as it was then (a hang in CI is then
    read from the failure, not guessed from the threads pytest-timeout shows)."""
    seen: list[str] = []
    loop = asyncio.get_running_loop()
    snapshot = loop.call_at(loop.time() + seconds - 0.2, lambda: seen.append(task_stacks()))
    try:
        async with asyncio.timeout(seconds):
            yield
    except TimeoutError:
        pytest.fail(f"still running after {seconds:.0f} s; the tasks then:\n{''.join(seen)}")
    finally:
        snapshot.cancel()


async def ran(store: RedisJobStore, tag: str) -> list[str]:
    """The stages every run of the job ended, in order."""
    return [stage for run in RUNS.get(tag, []) for stage in run[2]]


async def until(store: RedisJobStore, job_id: str, step: str, timeout: float = 20) -> None:
    async with asyncio.timeout(timeout):
        while (job := await store.get(job_id)) is None or job.current_step != step:
            await asyncio.sleep(0.05)


STAGES = ["reading", "converting", "chunking", "embedding", "storing"]


async def test_a_worker_runs_the_job_and_any_replica_follows_it(
    queue_settings: McpSettings, replica: RedisJobStore, other_replica: RedisJobStore
) -> None:
    seen: list[tuple[float, str]] = []

    async def on_progress(fraction: float, step: str) -> None:
        seen.append((fraction, step))

    async with running_worker(queue_settings):
        params = {"stages": STAGES, "stage_s": 0.3, "tag": "runs"}
        job = await replica.submit("test_staged", params, "five stages")
        done = await other_replica.wait(job.id, 30, on_progress=on_progress)
    assert done.status == "completed" and done.result == {"stages": 5, "tag": "runs"}
    assert done.progress == 100.0 and done.attempt == 1
    assert set(STAGES) <= set(done.step_ms), done.step_ms
    fractions = [fraction for fraction, _ in seen]
    assert fractions == sorted(fractions) and len({step for _, step in seen}) >= 4, seen
    assert await ran(replica, "runs") == STAGES


async def test_a_cancel_from_another_replica_stops_at_the_next_stage(
    queue_settings: McpSettings, replica: RedisJobStore, other_replica: RedisJobStore
) -> None:
    async with running_worker(queue_settings):
        job = await replica.submit("test_staged", {"stages": STAGES, "stage_s": 0.6, "tag": "cancel"}, "cancel me")
        await until(replica, job.id, "converting")
        await other_replica.cancel(job.id)
        done = await other_replica.wait(job.id, 10)
    assert done.status == "cancelled" and "Nothing was written" in (done.error or "")
    assert "storing" not in await ran(replica, "cancel")
    assert await replica.active() == []


async def test_a_cancel_while_storing_lets_the_write_finish(
    queue_settings: McpSettings, replica: RedisJobStore, other_replica: RedisJobStore
) -> None:
    async with running_worker(queue_settings):
        params = {"stages": ["reading", "storing"], "stage_s": 1.0, "after_s": 1.0, "tag": "st"}
        job = await replica.submit("test_staged", params, "store then cancel")
        await until(replica, job.id, "storing")
        await other_replica.cancel(job.id)
        done = await other_replica.wait(job.id, 10)
    assert done.status == "completed", "an atomic write once begun completes; the job is not half-cancelled"
    assert await ran(replica, "st") == ["reading", "storing"]


async def test_a_stopped_worker_hands_the_job_to_the_next_one(
    queue_settings: McpSettings, replica: RedisJobStore, other_replica: RedisJobStore
) -> None:
    """A worker that stops mid-job (a rollout's SIGTERM) puts it back; after the lease another runs it again."""
    job = await replica.submit("test_staged", {"stages": STAGES, "stage_s": 0.5, "tag": "again"}, "again")
    async with running_worker(queue_settings):
        await until(replica, job.id, "chunking")
    requeued = await replica.get(job.id)
    assert requeued is not None and (requeued.status, requeued.current_step) == ("running", "queued")
    async with running_worker(queue_settings):
        done = await other_replica.wait(job.id, 30)
    assert done.status == "completed" and done.attempt == 2
    assert done.progress == 100.0


async def test_a_job_whose_workers_keep_dying_ends_failed(
    queue_settings: McpSettings, replica: RedisJobStore, other_replica: RedisJobStore
) -> None:
    """Workers killed mid-job (what SIGKILL leaves in Redis: a start, a claim, a lease that lapses) spend tries."""
    settings = queue_settings.model_copy(update={"job_max_tries": 2})
    job = await replica.submit("test_staged", {"stages": STAGES, "stage_s": 0.5, "tag": "lost"}, "lost")
    for attempt in (1, 2):
        assert await claim_as_worker(replica, job.id, attempt, lease_s=0.2) is not None
        await asyncio.sleep(0.3)  # the killed worker's lease lapses
    async with running_worker(settings):
        done = await other_replica.wait(job.id, 30)
    assert done.status == "failed" and done.failure is not None and done.failure.code == "WORKER_LOST"
    assert "Start the work again" in (done.suggestion or "") and RUNS.get("lost") is None


async def test_a_rollout_does_not_spend_the_jobs_tries(
    queue_settings: McpSettings, replica: RedisJobStore, other_replica: RedisJobStore
) -> None:
    """Each SIGTERM gives the job back (step queued); with one try allowed, two rollouts later it still completes."""
    settings = queue_settings.model_copy(update={"job_max_tries": 1})
    job = await replica.submit("test_staged", {"stages": STAGES, "stage_s": 0.4, "tag": "rolled"}, "rolled")
    for _ in range(2):
        async with running_worker(settings):
            await until(replica, job.id, "converting")
    async with running_worker(settings):
        done = await other_replica.wait(job.id, 30)
    assert done.status == "completed", done.error
    assert (done.attempt, done.released, done.tries) == (3, 2, 1)


async def test_a_job_past_its_time_limit_fails_cleanly(
    queue_settings: McpSettings, replica: RedisJobStore, other_replica: RedisJobStore
) -> None:
    settings = queue_settings.model_copy(update={"job_timeout_s": 1.0})
    async with running_worker(settings):
        job = await replica.submit("test_staged", {"stages": STAGES, "stage_s": 0.5, "tag": "slow"}, "slow")
        done = await other_replica.wait(job.id, 30)
    assert done.status == "failed" and done.failure is not None and done.failure.code == "TIMEOUT"
    assert "storing" not in await ran(replica, "slow")


async def test_the_health_check_answers_for_this_worker(queue_settings: McpSettings) -> None:
    """`ingestion-mcp-worker --check` (a pod's probe) passes while this host's worker polls, not before."""
    from arq.connections import RedisSettings
    from arq.worker import async_check_health
    from ingestion_mcp.cli.worker_command import health_key
    from ingestion_mcp.jobs.queue import QUEUE

    redis_settings = RedisSettings.from_dsn(queue_settings.broker_url or "")
    assert await async_check_health(redis_settings, health_key(), QUEUE) == 1
    async with running_worker(queue_settings) as worker:
        async with asyncio.timeout(10):
            while await async_check_health(redis_settings, health_key(), QUEUE) != 0:
                await asyncio.sleep(0.1)
        assert worker.health_check_key == health_key()


async def test_a_stop_that_comes_as_the_loop_calls_the_broker_still_ends_it(queue_settings: McpSettings) -> None:
    """SIGTERM handled while the loop is runnable, just before a broker call: the one cancellation arq sends is
    thrown inside redis-py's check of a pooled connection, `asyncio.timeout(0)` around a read, which turns a
    cancellation asked for before it into a TimeoutError that redis-py then takes as "nothing to read" (CPython
    gh-134471). The loop went on polling and the worker never ended (CI, stop 59). The stop is asked for here from
    inside the loop's own task, where that cancellation is always pending at the next broker call."""
    worker = build_worker(queue_settings, handle_signals=False)

    async def stop_while_running(ctx: dict[str, Any]) -> None:
        ctx["state"] = with_test_kinds(AppState.create(queue_settings, backend=None))  # type: ignore[arg-type]  # these job kinds never call a service
        worker.handle_sig(signal.SIGUSR1)  # the loop's task is running: its cancellation waits for its next await

    worker.on_startup = stop_while_running
    try:
        await _ended(asyncio.create_task(worker.async_run()), "the worker's loop", within_s=10)
    finally:
        await _ended(asyncio.ensure_future(worker.close()), "the worker's close")
