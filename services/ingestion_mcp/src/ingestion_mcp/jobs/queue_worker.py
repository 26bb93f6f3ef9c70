"""arq's Worker, made to ride out broker faults and to keep the job records true.

- A broker error (Redis restarted, frozen, unreachable, full) never ends the worker: each poll that fails
  is logged and retried with a bounded backoff; start-up waits for the broker the same way.
- arq's clean-up after a job is fenced by the worker's lease (jobs/lease.py): a worker that lost a job touches
  nothing of it. A job arq gives up (its payload expired on the queue, its tries used up, a payload that is
  not JSON) ends `failed` in its record with the reason, never `running` for days.
- A periodic sweep ends the records of jobs that are no longer on the queue at all (a broker that lost them).
- A stop (SIGTERM) ends the loop at its next turn even when arq's one cancellation of its task was lost: redis-py
  checks a pooled connection inside `asyncio.timeout(0)`, which turns a cancellation asked for before it into a
  TimeoutError (CPython gh-134471) that redis-py takes as "nothing to read"; the task still counts the request.
- The health key in Redis is written by a script that runs when Redis is full, and every poll (also one that
  fails) touches a heartbeat file: `ingestion-mcp-worker --check` (a liveness probe) passes while the loop
  runs, so a broker outage never gets workers restarted.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import random
import socket
import time
from pathlib import Path
from typing import Any

from arq.constants import in_progress_key_prefix, job_key_prefix
from arq.utils import poll
from arq.worker import Worker
from redis.exceptions import RedisError

from ..errors import ToolFailure
from .job import Job
from .lease import finish_fenced
from .queue import QUEUE, RedisJobStore

log = logging.getLogger("ingestion_mcp.worker")
BACKOFF_MIN_S, BACKOFF_MAX_S = 0.2, 5.0
SWEEP_EVERY_S = 30.0
_HEALTH = """#!lua flags=allow-oom
-- KEYS: health key. ARGV: text, ttl ms
return redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2])
"""


def lost(tries: int) -> ToolFailure:
    return ToolFailure(
        f"The job was started {tries} times and its worker stopped each time before it finished "
        "(killed, evicted or out of memory). Nothing half-written was kept.",
        "Start the work again; if it keeps failing, check the worker's logs and memory limit.",
        code="WORKER_LOST",
    )


def given_up(reason: str, tries: int) -> ToolFailure:
    """Why arq gave a job up, said for the agent (reason: arq's own words)."""
    if "retries exceeded" in reason:
        return lost(tries)
    if "expired" in reason:
        return ToolFailure(
            "The job waited on the queue until its payload expired (a day) and never ran: no worker took it.",
            "Check that ingestion-mcp-worker processes are running, then start the work again.",
            code="JOB_EXPIRED",
        )
    return ToolFailure(
        f"The queue could not run the job ({reason}).",
        "Deploy the same version of the server and the worker, then start the work again.",
        code="JOB_FAILED",
    )


class QueueWorker(Worker):
    """The arq worker of ingestion-mcp-worker (see the module's text)."""

    def __init__(
        self, *args: Any, store: RedisJobStore, lease_s: float, heartbeat: Path | None = None, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.store = store
        self.heartbeat = heartbeat
        self.worker_id = f"{socket.gethostname()[:60]}:{os.getpid()}"
        self.tokens: dict[str, str] = {}  # job id -> this worker's lease token, while it runs the job
        self.running: dict[str, asyncio.Task[Any]] = {}  # job id -> the task running its kind (execute)
        self.broker_errors = 0
        self._backoff = BACKOFF_MIN_S
        self._next_sweep = 0.0
        # arq marks a started job in progress for this long; the claim then holds it as a renewed lease.
        self.in_progress_timeout_s = lease_s
        self._health = self.store.redis.register_script(_HEALTH)

    async def main(self) -> None:
        """arq's main loop, without the calls that would end the worker on a broker fault at start-up."""
        while True:  # the broker may be away when the worker starts: wait for it, do not exit
            self._end_if_stopping()
            try:
                await self.pool.ping()
                break
            except (RedisError, OSError) as exc:
                await self._broker_fault("start-up", exc)
        log.info("worker %s polls %s for %s", self.worker_id, self.queue_name, ", ".join(self.functions))
        self.ctx["redis"] = self.pool
        if self.on_startup:
            await self.on_startup(self.ctx)
        async for _ in poll(self.poll_delay_s):
            self._end_if_stopping()
            await self._poll_iteration()

    @staticmethod
    def _end_if_stopping() -> None:
        """End the loop when its task was asked to stop (arq's handle_sig, or the end of the grace after SIGTERM)
        although the cancellation itself was lost inside redis-py (the module's text): Task.cancelling() still
        counts it."""
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise asyncio.CancelledError("the worker is stopping")

    async def _poll_iteration(self) -> None:
        beat(self.heartbeat)  # the loop runs (polling, or waiting for the broker): what a liveness probe asks
        try:
            await super()._poll_iteration()
            if time.monotonic() >= self._next_sweep:
                self._next_sweep = time.monotonic() + SWEEP_EVERY_S * random.uniform(0.8, 1.2)
                await sweep_lost(self.store)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - nothing a broker does may end the worker
            await self._broker_fault("poll", exc)
        else:
            self.broker_errors, self._backoff = 0, BACKOFF_MIN_S

    async def start_jobs(self, job_ids: list[bytes]) -> None:
        """arq's start, one job at a time: when a broker call fails inside it, arq has counted the job (and taken
        a slot of its semaphore) without starting it; both are given back, or the worker would stop polling. A job
        this worker still runs is not started again here (arq keys its tasks by job id)."""
        for job_id in job_ids:
            running = self.tasks.get(job_id.decode())
            if running is not None and not running.done():
                continue  # this worker still runs it (its lease lapsed meanwhile): never a second run here
            counted = self.job_counter
            try:
                await super().start_jobs([job_id])
            except BaseException:
                if self.job_counter > counted and job_id.decode() not in self.tasks:
                    self.job_counter -= 1
                    self.sem.release()
                raise

    async def _broker_fault(self, where: str, exc: BaseException) -> None:
        self.broker_errors += 1
        if self.broker_errors == 1 or self.broker_errors % 20 == 0:
            log.warning("broker call failed during %s (%s: %s); retrying", where, type(exc).__name__, exc)
        self._end_if_stopping()
        await asyncio.sleep(self._backoff)
        self._backoff = min(self._backoff * 2, BACKOFF_MAX_S)

    async def record_health(self) -> None:
        now = time.time()
        if now - self._last_health_check < self.health_check_interval:
            return
        self._last_health_check = now
        ongoing = sum(not t.done() for t in self.tasks.values())
        info = f"{time.strftime('%b-%d %H:%M:%S')} j_complete={self.jobs_complete} j_failed={self.jobs_failed} " \
               f"j_retried={self.jobs_retried} j_ongoing={ongoing}"  # fmt: skip
        await self._health(keys=[self.health_check_key], args=[info, int((self.health_check_interval + 1) * 1000)])

    async def finish_job(
        self, job_id: str, finish: bool, result_data: bytes | None, result_timeout_s: float | None,
        keep_result_forever: bool, incr_score: int | None, keep_in_progress: float | None,
    ) -> None:  # fmt: skip
        await self._settled(job_id)
        token = self.tokens.pop(job_id, None)
        if not await finish_fenced(self.pool, job_id, token, finish=finish, score=incr_score):
            log.info("job %s is held by another worker now; left to it", job_id)

    async def _settled(self, job_id: str) -> None:
        """Wait until this worker's run of the job has ended. arq stops waiting for it when its own task is
        cancelled twice (a second signal); the job must not go back to the queue while it still runs here."""
        task = self.running.get(job_id)
        if task is not None and not task.done():
            await asyncio.wait({task}, timeout=self.in_progress_timeout_s)

    async def finish_failed_job(self, job_id: str, result_data: bytes | None) -> None:
        reason = _reason(result_data)

        def fail(job: Job) -> bool:
            if job.finished:
                return False
            job.finish(failure=given_up(reason, job.tries))
            return True

        # The record ends first, then the job leaves the queue: a job is never off the queue and `running`.
        if await self.store.swap(job_id, fail) is not None:
            log.warning("job %s given up by the queue: %s", job_id, reason)
        await finish_fenced(self.pool, job_id, self.tokens.pop(job_id, None), finish=True, score=None)


def beat(path: Path | None) -> None:
    if path is None:
        return
    try:
        path.touch()
    except OSError as exc:  # a read-only folder: the probe then reads only the broker's health key
        log.debug("could not touch the heartbeat %s: %s", path, exc)


def alive(path: Path, within_s: float) -> bool:
    """Whether the worker's loop touched its heartbeat within ``within_s`` (whatever the broker does)."""
    try:
        return time.time() - path.stat().st_mtime < within_s
    except OSError:
        return False


def _reason(result_data: bytes | None) -> str:
    try:
        return str(json.loads(result_data or b"{}").get("r") or "unknown")
    except ValueError:
        return "unknown"


async def sweep_lost(store: RedisJobStore) -> int:
    """End the records of jobs that are neither queued nor running (a broker that lost them): `failed`."""
    jobs, _ = await store._active_records()
    ended = 0
    for job in jobs:
        if job.finished:
            continue
        queued = await store.redis.zscore(QUEUE, job.id)
        if queued is not None or await store.redis.exists(job_key_prefix + job.id, in_progress_key_prefix + job.id):
            continue

        def fail(current: Job) -> bool:
            if current.finished:
                return False
            current.finish(failure=ToolFailure(
                "The job is no longer on the queue (the broker lost it, e.g. restarted without its data) and "
                "cannot finish.", "Start the work again.", code="JOB_LOST",
            ))  # fmt: skip
            return True

        with contextlib.suppress(RedisError):
            ended += await store.swap(job.id, fail) is not None
    return ended
