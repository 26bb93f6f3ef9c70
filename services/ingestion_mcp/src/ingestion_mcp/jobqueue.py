"""Jobs on the broker: records in Redis that any replica reads, work on an arq queue that workers run.

A replica that accepts a job writes its record and enqueues (job id, kind, params) on the arq queue;
it does not run the job. A worker (worker.py) claims it, writes its progress, step timings and result
into the record, and any replica answers get_job_status, list_active_jobs and cancel_job from there.
See docs/jobs.md for the flow, cancel semantics and retries.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import anyio
from arq.connections import ArqRedis
from arq.jobs import Job as ArqJob
from redis.exceptions import RedisError, WatchError

from .errors import ToolFailure
from .jobs import Job, ProgressFn, new_job_id

QUEUE = "ingestion-mcp:queue"
FUNCTION = "ingestion_job"
PREFIX = "ingestion-mcp:job:"
ACTIVE = "ingestion-mcp:jobs:active"
# Parameters travel in the queue (texts, batches of texts): this caps one job's JSON parameters.
MAX_PARAMS_BYTES = 16 * 1024 * 1024
# Nothing stays in Redis for ever: an unfinished record expires after this long without a write.
RUNNING_TTL_S = 2 * 86400
POLL_S = 0.25
POLL_FIRST_S = 0.02


def record_key(job_id: str) -> str:
    return PREFIX + job_id


def cancel_key(job_id: str) -> str:
    return PREFIX + job_id + ":cancel"


def broker_down(exc: Exception) -> ToolFailure:
    return ToolFailure(
        f"The job queue's broker is unreachable ({type(exc).__name__}).",
        "Retry in a moment; if it persists, check the broker (INGESTION_MCP_BROKER_URL) and its logs.",
        code="SERVICE_UNAVAILABLE",
    )


class RedisJobStore:
    """The job store of a deployment: the same records as JobManager's, kept in Redis."""

    def __init__(self, broker_url: str, *, retention_s: float = 3600.0) -> None:
        self.redis: ArqRedis = ArqRedis.from_url(broker_url)
        self.retention_s = retention_s

    async def submit(self, kind: str, params: dict[str, Any], description: str, *, context: Any = None) -> Job:
        """Record the job and put it on the queue; a worker runs it (``context`` is the worker's own there)."""
        size = len(json.dumps(params).encode())
        if size > MAX_PARAMS_BYTES:
            raise ToolFailure(
                f"The job's input is {size / 2**20:.1f} MiB; jobs on the queue carry at most "
                f"{MAX_PARAMS_BYTES // 2**20} MiB.",
                "Save the content to a file under an allowed folder and ingest the file instead.",
                code="INVALID_INPUT",
            )
        job = Job(id=new_job_id(), type=kind, description=description, current_step="queued")
        try:
            await self.save(job)
            await self.redis.enqueue_job(FUNCTION, job.id, kind, params, _job_id=job.id, _queue_name=QUEUE)
        except RedisError as exc:
            raise broker_down(exc) from None
        return job

    async def save(self, job: Job) -> None:
        record = json.dumps(job.record())
        async with self.redis.pipeline(transaction=True) as pipe:
            if job.finished:
                ttl = int(self.retention_s)
                pipe.set(record_key(job.id), record, ex=ttl)
                pipe.srem(ACTIVE, job.id)
                pipe.expire(cancel_key(job.id), ttl)
            else:
                pipe.set(record_key(job.id), record, ex=RUNNING_TTL_S)
                pipe.sadd(ACTIVE, job.id)
            await pipe.execute()

    async def get(self, job_id: str) -> Job | None:
        try:
            raw = await self.redis.get(record_key(job_id))
        except RedisError as exc:
            raise broker_down(exc) from None
        return None if raw is None else Job.from_record(json.loads(raw))

    async def active(self) -> list[Job]:
        try:
            ids = sorted(member.decode() for member in await self.redis.smembers(ACTIVE))  # type: ignore[misc]  # redis-py types the asyncio client's set calls as sync-or-awaitable
            raws = await self.redis.mget([record_key(i) for i in ids]) if ids else []
        except RedisError as exc:
            raise broker_down(exc) from None
        jobs = [Job.from_record(json.loads(raw)) for raw in raws if raw is not None]
        gone = [i for i, raw in zip(ids, raws, strict=True) if raw is None]
        if gone:  # records that expired: their ids leave the set too
            await self.redis.srem(ACTIVE, *gone)  # type: ignore[misc]  # redis-py types the asyncio client's set calls as sync-or-awaitable
        return sorted((job for job in jobs if not job.finished), key=lambda job: job.start_time)

    async def wait(self, job_id: str, timeout: float, on_progress: ProgressFn | None = None) -> Job:
        """Poll the record until the job ends or ``timeout`` s pass, passing progress on as it rises."""
        deadline = time.monotonic() + timeout
        seen: tuple[float, str] | None = None
        interval = POLL_FIRST_S  # short jobs answer soon; long ones are polled at POLL_S
        while True:
            job = await self.get(job_id)
            if job is None:
                raise ToolFailure(f"Job {job_id} disappeared from the broker.", "Start the work again.")
            if on_progress is not None and (job.progress, job.current_step) != seen and job.attempt > 0:
                seen = (job.progress, job.current_step)
                await on_progress(job.progress / 100, job.current_step)
            if job.finished or time.monotonic() >= deadline:
                return job
            await anyio.sleep(min(interval, max(deadline - time.monotonic(), 0.0)))
            interval = min(interval * 2, POLL_S)

    async def cancel(self, job_id: str, reason: str = "on request") -> Job | None:
        """Ask the worker to stop the job; a job still on the queue is cancelled at once and never runs."""
        job = await self.get(job_id)
        if job is None or job.finished:
            return job
        try:
            await self.redis.set(cancel_key(job_id), reason, ex=RUNNING_TTL_S, nx=True)
            if await self._cancel_queued(job_id, reason):
                await ArqJob(job_id, self.redis, _queue_name=QUEUE).abort(timeout=0.01)
        except TimeoutError:
            pass  # abort() waits for arq's result; the job is cancelled already, nobody needs to wait
        except RedisError as exc:
            raise broker_down(exc) from None
        return await self.get(job_id)

    async def _cancel_queued(self, job_id: str, reason: str) -> bool:
        """Mark a job that no worker has claimed yet cancelled (a worker's claim and this exclude each other)."""

        def cancel(job: Job) -> bool:
            if job.finished or job.attempt > 0:
                return False
            job.cancel_reason = reason
            job.finish(cancelled=True)
            return True

        return await self._transact(job_id, cancel, ttl=int(self.retention_s), ended=True) is not None

    async def _transact(
        self, job_id: str, change: Callable[[Job], bool], *, ttl: int, ended: bool = False
    ) -> Job | None:
        """Read the job's record, let ``change`` edit it, and write it back in one transaction, again
        from the top if another writer got there first. None when there is no record or ``change``
        declines; ``ended``: the job also leaves the active set."""
        while True:
            async with self.redis.pipeline(transaction=True) as pipe:
                try:
                    await pipe.watch(record_key(job_id))
                    raw = await pipe.get(record_key(job_id))
                    job = None if raw is None else Job.from_record(json.loads(raw))
                    if job is None or not change(job):
                        return None
                    pipe.multi()
                    pipe.set(record_key(job_id), json.dumps(job.record()), ex=ttl)
                    if ended:
                        pipe.srem(ACTIVE, job_id)
                    await pipe.execute()
                    return job
                except WatchError:
                    continue

    async def claim(self, job_id: str, attempt: int) -> Job | None:
        """A worker takes the job for its ``attempt``-th try; None if it ended meanwhile (or expired)."""

        def take(job: Job) -> bool:
            if job.finished:
                return False
            job.attempt, job.current_step = attempt, "starting"
            return True

        return await self._transact(job_id, take, ttl=RUNNING_TTL_S)

    async def cancel_requested(self, job_id: str) -> str | None:
        raw = await self.redis.get(cancel_key(job_id))
        return None if raw is None else raw.decode()

    async def aclose(self) -> None:
        await self.redis.aclose()
