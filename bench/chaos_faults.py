"""The fault injectors of the fault suite: each waits for its moment, breaks one thing, and repairs it.

An injector opens the fault *window* (``ctx.open()``) when the fault starts and closes it when the fault is
over (the process restarted, the broker thawed or emptied); the probes' figures are taken over that
window. It returns one line saying what it did, for the report.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import redis
import redis.asyncio

from scripts.chaos_topology import ChaosTopology, TopologyOptions
from scripts.service_stack import ServiceProcess

RECORD_PREFIX = "ingestion-mcp:job:"  # jobqueue.record_key: the job's record, what get_job_status reads
JUNK_PREFIX = "chaos:junk:"
DOWN_S = 3.0  # how long a killed process (or the broker) stays down before it is started again
SETTLE_S = 5.0  # the window stays open this long after the repair: recovery is part of the fault


@dataclass
class FaultContext:
    topology: ChaosTopology
    job_ids: Callable[[], list[str]]  # the acknowledged jobs so far
    workload_done: asyncio.Event
    hold_s: float = 20.0  # how long a freeze or a full broker lasts
    window: list[float] = field(default_factory=lambda: [0.0, 0.0])
    opened: asyncio.Event = field(default_factory=asyncio.Event)
    before_done: asyncio.Event = field(default_factory=asyncio.Event)  # the 'before' submissions were answered

    def open(self) -> None:
        self.window[0] = time.time()
        self.opened.set()

    async def close(self) -> None:
        await asyncio.sleep(SETTLE_S)
        self.window[1] = time.time()

    async def job_in_step(self, step: str, timeout_s: float = 150.0) -> str | None:
        """The first acknowledged job seen running ``step`` (its record polled every 20 ms), or None.

        Polled once the 'before' submissions were answered, so that the fault meets all of them in flight."""
        deadline = time.monotonic() + timeout_s
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.before_done.wait(), timeout_s)
        broker = redis.asyncio.Redis.from_url(self.topology.redis.url, socket_timeout=2)
        try:
            while time.monotonic() < deadline:
                ids = self.job_ids()
                raws = await broker.mget([RECORD_PREFIX + i for i in ids]) if ids else []
                for job_id, raw in zip(ids, raws, strict=True):
                    record = json.loads(raw) if raw else {}
                    if record.get("status") == "running" and record.get("current_step") == step:
                        return job_id
                await asyncio.sleep(0.02)
        finally:
            await broker.aclose()
        return None


@dataclass
class Fault:
    name: str
    summary: str
    inject: Callable[[FaultContext], Awaitable[str]]
    options: dict[str, Any] = field(default_factory=dict)  # TopologyOptions fields this fault needs
    all_twice: bool = False  # every key submitted twice: more chances for two versions to meet the fault

    def topology_options(self, base: TopologyOptions) -> TopologyOptions:
        return TopologyOptions(**{**base.__dict__, **self.options})


def runner_of(topology: ChaosTopology, job_id: str) -> ServiceProcess | None:
    """The worker whose log shows ``job_id`` started (arq's '→ id:') and not yet ended."""
    for worker in topology.workers:
        lines = [line for line in worker.log_text().splitlines() if f"{job_id}:" in line]
        if lines and "→" in lines[-1]:
            return worker
    return None


def _in_thread(fn: Callable[..., Any], *args: Any) -> Awaitable[Any]:
    return asyncio.to_thread(fn, *args)


async def _kill_worker(ctx: FaultContext, step: str, sig: signal.Signals) -> str:
    job = await ctx.job_in_step(step)
    worker = (runner_of(ctx.topology, job) if job else None) or ctx.topology.workers[0]
    ctx.open()
    # SIGTERM: a pod's grace period (the deployment gives workers INGESTION_MCP_JOB_GRACE_S + 15 s), then SIGKILL.
    took = await _in_thread(ctx.topology.stop, worker, sig, 60.0)
    await asyncio.sleep(DOWN_S)
    await _in_thread(ctx.topology.revive, worker)
    await ctx.close()
    where = f"while {job} was {step}" if job else f"(no job seen {step} in time)"
    return f"{sig.name} {worker.name} {where}; it exited after {took:.1f} s; restarted {DOWN_S:.0f} s later"


async def worker_kill_embedding(ctx: FaultContext) -> str:
    return await _kill_worker(ctx, "embedding", signal.SIGKILL)


async def worker_kill_storing(ctx: FaultContext) -> str:
    return await _kill_worker(ctx, "storing", signal.SIGKILL)


async def worker_term(ctx: FaultContext) -> str:
    return await _kill_worker(ctx, "embedding", signal.SIGTERM)


async def redis_restart(ctx: FaultContext) -> str:
    job = await ctx.job_in_step("embedding")
    ctx.open()
    await _in_thread(ctx.topology.kill_redis)
    await asyncio.sleep(DOWN_S)
    await _in_thread(ctx.topology.redis.start)
    await ctx.close()
    return f"kill -9 redis while {job or 'no job'} was embedding; restarted on its port (AOF) {DOWN_S:.0f} s later"


async def redis_freeze(ctx: FaultContext) -> str:
    job = await ctx.job_in_step("embedding")
    ctx.open()
    ctx.topology.redis.freeze()
    await asyncio.sleep(ctx.hold_s)
    ctx.topology.redis.thaw()
    await ctx.close()
    return f"SIGSTOP redis for {ctx.hold_s:.0f} s while {job or 'no job'} was embedding, then SIGCONT"


def _fill(url: str, hold_s: float) -> int:
    """Keep Redis full for ``hold_s``: junk values (256 KiB, then 4 KiB to top up what the others free) until
    every write is refused (OOM under noeviction). How many keys it wrote."""
    client = redis.Redis.from_url(url, socket_timeout=5)
    deadline, count = time.monotonic() + hold_s, 0
    while time.monotonic() < deadline:
        for size in (256 * 1024, 4096):
            try:
                client.set(f"{JUNK_PREFIX}{count}", b"x" * size)
                count += 1
                break
            except redis.exceptions.OutOfMemoryError:
                continue
        else:
            time.sleep(0.05)  # full: look again soon
    return count


def _empty(url: str, count: int) -> None:
    client = redis.Redis.from_url(url, socket_timeout=5)
    for start in range(0, count, 100):
        client.delete(*[f"{JUNK_PREFIX}{i}" for i in range(start, min(count, start + 100))])


async def redis_full(ctx: FaultContext) -> str:
    job = await ctx.job_in_step("embedding")
    ctx.open()
    count = await _in_thread(_fill, ctx.topology.redis.url, ctx.hold_s)
    await _in_thread(_empty, ctx.topology.redis.url, count)
    await ctx.close()
    limit = ctx.topology.options.redis_maxmemory
    return (
        f"kept redis full (maxmemory {limit}, noeviction; {count} junk keys) for {ctx.hold_s:.0f} s from when "
        f"{job or 'no job'} was embedding, then deleted the junk"
    )


def _upserting_gateway(topology: ChaosTopology) -> ServiceProcess | None:
    """The gateway the balancer sent the latest document write to."""
    for entry in reversed(topology.gateway_proxy.requests_log()):
        if entry["method"] == "POST" and entry.get("path", "").endswith(("/documents", "/documents/batch")):
            return next((g for g in topology.gateways if g.url == entry["upstream"]), None)
    return None


async def gateway_kill_storing(ctx: FaultContext) -> str:
    job = await ctx.job_in_step("storing")
    gateway = await _in_thread(_upserting_gateway, ctx.topology) if job else None
    gateway = gateway or ctx.topology.gateways[0]
    ctx.open()
    await _in_thread(ctx.topology.stop, gateway, signal.SIGKILL)
    await asyncio.sleep(DOWN_S)
    await _in_thread(ctx.topology.revive, gateway)
    await ctx.close()
    where = f"while {job} was storing (its upsert went there)" if job else "(no job seen storing in time)"
    return f"SIGKILL {gateway.name} {where}; restarted {DOWN_S:.0f} s later"


async def whole_run(ctx: FaultContext) -> str:
    """A fault present from the start (a skewed clock), or none: the window is the whole workload."""
    ctx.open()
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(ctx.workload_done.wait(), 600)
    await ctx.close()
    skew = ctx.topology.options.gateway_skew
    return f"gateway-{ctx.topology.options.gateways - 1} runs under libfaketime FAKETIME={skew}" if skew else "none"


FAULTS = {fault.name: fault for fault in [
    Fault("baseline", "no fault (the harness's own zero line)", whole_run),
    Fault("worker-kill-embedding", "worker SIGKILL mid-embedding", worker_kill_embedding),
    Fault("worker-kill-storing", "worker SIGKILL mid-store", worker_kill_storing),
    Fault("worker-term", "worker SIGTERM mid-job", worker_term),
    Fault("redis-restart", "Redis kill -9 + restart (AOF)", redis_restart),
    Fault("redis-freeze", "Redis SIGSTOP 20 s", redis_freeze),
    Fault("redis-full", "Redis full (maxmemory, noeviction)", redis_full, {"redis_maxmemory": "32mb"}),
    Fault("gateway-kill-storing", "gateway SIGKILL mid-upsert", gateway_kill_storing),
    Fault("gateway-skew-minus", "gateway clock -30 s", whole_run, {"gateway_skew": "-30s"}, all_twice=True),
    Fault("gateway-skew-plus", "gateway clock +30 s", whole_run, {"gateway_skew": "+30s"}, all_twice=True),
]}  # fmt: skip
QUICK = ("redis-restart", "redis-freeze", "worker-kill-storing")
