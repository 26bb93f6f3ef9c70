"""`ingestion-mcp-worker`: runs the jobs the MCP replicas put on the queue (an arq worker).

It reads the same settings as the server (INGESTION_MCP_BROKER_URL is required), opens the same
backend (the services by their URLs in a deployment), registers the job kinds of every tool profile,
and runs each queued job, writing its progress, step timings and result into the job's record in Redis
(jobs/queue.py). A job runs under a lease (jobs/lease.py): it never runs on two workers at once, and a worker
that loses its lease (a frozen or restarted broker) stops the job before another can start it.
`ingestion-mcp-worker --check` exits 0 when the worker loop on this host (pod) ran in the last 30 s: polling
the queue, or waiting for a broker that is away (a liveness probe must not restart workers for that).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import socket
import sys
from pathlib import Path
from typing import Any

from arq.connections import RedisSettings
from arq.worker import Retry, async_check_health, func
from servicekit import idle_trimmer
from servicekit.settings import settings_or_exit

from ..access import audit
from ..access.policy import on_behalf_of
from ..embedded.services import open_backend
from ..errors import ToolFailure, failure_from
from ..jobs import UNINTERRUPTIBLE_STEPS, Job, JobContext, in_job
from ..jobs.lease import Lease, claim, new_token
from ..jobs.queue import FUNCTION, QUEUE, RedisJobStore, job_deserializer, job_serializer
from ..jobs.queue_worker import QueueWorker, alive, lost
from ..profiles import NAMES
from ..profiles.record import load
from ..settings import McpSettings
from ..state import AppState

log = logging.getLogger("ingestion_mcp.worker")
WATCH_S = 0.5
# Starts a worker gives back on purpose (SIGTERM, a lost lease) do not spend a try; arq still counts them.
RELEASES_ALLOWED = 20


async def startup(ctx: dict[str, Any]) -> None:
    settings: McpSettings = ctx["settings"]
    stack = contextlib.AsyncExitStack()
    backend = await stack.enter_async_context(open_backend(settings))
    state = AppState.create(settings, backend)
    for name in NAMES:  # a worker runs the jobs of every replica, whatever profiles each serves
        register = load(name).jobs
        if register is not None:
            register(state.kinds)
    ctx["stack"], ctx["state"] = stack, state
    log.info("worker ready on queue %s (%s)", QUEUE, ", ".join(state.kinds.names))


async def shutdown(ctx: dict[str, Any]) -> None:
    if "state" in ctx:
        await ctx["state"].jobs.aclose()
    if "stack" in ctx:
        await ctx["stack"].aclose()


async def execute(ctx: dict[str, Any], job_id: str, kind: str, params: dict[str, Any], order: int | None = None) -> str:
    """The one arq function: claim the job's record and lease, run its kind, record how it ended."""
    state: AppState = ctx["state"]
    store: RedisJobStore = state.jobs  # type: ignore[assignment]  # a worker's state always has the Redis store
    worker: QueueWorker = ctx["worker"]
    attempt: int = ctx["job_try"]
    token = new_token(worker.worker_id, attempt)
    claimed = await claim(store.redis, job_id, attempt, token, state.settings.job_lease_s)
    if claimed is None:
        return "ended before it ran"  # cancelled while queued, finished by an earlier try, or expired
    job, lease = claimed
    worker.tokens[job_id] = lease.token
    worker.running[job_id] = asyncio.current_task()  # type: ignore[assignment]  # execute always runs in a task
    try:
        return await _run_and_record(state, store, job, lease, kind, params, order)
    finally:
        worker.running.pop(job_id, None)


async def _run_and_record(
    state: AppState, store: RedisJobStore, job: Job, lease: Lease, kind: str, params: dict[str, Any], order: int | None
) -> str:
    if job.tries > state.settings.job_max_tries:
        job.finish(failure=lost(job.tries - 1))
    elif (reason := await store.cancel_requested(job.id)) is not None:
        job.cancel_reason = reason
        job.finish(cancelled=True)
    else:
        log.info("job %s: run %d started", job.id, job.attempt)
        try:
            with idle_trimmer().busy():  # a big document's freed buffers go back once the worker is quiet
                await run_claimed(state, store, job, lease, kind, params, order)
        finally:
            log.info("job %s: run %d ended (%s)", job.id, job.attempt, job.status)
    if not await _record_end(store, job, lease):
        raise Retry(defer=1)  # the end could not be written: the job runs again and finds what this run did
    return job.status


async def _record_end(store: RedisJobStore, job: Job, lease: Lease) -> bool:
    """Write the job's final record, riding out a short broker outage for as long as the lease holds; False when
    it could not be written by then (the broker stayed away). The run is over before its lease can lapse: once
    another worker may start the job, this one has stopped, even writing its record (the next run finds what this
    one stored and reports it)."""
    pause = 0.25
    while (left := lease.remaining()) > 0:
        try:
            await asyncio.wait_for(store.save(job, fenced=True), timeout=left)
            return True
        except Exception as exc:  # noqa: BLE001 - the broker may be away for a while
            log.warning("could not record the end of job %s (%s); retrying", job.id, type(exc).__name__)
        await asyncio.sleep(min(pause, max(0.0, lease.remaining())))
        pause = min(pause * 2, 4.0)
    log.warning("job %s: its lease ended before its end could be recorded; its next run reports it", job.id)
    return False


async def run_claimed(
    state: AppState, store: RedisJobStore, job: Job, lease: Lease, kind: str, params: dict[str, Any], order: int | None
) -> None:
    task = asyncio.current_task()
    assert task is not None
    context = JobContext(order=order, commit_budget_ms=lease.commit_budget_ms)
    in_job(context)
    on_behalf_of(job.owner)
    watch = Watch(store, job, lease, task, context, state.settings.job_lease_s)

    async def progress(fraction: float, step: str) -> None:
        await job.advance(fraction, step)
        if step == "storing":  # a fresh lease for the commit: the whole of it is the commit's budget
            await watch.renew_now()
        watch.changed()

    watcher = asyncio.create_task(watch.run())
    try:
        async with asyncio.timeout(state.settings.job_timeout_s):
            job.finish(result=await state.run_kind(kind, params, progress))
    except asyncio.CancelledError:
        task.uncancel()
        await _stopped(store, job, lease, watch, state.settings.broker_timeout_s)
    except TimeoutError:
        timeout = state.settings.job_timeout_s
        job.finish(failure=ToolFailure(
            f"The job ran longer than {timeout:.0f} s and was stopped; nothing half-written was kept.",
            "Split the work (fewer or smaller items), or raise INGESTION_MCP_JOB_TIMEOUT_S.", code="TIMEOUT",
        ))  # fmt: skip
    except Exception as exc:  # noqa: BLE001 - a failed job keeps its error for get_job_status
        if lease.expiring:
            raise Retry(defer=1) from None  # failed because the lease ran out (a commit refused): run it again
        job.finish(failure=_explained(exc, state.settings.job_lease_s))
    finally:
        await watch.stop(watcher, min(state.settings.broker_timeout_s, max(0.0, lease.remaining() / 3)))
    if lease.lost and not job.finished:
        raise Retry(defer=1)  # another worker holds (or will hold) the job: it runs there, nothing more here


async def _stopped(store: RedisJobStore, job: Job, lease: Lease, watch: Watch, timeout_s: float) -> None:
    """The job's task was cancelled: on request (the job ends cancelled), because its lease is running out, or
    because the worker is stopping (SIGTERM): then the job goes back to the queue without spending a try."""
    if watch.requested:
        job.finish(cancelled=True)
        return
    job.released += 1
    job.current_step = "queued"
    # Best effort. A run must be over before its lease is: it waits no longer than that (when the lease is
    # ending, the broker is likely the reason, and then this start spends a try after all).
    wait = min(2 * timeout_s + 1, max(0.0, lease.remaining() - lease.margin / 2))
    if wait > 0:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(store.save(job, fenced=True), timeout=wait)
    if lease.expiring:
        raise Retry(defer=1)
    raise asyncio.CancelledError  # arq puts the job back on the queue


def _explained(exc: Exception, lease_s: float) -> ToolFailure:
    failure = failure_from(exc)
    if failure.code == "COMMIT_DEADLINE_PASSED":
        return ToolFailure(
            f"Storing took longer than the job's lease ({lease_s:.0f} s) allows; nothing was written.",
            "Raise INGESTION_MCP_JOB_LEASE_S, or ingest smaller items.",
            code="TIMEOUT",
        )
    return failure


class Watch:
    """Beside a running job: renew its lease, stop it when a replica asks or the lease is running out, and
    write its progress to the record (so the job itself never waits on the broker)."""

    def __init__(
        self, store: RedisJobStore, job: Job, lease: Lease, task: asyncio.Task[Any], context: JobContext,
        lease_s: float,
    ) -> None:  # fmt: skip
        self.store, self.job, self.lease, self.task, self.context = store, job, lease, task, context
        self.renew_every = lease_s / 6
        self.requested = False
        self.dirty = False
        self._wake = asyncio.Event()
        self.stopped = False
        self._renewed = asyncio.get_running_loop().time()

    def changed(self) -> None:
        """The job moved on: its record is written at once (not at the next turn), so a new step shows at once."""
        self.dirty = True
        self._wake.set()

    async def stop(self, watcher: asyncio.Task[None], timeout_s: float) -> None:
        """End the watch: by its flag at its next turn, and by a cancel now (a broker call in flight may delay
        that); never wait on it for longer than a broker call can take."""
        self.stopped = True
        watcher.cancel()
        await asyncio.wait({watcher}, timeout=2 * timeout_s + 1)

    async def run(self) -> None:
        """Two loops: the guard watches the lease's deadline on this worker's clock and is never held up by a
        broker call; the upkeep renews the lease, reads cancel requests and writes the record (each of its calls
        may take the broker's timeout when the broker is frozen)."""
        guard = asyncio.create_task(self._guard())
        try:
            await self._upkeep()
        finally:
            guard.cancel()
            await asyncio.gather(guard, return_exceptions=True)

    async def _guard(self) -> None:
        while not self.stopped and not self.task.done():
            until_margin = self.lease.remaining() - self.lease.margin
            # A commit in flight is fenced by its deadline instead, and a job that is done has nothing left to stop.
            if self.lease.expiring and not self.context.committing and self.job.current_step != "done":
                log.warning("job %s: its lease is ending (broker unreachable?); stopping it here", self.job.id)
                self.lease.lost = True
                self.task.cancel()
                return
            await asyncio.sleep(min(max(until_margin, 0.05), WATCH_S))

    async def _upkeep(self) -> None:
        loop = asyncio.get_running_loop()
        while not self.stopped and not self.task.done() and not self.lease.lost:
            if loop.time() - self._renewed >= self.renew_every:
                await self._step(self.renew_now())
            await self._step(self._check_cancel())
            self._wake.clear()  # before the write: a step taken while it is on its way wakes the next turn
            if self.dirty:
                self.dirty = False
                await self._step(self.store.save(self.job, fenced=True))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=min(WATCH_S, self.renew_every))

    async def renew_now(self) -> None:
        try:
            held = await self.lease.renew()
        except Exception:  # noqa: BLE001 - the deadline in the lease decides; a failed renewal is retried
            return
        self._renewed = asyncio.get_running_loop().time()
        if not held:
            log.warning("job %s: another worker holds its lease now", self.job.id)

    async def _check_cancel(self) -> None:
        if self.requested or (reason := await self.store.cancel_requested(self.job.id)) is None:
            return
        # As in process: a request met while the job stores (or has stored) is answered by the write completing;
        # the job then ends completed, never "cancelled" with its document written.
        if self.job.current_step not in UNINTERRUPTIBLE_STEPS:
            self.requested = True
            self.job.cancel_reason = reason
            self.task.cancel()

    async def _step(self, call: Any) -> None:
        try:
            await call
        except Exception as exc:  # noqa: BLE001 - the broker may be away; the lease's deadline rules
            log.debug("job %s: broker call failed in the watch (%s)", self.job.id, type(exc).__name__)


def health_key() -> str:
    """Each worker's own heartbeat key, named by its host (a pod's name), so a probe checks this worker."""
    return f"{QUEUE}:health-check:{socket.gethostname()}"


def heartbeat_file(settings: McpSettings) -> Path:
    """The file each poll of this host's worker touches (in the data folder), read by `--check`."""
    return settings.data_dir.expanduser() / f".worker-{socket.gethostname()[:100]}.alive"


def check(settings: McpSettings) -> int:
    """0 when this host's worker loop ran in the last 30 s (its heartbeat file), or reported healthy in Redis."""
    if alive(heartbeat_file(settings), within_s=30):
        return 0
    redis_settings = RedisSettings.from_dsn(settings.broker_url or "")
    return asyncio.run(async_check_health(redis_settings, health_key(), QUEUE))


def build_worker(settings: McpSettings, **options: Any) -> QueueWorker:
    assert settings.broker_url
    store = RedisJobStore.from_settings(settings)
    # arq counts every start; the job's own record counts tries (execute) without the starts given back.
    tries = settings.job_max_tries + RELEASES_ALLOWED + 1
    with contextlib.suppress(OSError):  # where the heartbeat goes; unwritable: --check asks the broker instead
        heartbeat_file(settings).parent.mkdir(parents=True, exist_ok=True)
    job = func(execute, name=FUNCTION, max_tries=tries, timeout=settings.job_timeout_s + 60)
    worker = QueueWorker(
        functions=[job],
        queue_name=QUEUE,
        redis_pool=store.redis,
        store=store,
        lease_s=settings.job_lease_s,
        heartbeat=heartbeat_file(settings),
        ctx={"settings": settings},
        on_startup=startup,
        on_shutdown=shutdown,
        max_jobs=settings.max_concurrent_jobs,
        allow_abort_jobs=False,  # cancels travel in the job's record (jobs/queue.py), not through arq
        keep_result=0,  # results live in the job's record; arq keeps no copy of a job's input
        poll_delay=0.1,  # how soon an idle worker sees a new job (one cheap Redis call per poll)
        health_check_interval=10,
        health_check_key=health_key(),
        job_completion_wait=int(settings.job_grace_s),
        job_serializer=job_serializer,
        job_deserializer=job_deserializer,
        **options,
    )
    worker.ctx["worker"] = worker
    return worker


def load_settings() -> McpSettings:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    settings = settings_or_exit(McpSettings, "ingestion-mcp-worker")
    if not settings.broker_url:
        raise SystemExit(
            "ingestion-mcp-worker: set INGESTION_MCP_BROKER_URL (e.g. redis://localhost:6379/0) to the broker "
            "the MCP servers use; without a broker the servers run their jobs themselves."
        )
    return settings


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="ingestion-mcp-worker", description=__doc__)
    parser.add_argument("--check", action="store_true", help="exit 0 if a worker reported healthy recently")
    args = parser.parse_args(argv)
    settings = load_settings()
    if args.check:
        sys.exit(check(settings))
    from servicekit import configure_allocators, configure_idle_trim, configure_logging

    configure_allocators()  # before the worker's threads start (docs/memory.md)
    configure_logging(settings.log_level, json_logs=settings.json_logs)
    configure_idle_trim(settings.idle_trim_s)
    audit.configure(settings.audit_log, json_logs=settings.json_logs)  # its own sink: on at any log level
    asyncio.set_event_loop(asyncio.new_event_loop())
    build_worker(settings).run()


if __name__ == "__main__":
    main()
