"""`ingestion-mcp-worker`: runs the jobs the MCP replicas put on the queue (an arq worker).

It reads the same settings as the server (INGESTION_MCP_BROKER_URL is required), opens the same
backend (the services by their URLs in a deployment), and runs each queued job kind (jobkinds.py),
writing its progress, step timings and result into the job's record in Redis (jobqueue.py).
`ingestion-mcp-worker --check` exits 0 when the worker on this host (pod) reported itself healthy in the
last ~10 s: connected to the broker and polling the queue.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import socket
import sys
from typing import Any

from arq.connections import RedisSettings
from arq.constants import in_progress_key_prefix
from arq.worker import Worker, async_check_health, func
from pydantic import ValidationError

from .embedded import open_backend
from .errors import ToolFailure, failure_from
from .jobkinds import run_kind
from .jobqueue import FUNCTION, QUEUE, RedisJobStore
from .jobs import UNINTERRUPTIBLE_STEPS, Job
from .settings import McpSettings
from .state import AppState

log = logging.getLogger("ingestion_mcp.worker")
CANCEL_POLL_S = 0.5


async def startup(ctx: dict[str, Any]) -> None:
    settings: McpSettings = ctx["settings"]
    stack = contextlib.AsyncExitStack()
    backend = await stack.enter_async_context(open_backend(settings))
    ctx["stack"], ctx["state"] = stack, AppState.create(settings, backend)
    log.info("worker ready on queue %s", QUEUE)


async def shutdown(ctx: dict[str, Any]) -> None:
    if "state" in ctx:
        await ctx["state"].jobs.aclose()
    if "stack" in ctx:
        await ctx["stack"].aclose()


def lost(attempts: int) -> ToolFailure:
    return ToolFailure(
        f"The job was started {attempts} times and its worker stopped each time before it finished "
        "(killed, evicted or out of memory). Nothing half-written was kept.",
        "Start the work again; if it keeps failing, check the worker's logs and memory limit.",
        code="WORKER_LOST",
    )


async def execute(ctx: dict[str, Any], job_id: str, kind: str, params: dict[str, Any]) -> str:
    """The one arq function: claim the job's record, run its kind, record how it ended."""
    state: AppState = ctx["state"]
    store: RedisJobStore = state.jobs  # type: ignore[assignment]  # a worker's state always has the Redis store
    attempt: int = ctx["job_try"]
    job = await store.claim(job_id, attempt)
    if job is None:
        return "ended before it ran"  # cancelled while queued, or its record expired
    if attempt > state.settings.job_max_tries:
        job.finish(failure=lost(attempt - 1))
    elif (reason := await store.cancel_requested(job_id)) is not None:
        job.cancel_reason = reason
        job.finish(cancelled=True)
    else:
        await store.save(job)
        await run_claimed(ctx, store, job, kind, params)
    await store.save(job)
    return job.status


async def run_claimed(ctx: dict[str, Any], store: RedisJobStore, job: Job, kind: str, params: dict) -> None:
    state: AppState = ctx["state"]
    task = asyncio.current_task()
    assert task is not None
    requested: list[str] = []

    async def progress(fraction: float, step: str) -> None:
        await job.advance(fraction, step)
        await store.save(job)

    watcher = asyncio.create_task(watch(store, job, task, requested, state.settings.job_lease_s))
    try:
        async with asyncio.timeout(state.settings.job_timeout_s):
            job.finish(result=await run_kind(state, kind, params, progress))
    except asyncio.CancelledError:
        if not requested:  # the worker is stopping (SIGTERM): the job goes back to the queue, arq retries it
            job.current_step = "queued"
            await asyncio.shield(store.save(job))
            raise
        task.uncancel()
        job.finish(cancelled=True)
    except TimeoutError:
        timeout = state.settings.job_timeout_s
        job.finish(failure=ToolFailure(
            f"The job ran longer than {timeout:.0f} s and was stopped; nothing half-written was kept.",
            "Split the work (fewer or smaller items), or raise INGESTION_MCP_JOB_TIMEOUT_S.", code="TIMEOUT",
        ))  # fmt: skip
    except Exception as exc:  # noqa: BLE001 - a failed job keeps its error for get_job_status
        job.finish(failure=failure_from(exc))
    finally:
        watcher.cancel()


async def watch(store: RedisJobStore, job: Job, task: asyncio.Task[Any], requested: list[str], lease_s: float) -> None:
    """Cancel the job at a stage boundary when a replica asks (never while storing), and hold its lease.

    arq marks a running job in-progress for its whole timeout; this shortens that mark to a lease
    renewed while the worker lives, so a killed worker's job is run again after ``lease_s``, not hours."""
    lease_ms, renewed, answered = int(lease_s * 1000), 0.0, False
    loop = asyncio.get_running_loop()
    while not task.done():
        if loop.time() - renewed >= lease_s / 3:
            await store.redis.pexpire(in_progress_key_prefix + job.id, lease_ms)
            renewed = loop.time()
        if not answered and (reason := await store.cancel_requested(job.id)) is not None:
            # As in process: a request met while the job stores (or has stored) is answered by the write
            # completing; the job then ends completed, never "cancelled" with its document written.
            answered = True
            if job.current_step not in UNINTERRUPTIBLE_STEPS:
                job.cancel_reason = reason
                requested.append(reason)
                task.cancel()
        await asyncio.sleep(CANCEL_POLL_S)


def health_key() -> str:
    """Each worker's own heartbeat key, named by its host (a pod's name), so a probe checks this worker."""
    return f"{QUEUE}:health-check:{socket.gethostname()}"


def build_worker(settings: McpSettings, **options: Any) -> Worker:
    assert settings.broker_url
    # One more try than job_max_tries: the last one only records the job as failed (execute).
    job = func(execute, name=FUNCTION, max_tries=settings.job_max_tries + 1, timeout=settings.job_timeout_s + 60)
    return Worker(
        functions=[job],
        queue_name=QUEUE,
        redis_settings=RedisSettings.from_dsn(settings.broker_url),
        ctx={"settings": settings},
        on_startup=startup,
        on_shutdown=shutdown,
        max_jobs=settings.max_concurrent_jobs,
        allow_abort_jobs=True,
        keep_result=60,
        poll_delay=0.1,  # how soon an idle worker sees a new job (one cheap Redis call per poll)
        health_check_interval=10,
        health_check_key=health_key(),
        **options,
    )


def load_settings() -> McpSettings:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        settings = McpSettings()
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'settings'}: {e['msg']}" for e in exc.errors())
        raise SystemExit(f"ingestion-mcp-worker: invalid configuration: {problems}") from None
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
        redis_settings = RedisSettings.from_dsn(settings.broker_url or "")
        sys.exit(asyncio.run(async_check_health(redis_settings, health_key(), QUEUE)))
    from servicekit import configure_logging

    configure_logging(settings.log_level)
    asyncio.set_event_loop(asyncio.new_event_loop())
    build_worker(settings).run()


if __name__ == "__main__":
    main()
