"""What the queue costs a job: submit -> finished, in process (no broker) and on Redis with an arq worker.

`python -m bench.experiments.jobs_queue [--jobs N]` starts Debian's redis-server on a loopback port, runs N jobs of a
no-op kind (one progress step, no work) one after another through each store as a tool does
(submit, then wait), then N at once, and prints the median / p95 latency and the throughput of each.
The no-op kind isolates the machinery: a real ingest adds its own stages on top, identical in both.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from ingestion_mcp.cli.worker_command import build_worker
from ingestion_mcp.jobs import JobManager, JobStore, ProgressFn
from ingestion_mcp.settings import McpSettings
from ingestion_mcp.state import AppState

from scripts.redis_server import RedisServer


async def noop(state: AppState, params: dict[str, Any], progress: ProgressFn) -> dict[str, Any]:
    await progress(0.5, "working")
    return {"n": params["n"]}


def with_noop(state: AppState) -> AppState:
    state.kinds.add("bench_noop", noop)
    return state


def summary(samples_s: list[float], wall_s: float, jobs: int) -> dict[str, float]:
    ordered = sorted(samples_s)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"median_ms": round(statistics.median(ordered) * 1000, 1), "p95_ms": round(p95 * 1000, 1),
            "jobs_per_s": round(jobs / wall_s, 1)}  # fmt: skip


async def one(store: JobStore, state: Any, n: int) -> float:
    start = time.perf_counter()
    job = await store.submit("bench_noop", {"n": n}, "bench")
    done = await store.wait(job.id, 30)
    assert done.status == "completed", done
    return time.perf_counter() - start


async def measure(store: JobStore, state: Any, jobs: int) -> dict[str, Any]:
    sequential = [await one(store, state, n) for n in range(jobs)]
    start = time.perf_counter()
    concurrent = await asyncio.gather(*(one(store, state, n) for n in range(jobs)))
    wall = time.perf_counter() - start
    return {"one_at_a_time": summary(sequential, sum(sequential), jobs), "all_at_once": summary(concurrent, wall, jobs)}


async def main(jobs: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp, RedisServer(Path(tmp) / "redis") as redis:
        settings = McpSettings(broker_url=redis.url, data_dir=Path(tmp), max_concurrent_jobs=8)
        state = with_noop(AppState.create(settings, backend=None))  # type: ignore[arg-type]  # the no-op kind never calls a service
        in_process = JobManager(runner=state.run_kind, max_concurrent=8)
        results = {"in_process": await measure(in_process, state, jobs)}

        async def startup(ctx: dict[str, Any]) -> None:
            ctx["state"] = with_noop(AppState.create(settings, backend=None))  # type: ignore[arg-type]  # the no-op kind never calls a service

        worker = build_worker(settings, handle_signals=False)
        worker.on_startup = startup
        running = asyncio.create_task(worker.async_run())
        try:
            results["redis_arq_worker"] = await measure(state.jobs, state, jobs)
        finally:
            worker.handle_sig(signal.SIGUSR1)
            with contextlib.suppress(asyncio.CancelledError):  # the worker's tasks end cancelled
                await running
            with contextlib.suppress(asyncio.CancelledError):
                await worker.close()
            await state.jobs.aclose()
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=200)
    print(json.dumps(asyncio.run(main(parser.parse_args().jobs)), indent=2))
