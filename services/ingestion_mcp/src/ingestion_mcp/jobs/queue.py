"""Jobs on the broker: records in Redis that any replica reads, work on an arq queue that workers run.

A replica that accepts a job takes its write order, then writes its record and enqueues (job id, kind,
params, order) in one Redis transaction; it does not run the job. A worker (cli/worker_command.py) claims it,
writes its progress, step timings and result into the record, and any replica answers get_job_status,
list_active_jobs and cancel_job from there. See docs/jobs.md for the flow, cancel semantics and retries.

Every call has a timeout and one retry (a frozen or unreachable Redis makes a job tool answer
SERVICE_UNAVAILABLE within seconds, never hang). What a running job writes (its record, its lease, the
clean-up) runs as scripts flagged `allow-oom`, so a full Redis (maxmemory + noeviction) refuses new jobs
("queue full") while the jobs already running still finish and free their memory. Payloads are JSON.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import Any

import anyio
from arq.connections import ArqRedis
from arq.constants import job_key_prefix
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import OutOfMemoryError, RedisError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError
from servicekit.write_order import take_async

from ..access.policy import current_caller
from ..errors import ToolFailure
from ..settings import McpSettings
from .job import RECENT_KEPT, Job, ProgressFn, new_job_id

log = logging.getLogger("ingestion_mcp.jobqueue")
QUEUE = "ingestion-mcp:queue"
FUNCTION = "ingestion_job"
PREFIX = "ingestion-mcp:job:"
ACTIVE = "ingestion-mcp:jobs:active"
# Ended jobs by end time (ms), the newest RECENT_KEPT: what the console lists; their records expire as before.
RECENT = "ingestion-mcp:jobs:recent"
# Nothing stays in Redis for ever: an unfinished record expires after this long without a write.
RUNNING_TTL_S = 2 * 86400
# arq keeps a queued job's payload this long (then the job ends failed, "expired on the queue").
QUEUED_TTL_MS = 86_400_000
POLL_S = 0.25
POLL_FIRST_S = 0.02
# New jobs are refused past this share of the broker's maxmemory: what running jobs still write has room.
FULL_AT = 0.9

# Scripts. `allow-oom`: they run when Redis is at maxmemory (noeviction), for what a running job must still
# write. KEYS/ARGV are named in each comment. A fenced write (attempt > 0) never overwrites a record that a
# later attempt took, nor one that has ended.
_SAVE = """#!lua flags=allow-oom
-- KEYS: record, active set, cancel key, recent set. ARGV: record JSON, ttl s, ended '1'|'0', attempt (0: unfenced),
-- job id, now ms, ended jobs kept in the recent set
local current = redis.call('get', KEYS[1])
local attempt = tonumber(ARGV[4])
if current and attempt > 0 then
  local ok, rec = pcall(cjson.decode, current)
  if ok and (rec['status'] ~= 'running' or (tonumber(rec['attempt']) or 0) > attempt) then return 0 end
end
redis.call('set', KEYS[1], ARGV[1], 'EX', ARGV[2])
if ARGV[3] == '1' then
  redis.call('srem', KEYS[2], ARGV[5])
  redis.call('expire', KEYS[3], ARGV[2])
  redis.call('zadd', KEYS[4], ARGV[6], ARGV[5])
  redis.call('zremrangebyrank', KEYS[4], 0, -1 - tonumber(ARGV[7]))
else
  redis.call('sadd', KEYS[2], ARGV[5])
end
return 1
"""
_SWAP = """#!lua flags=allow-oom
-- Compare-and-set. KEYS: record, active set, cancel key, recent set. ARGV: expected JSON, new JSON, ttl s, ended,
-- job id, now ms, ended jobs kept in the recent set
if redis.call('get', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('set', KEYS[1], ARGV[2], 'EX', ARGV[3])
if ARGV[4] == '1' then
  redis.call('srem', KEYS[2], ARGV[5])
  redis.call('expire', KEYS[3], ARGV[3])
  redis.call('zadd', KEYS[4], ARGV[6], ARGV[5])
  redis.call('zremrangebyrank', KEYS[4], 0, -1 - tonumber(ARGV[7]))
end
return 1
"""
_REQUEST_CANCEL = """#!lua flags=allow-oom
-- KEYS: cancel key. ARGV: reason, ttl s
return redis.call('set', KEYS[1], ARGV[1], 'EX', ARGV[2], 'NX') and 1 or 0
"""
_DROP_QUEUED = """#!lua flags=allow-oom
-- A job cancelled before any worker claimed it: its payload leaves the queue. KEYS: queue, arq job key. ARGV: id
redis.call('zrem', KEYS[1], ARGV[1])
redis.call('del', KEYS[2])
return 1
"""


def _now_ms() -> int:
    return int(time.time() * 1000)


def record_key(job_id: str) -> str:
    return PREFIX + job_id


def cancel_key(job_id: str) -> str:
    return PREFIX + job_id + ":cancel"


def job_serializer(data: dict[str, Any]) -> bytes:
    """arq's job and result payloads as JSON, never pickle (write access to Redis must not run code)."""
    return json.dumps(data, separators=(",", ":"), default=repr).encode()


def job_deserializer(raw: bytes) -> dict[str, Any]:
    data = json.loads(raw)
    if not isinstance(data, dict):
        raise ValueError("a job payload is a JSON object")
    return data


def broker_client(url: str, timeout_s: float) -> ArqRedis:
    """A client whose every call answers or fails within ~2 x ``timeout_s`` (one retry on a lost connection)."""
    return ArqRedis.from_url(
        url,
        socket_timeout=timeout_s,
        socket_connect_timeout=timeout_s,
        retry=Retry(ExponentialBackoff(cap=0.5, base=0.05), 1),
        retry_on_error=[RedisConnectionError, RedisTimeoutError],
        # No health-check PING before a command on an idle connection: against a frozen broker it would be one
        # more timeout before the command's own (the retry already replaces a connection that broke).
    )


def broker_down(exc: Exception) -> ToolFailure:
    return ToolFailure(
        f"The job queue's broker is unreachable ({type(exc).__name__}); job status and new jobs are unavailable "
        "until it is back. Searches and document reads still work.",
        "Retry in a moment; if it persists, check the broker (INGESTION_MCP_BROKER_URL) and its logs.",
        code="SERVICE_UNAVAILABLE",
    )


def queue_full(used: int, limit: int) -> ToolFailure:
    return ToolFailure(
        f"The job queue is full: its broker (Redis) is at its memory limit ({used / 2**20:.0f} of "
        f"{limit / 2**20:.0f} MiB), so no new job can be queued. Jobs already queued or running go on and free "
        "memory as they end.",
        "Retry in a few minutes; if it persists, raise the broker's maxmemory or add workers.",
        code="QUEUE_FULL",
    )


def payload_too_large(size: int, limit: int) -> ToolFailure:
    return ToolFailure(
        f"The request carries {size / 2**20:.1f} MiB; the limit is {limit // 2**20} MiB "
        "(INGESTION_MCP_MAX_PAYLOAD_MB).",
        "Save the content to a file under an allowed folder and ingest the file (ingest_document) instead.",
        code="PAYLOAD_TOO_LARGE",
    )


def _is_oom(exc: RedisError) -> bool:
    """Redis refused a write at its memory limit (noeviction); inside a transaction it aborts the whole of it."""
    text = str(exc)
    return isinstance(exc, OutOfMemoryError) or (
        isinstance(exc, ResponseError) and ("OOM" in text or "maxmemory" in text or "EXECABORT" in text)
    )


class RedisJobStore:
    """The job store of a deployment: the same records as JobManager's, kept in Redis."""

    def __init__(
        self, broker_url: str, *, retention_s: float = 3600.0, timeout_s: float = 3.0, max_payload_bytes: int = 16 << 20
    ) -> None:
        self.redis: ArqRedis = broker_client(broker_url, timeout_s)
        self.retention_s = retention_s
        self.max_payload_bytes = max_payload_bytes
        self._save = self.redis.register_script(_SAVE)
        self._swap = self.redis.register_script(_SWAP)
        self._request_cancel = self.redis.register_script(_REQUEST_CANCEL)
        self._drop_queued = self.redis.register_script(_DROP_QUEUED)

    @classmethod
    def from_settings(cls, settings: McpSettings) -> RedisJobStore:
        return cls(
            settings.broker_url or "", retention_s=settings.job_retention_s, timeout_s=settings.broker_timeout_s,
            max_payload_bytes=settings.max_payload_bytes,
        )  # fmt: skip

    # -- submit --------------------------------------------------------------------------------
    async def submit(self, kind: str, params: dict[str, Any], description: str) -> Job:
        """Take the job's write order, then record it and put it on the queue in one transaction."""
        size = len(json.dumps(params).encode())
        if size > self.max_payload_bytes:
            raise payload_too_large(size, self.max_payload_bytes)
        job = Job(
            id=new_job_id(), type=kind, description=description, current_step="queued", owner=current_caller().subject
        )
        try:
            await self._check_room(size)
            order = await take_async(self.redis)
            payload = job_serializer({"t": 0, "f": FUNCTION, "a": [job.id, kind, params, order], "k": {},
                                      "et": int(time.time() * 1000)})  # fmt: skip
            async with self.redis.pipeline(transaction=True) as tx:
                tx.set(record_key(job.id), json.dumps(job.record()), ex=RUNNING_TTL_S)
                tx.sadd(ACTIVE, job.id)
                tx.psetex(job_key_prefix + job.id, QUEUED_TTL_MS, payload)
                tx.zadd(QUEUE, {job.id: int(time.time() * 1000)})
                await tx.execute()
        except RedisError as exc:
            if _is_oom(exc):
                raise await self._full() from None
            raise broker_down(exc) from None
        return job

    async def _check_room(self, size: int) -> None:
        used, limit = await self._memory()
        if limit and used + size > FULL_AT * limit:
            raise queue_full(used, limit)

    async def _memory(self) -> tuple[int, int]:
        info = await self.redis.info("memory")
        return int(info.get("used_memory", 0)), int(info.get("maxmemory", 0))

    async def _full(self) -> ToolFailure:
        try:
            return queue_full(*await self._memory())
        except RedisError:
            return queue_full(0, 0)

    # -- records -------------------------------------------------------------------------------
    async def save(self, job: Job, *, fenced: bool = False) -> bool:
        """Write the job's record. ``fenced`` (a worker's write): only while no later attempt took the job and it
        has not ended; False when refused."""
        ttl = int(self.retention_s) if job.finished else RUNNING_TTL_S
        keys = [record_key(job.id), ACTIVE, cancel_key(job.id), RECENT]
        args: list[str | int] = [json.dumps(job.record()), ttl, "1" if job.finished else "0",
                                 job.attempt if fenced else 0, job.id, _now_ms(), RECENT_KEPT]  # fmt: skip
        return bool(await self._save(keys=keys, args=args))

    async def swap(self, job_id: str, change: Callable[[Job], bool]) -> Job | None:
        """Read the record, let ``change`` edit it, write it back only if nobody wrote it meanwhile (else from the
        top). None when there is no record or ``change`` declines."""
        while True:
            raw = await self.redis.get(record_key(job_id))
            if raw is None:
                return None
            job = Job.from_record(json.loads(raw))
            if not change(job):
                return None
            ttl = int(self.retention_s) if job.finished else RUNNING_TTL_S
            keys = [record_key(job_id), ACTIVE, cancel_key(job_id), RECENT]
            if await self._swap(keys=keys, args=[raw, json.dumps(job.record()), ttl, "1" if job.finished else "0",
                                                 job_id, _now_ms(), RECENT_KEPT]):  # fmt: skip
                return job

    async def get(self, job_id: str) -> Job | None:
        try:
            raw = await self.redis.get(record_key(job_id))
        except RedisError as exc:
            raise broker_down(exc) from None
        return None if raw is None else Job.from_record(json.loads(raw))

    async def active(self) -> list[Job]:
        try:
            jobs, _ = await self._active_records()
        except RedisError as exc:
            raise broker_down(exc) from None
        return sorted((job for job in jobs if not job.finished), key=lambda job: job.start_time)

    async def recent(self, limit: int) -> list[Job]:
        """Ended jobs whose records are still kept (``retention_s``), the last to end first."""
        try:
            ids = [member.decode() for member in await self.redis.zrevrange(RECENT, 0, limit - 1)]
            jobs, gone = await self._records(ids)
            if gone:  # expired records leave the set
                await self.redis.zrem(RECENT, *gone)
        except RedisError as exc:
            raise broker_down(exc) from None
        return jobs

    async def _active_records(self) -> tuple[list[Job], list[str]]:
        """The records of the active set, and the ids whose record is gone (they leave the set)."""
        ids = sorted(member.decode() for member in await self.redis.smembers(ACTIVE))  # type: ignore[misc]  # redis-py types the asyncio client's set calls as sync-or-awaitable
        jobs, gone = await self._records(ids)
        if gone:
            await self.redis.srem(ACTIVE, *gone)  # type: ignore[misc]  # redis-py types the asyncio client's set calls as sync-or-awaitable
        return jobs, gone

    async def _records(self, ids: list[str]) -> tuple[list[Job], list[str]]:
        """The records of these jobs in their order, and the ids whose record is gone (expired)."""
        raws = await self.redis.mget([record_key(i) for i in ids]) if ids else []
        jobs = [Job.from_record(json.loads(raw)) for raw in raws if raw is not None]
        return jobs, [i for i, raw in zip(ids, raws, strict=True) if raw is None]

    async def depth(self) -> dict[str, int]:
        """Jobs waiting for a worker and jobs being run: what an autoscaler scales workers on."""
        try:
            jobs, _ = await self._active_records()
        except RedisError as exc:
            raise broker_down(exc) from None
        running = sum(1 for job in jobs if not job.finished and job.attempt > 0 and job.current_step != "queued")
        queued = sum(1 for job in jobs if not job.finished) - running
        return {"queued": queued, "running": running, "depth": queued + running}

    async def ping(self) -> str:
        try:
            await self.redis.ping()
        except RedisError as exc:
            return f"unreachable ({type(exc).__name__})"
        return "ok"

    # -- waiting and cancelling --------------------------------------------------------------------
    async def wait(self, job_id: str, timeout: float, on_progress: ProgressFn | None = None) -> Job:
        """Poll the record until the job ends or ``timeout`` s pass, passing progress on as it rises.

        A broker that stops answering meanwhile does not end the wait early: polling goes on until the
        deadline, and the job is answered as last seen (its id lets the caller ask again later)."""
        deadline = time.monotonic() + timeout
        seen: tuple[float, str] | None = None
        last = Job(id=job_id, type="", description="", current_step="queued")
        interval = POLL_FIRST_S  # short jobs answer soon; long ones are polled at POLL_S
        while True:
            try:
                job = await self.get(job_id)
            except ToolFailure:
                job = last
            if job is None:
                raise ToolFailure(f"Job {job_id} disappeared from the broker.", "Start the work again.")
            last = job
            if on_progress is not None and (job.progress, job.current_step) != seen and job.attempt > 0:
                seen = (job.progress, job.current_step)
                await on_progress(job.progress / 100, job.current_step)
            if job.finished or time.monotonic() >= deadline:
                return job
            await anyio.sleep(min(interval, max(deadline - time.monotonic(), 0.0)))
            interval = min(interval * 2, POLL_S)

    async def cancel(self, job_id: str, reason: str = "on request") -> Job | None:
        """Ask the worker to stop the job; a job still on the queue is cancelled at once and never runs."""
        try:
            job = await self.get(job_id)
            if job is None or job.finished:
                return job
            await self._request_cancel(keys=[cancel_key(job_id)], args=[reason, RUNNING_TTL_S])
            if await self._cancel_queued(job_id, reason):
                await self._drop_queued(keys=[QUEUE, job_key_prefix + job_id], args=[job_id])
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

        return await self.swap(job_id, cancel) is not None

    async def cancel_requested(self, job_id: str) -> str | None:
        raw = await self.redis.get(cancel_key(job_id))
        return None if raw is None else raw.decode()

    async def aclose(self) -> None:
        await self.redis.aclose()
