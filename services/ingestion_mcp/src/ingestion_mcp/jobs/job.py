"""Background jobs for long work: progress that only rises, the current step, timings, result or error.

A job is a named kind with JSON parameters (jobs/kinds.py; each profile registers its own kinds), submitted
to a job store. JobManager is the store of the embedded default: jobs run in this process; finished jobs
stay queryable for a retention time. With a broker configured, jobs.queue.RedisJobStore keeps the same
records in Redis and a worker process runs them (docs/jobs.md).

Every job runs with a JobContext (a context variable the pipeline reads): the write order taken when it
was submitted, so the last submitted write of a document wins (docs/consistency.md), and, on a queue
worker, the time its lease leaves for committing (the fence that stops a worker that lost its job).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, Protocol, TypeVar

from ..errors import ToolFailure

log = logging.getLogger("ingestion_mcp.jobs")
JobStatus = Literal["running", "completed", "failed", "cancelled"]
# Steps during which a cancel no longer interrupts the work: the write commits atomically once begun,
# and once it is done the job has nothing left to stop.
UNINTERRUPTIBLE_STEPS = frozenset({"storing", "done"})
# A job body receives a progress callback (fraction 0..1, step name) and returns its result.
ProgressFn = Callable[[float, str], Awaitable[None]]
JobBody = Callable[[ProgressFn], Awaitable[Any]]
# Runs one job of a kind: (kind, params, progress) -> result. The app state provides it (jobs.kinds.JobKinds).
KindRunner = Callable[[str, dict[str, Any], ProgressFn], Awaitable[Any]]
# Fields of a job record that travel (to Redis, between processes); the rest is this process's own.
# attempt: how many times a worker started it; released: how many of those starts a worker gave back on
# purpose (a rollout's SIGTERM, a broker fault that ended its lease) and so did not spend a try.
# owner: the subject of the token that submitted it (only its owner sees and cancels it).
RECORD_FIELDS = ("id", "type", "description", "status", "progress", "current_step", "start_time", "end_time",
                 "result", "error", "suggestion", "step_ms", "cancel_reason", "attempt", "released",
                 "owner")  # fmt: skip
T = TypeVar("T")


@dataclass
class JobContext:
    """What the work of one job knows about the job (read with ``current_job()``)."""

    # The write order taken at submission (servicekit.write_order); None: the gateway takes one on arrival.
    order: int | None = None
    # Milliseconds left in which a commit may still land (a queue worker's lease); None: no limit.
    commit_budget_ms: Callable[[], int | None] = lambda: None
    # Commits in flight (uninterrupted): while one is, nothing may stop the job; it is fenced by its deadline.
    committing: int = 0


_CURRENT: contextvars.ContextVar[JobContext | None] = contextvars.ContextVar("ingestion_job", default=None)


def current_job() -> JobContext:
    """The running job's context (an empty one outside a job: a tool or the CLI calling the pipeline)."""
    return _CURRENT.get() or JobContext()


def in_job(context: JobContext) -> contextvars.Token[JobContext | None]:
    return _CURRENT.set(context)


async def uninterrupted(work: Awaitable[T]) -> T:
    """Await ``work`` to its end whatever cancels this task meanwhile, and return its result.

    For a commit that has begun (the gateway's atomic write): neither a cancel request, a rollout's SIGTERM
    (arq cancels the task), a job timeout (asyncio.timeout) nor an anyio cancel scope may turn "written" into
    "nothing was written". A cancellation that arrives meanwhile is answered by the commit completing: it is
    withdrawn (Task.uncancel), and the caller goes on to report what was written."""
    task = asyncio.ensure_future(work)
    withdrawn = 0
    context = _CURRENT.get()
    if context is not None:
        context.committing += 1
    try:
        while True:
            try:
                return_value = await asyncio.shield(task)
                break
            except asyncio.CancelledError:
                if task.done() and task.cancelled():
                    raise
                withdrawn += 1
                if task.done():
                    return_value = task.result()
                    break
    finally:
        if context is not None:
            context.committing -= 1
    current = asyncio.current_task()
    for _ in range(withdrawn):
        if current is not None:
            current.uncancel()
    return return_value


def new_job_id() -> str:
    return f"job_{uuid.uuid4().hex[:16]}"


def _stage(step: str) -> str:
    """The stage a step belongs to, for timings: "converting page 3/10" -> "converting", and a folder sync's
    "file 37/1,204: embedding" -> "embedding" (one timing per stage, not one per file)."""
    return step.rsplit(": ", 1)[-1].split(" page ", 1)[0]


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass
class Job:
    id: str
    type: str
    description: str
    status: JobStatus = "running"
    progress: float = 0.0
    current_step: str = "queued"
    start_time: str = field(default_factory=_now)
    end_time: str | None = None
    result: Any = None
    error: str | None = None
    suggestion: str | None = None
    step_ms: dict[str, float] = field(default_factory=dict)
    failure: ToolFailure | None = field(default=None, repr=False)
    cancel_reason: str | None = None
    attempt: int = 0
    released: int = 0
    owner: str | None = None
    listeners: set[ProgressFn] = field(default_factory=set, repr=False)
    _step_started: float = field(default_factory=time.perf_counter, repr=False)
    _finished_at: float | None = field(default=None, repr=False)
    _done: asyncio.Event = field(default_factory=asyncio.Event, repr=False)

    async def advance(self, fraction: float, step: str) -> None:
        """Progress never goes back; a new step closes the timing of the previous one."""
        self.progress = max(self.progress, round(min(max(fraction, 0.0), 1.0) * 100, 1))
        if _stage(step) != _stage(self.current_step):
            now = time.perf_counter()
            self.step_ms[_stage(self.current_step)] = round((now - self._step_started) * 1000, 1)
            self._step_started = now
        self.current_step = step  # "converting page 37/500": shown as is, timed as "converting"

    def finish(self, *, result: Any = None, failure: ToolFailure | None = None, cancelled: bool = False) -> None:
        self.step_ms[_stage(self.current_step)] = round((time.perf_counter() - self._step_started) * 1000, 1)
        self.end_time, self._finished_at = _now(), time.monotonic()
        if cancelled:
            self.status, self.current_step = "cancelled", "cancelled"
            self.error = f"Cancelled: {self.cancel_reason or 'on request'}. Nothing was written to the index."
            self.suggestion = "Start the work again if it is still wanted."
            self.failure = ToolFailure(self.error, self.suggestion, code="CANCELLED")
        elif failure is None:
            self.status, self.result, self.progress, self.current_step = "completed", result, 100.0, "done"
        else:
            self.failure = failure
            self.status, self.error, self.suggestion, self.current_step = (
                "failed",
                failure.message,
                failure.suggestion,
                "failed",
            )
        self._done.set()

    async def wait(self, timeout: float) -> bool:
        try:
            await asyncio.wait_for(self._done.wait(), timeout)
        except TimeoutError:
            return False
        return True

    @property
    def finished(self) -> bool:
        return self.status != "running"

    @property
    def tries(self) -> int:
        """Starts that counted against the job's tries (a start given back on purpose does not)."""
        return self.attempt - self.released

    def record(self) -> dict[str, Any]:
        """The job as JSON: what another process needs to answer get_job_status for it."""
        out = {name: getattr(self, name) for name in RECORD_FIELDS}
        if self.failure is not None:
            out["error_code"] = self.failure.code
        return out

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Job:
        job = cls(**{name: record[name] for name in RECORD_FIELDS if name in record})
        if job.error is not None:
            job.failure = ToolFailure(job.error, job.suggestion, code=record.get("error_code") or "PROCESSING_FAILED")
        if job.finished:
            job._done.set()
        return job


# The most ended jobs a store lists (the Redis store keeps this many ids; a caller's are found among them).
RECENT_KEPT = 500


class JobStore(Protocol):
    """Where jobs are submitted, looked up and cancelled: in this process (JobManager) or in Redis."""

    retention_s: float

    async def submit(self, kind: str, params: dict[str, Any], description: str) -> Job: ...
    async def get(self, job_id: str) -> Job | None: ...
    async def active(self) -> list[Job]: ...
    async def recent(self, limit: int) -> list[Job]: ...
    async def cancel(self, job_id: str, reason: str = "on request") -> Job | None: ...
    async def wait(self, job_id: str, timeout: float, on_progress: ProgressFn | None = None) -> Job: ...
    async def aclose(self) -> None: ...
