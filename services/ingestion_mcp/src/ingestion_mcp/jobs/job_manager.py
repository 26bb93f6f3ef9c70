"""The in-process job store of the embedded default (no broker): jobs run in this process's event loop."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from servicekit import idle_trimmer

from ..access.policy import current_caller
from ..errors import failure_from
from ..observability import JOBS, JOBS_STARTED, STAGE_SECONDS
from .job import UNINTERRUPTIBLE_STEPS, Job, JobBody, JobContext, KindRunner, ProgressFn, in_job, new_job_id
from .journal import JobJournal, interrupted

log = logging.getLogger("ingestion_mcp.jobs")

OrderSource = Callable[[], Awaitable[int | None]]


async def _no_order() -> int | None:
    return None


class JobManager:
    """The in-process job store (no broker): jobs run in this process's event loop."""

    def __init__(
        self,
        *,
        runner: KindRunner | None = None,
        take_order: OrderSource = _no_order,
        retention_s: float = 3600.0,
        max_concurrent: int = 2,
        journal: JobJournal | None = None,
    ) -> None:
        self.retention_s = retention_s
        self.journal = journal
        self.runner = runner
        self.take_order = take_order
        self._jobs: dict[str, Job] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._task_of: dict[str, asyncio.Task[None]] = {}
        self._slots = asyncio.Semaphore(max_concurrent)
        for job in journal.load() if journal is not None else []:  # a restart: what ran before, interrupted ones too
            self._jobs[job.id] = job

    async def submit(self, kind: str, params: dict[str, Any], description: str) -> Job:
        """Run job ``kind`` here; its write order is taken now, when it is submitted."""
        runner = self.runner
        if runner is None:
            raise RuntimeError("this job store was built without a kind runner")
        try:
            order = await self.take_order()
        except Exception as exc:  # noqa: BLE001 - without one the gateway orders the write when it arrives
            log.warning("no write order for a %s job (%s); the gateway takes one when it writes", kind, exc)
            order = None
        context = JobContext(order=order)

        async def body(progress: ProgressFn) -> Any:
            in_job(context)  # this task's own context: the job's work reads it
            return await runner(kind, params, progress)

        return self.start(kind, description, body)

    def start(self, job_type: str, description: str, body: JobBody, *, on_progress: ProgressFn | None = None) -> Job:
        self._prune()
        job = Job(id=new_job_id(), type=job_type, description=description, owner=current_caller().subject)
        self._jobs[job.id] = job
        self._journal(job, force=True)
        JOBS_STARTED.labels(job_type).inc()
        JOBS.labels("running").inc()
        task = asyncio.get_running_loop().create_task(self._run(job, body, on_progress))
        self._tasks.add(task)
        self._task_of[job.id] = task
        task.add_done_callback(self._tasks.discard)
        task.add_done_callback(lambda _: self._task_of.pop(job.id, None))
        task.add_done_callback(lambda _: self._never_ran(job))
        return job

    @staticmethod
    def _never_ran(job: Job) -> None:
        """A task cancelled before its first step never enters _run: its job ends cancelled here, as _run ends it
        (else a job cancelled at once stayed "running" for good)."""
        if job.finished:
            return
        job.finish(cancelled=True)
        JOBS.labels("running").dec()
        JOBS.labels(job.status).inc()

    def _journal(self, job: Job, *, force: bool = False) -> None:
        if self.journal is not None:
            self.journal.write(job, force=force)

    async def _run(self, job: Job, body: JobBody, on_progress: ProgressFn | None) -> None:
        async def progress(fraction: float, step: str) -> None:
            await job.advance(fraction, step)
            self._journal(job)
            for listener in [on_progress, *job.listeners]:
                if listener is not None:
                    await listener(job.progress / 100, step)

        try:
            # A big document's freed buffers go back to the system once no job or request runs (servicekit.memory).
            with idle_trimmer().busy():
                async with self._slots:
                    job.finish(result=await body(progress))
        except asyncio.CancelledError:
            if job.cancel_reason is None:  # not ours: the server is shutting down, mid-way
                interrupted(job, datetime.now(UTC).isoformat(timespec="seconds"))
            else:
                job.finish(cancelled=True)
        except Exception as exc:  # noqa: BLE001 - a failed job keeps its error for get_job_status
            job.finish(failure=failure_from(exc))
        finally:
            self._journal(job, force=True)
            JOBS.labels("running").dec()
            JOBS.labels(job.status).inc()
            for step, ms in job.step_ms.items():
                STAGE_SECONDS.labels(step).observe(ms / 1000)

    async def cancel(self, job_id: str, reason: str = "on request") -> Job | None:
        return self.cancel_now(job_id, reason)

    def cancel_now(self, job_id: str, reason: str = "on request") -> Job | None:
        """Stop a running job at its next stage boundary. A job already storing finishes its atomic write."""
        job = self._jobs.get(job_id)
        task = self._task_of.get(job_id)
        if job is None or job.status != "running" or task is None:
            return job
        job.cancel_reason = job.cancel_reason or reason
        if job.current_step not in UNINTERRUPTIBLE_STEPS:
            task.cancel()
        return job

    async def get(self, job_id: str) -> Job | None:
        self._prune()
        return self._jobs.get(job_id)

    async def active(self) -> list[Job]:
        return [job for job in self._jobs.values() if job.status == "running"]

    async def recent(self, limit: int) -> list[Job]:
        """Ended jobs still kept (``retention_s``), the last to end first."""
        self._prune()
        ended = [job for job in self._jobs.values() if job.finished]
        return sorted(ended, key=lambda job: job.end_time or "", reverse=True)[:limit]

    async def wait(self, job_id: str, timeout: float, on_progress: ProgressFn | None = None) -> Job:
        """The job once it ends or after ``timeout`` s, whichever comes first; progress goes to on_progress."""
        job = self._jobs[job_id]
        if on_progress is not None:
            job.listeners.add(on_progress)
        try:
            await job.wait(timeout)
        finally:
            job.listeners.discard(on_progress)
        return job

    def _prune(self) -> None:
        cutoff = time.monotonic() - self.retention_s
        for job_id in [j.id for j in self._jobs.values() if j._finished_at is not None and j._finished_at < cutoff]:
            del self._jobs[job_id]

    async def aclose(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
