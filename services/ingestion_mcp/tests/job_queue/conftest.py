"""A real Redis (Debian's redis-server on a loopback port) for the job store and worker tests."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from arq.constants import in_progress_key_prefix, retry_key_prefix
from ingestion_mcp.jobs import Job, ProgressFn, uninterrupted
from ingestion_mcp.jobs.lease import claim
from ingestion_mcp.jobs.queue import RedisJobStore
from ingestion_mcp.settings import McpSettings
from ingestion_mcp.state import AppState

from scripts.redis_server import SKIP_REASON, RedisServer, redis_binary


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    if redis_binary() is None:
        pytest.skip(SKIP_REASON)
    with RedisServer(tmp_path_factory.mktemp("redis")) as server:
        yield server


@pytest.fixture
async def broker(redis_server: RedisServer) -> AsyncIterator[str]:
    """The broker's URL, emptied before each test."""
    store = RedisJobStore(redis_server.url)
    await store.redis.config_set("maxmemory", 0)
    await store.redis.flushdb()
    await store.aclose()
    yield redis_server.url


@pytest.fixture
def queue_settings(broker: str, tmp_path: Path) -> McpSettings:
    return McpSettings(broker_url=broker, data_dir=tmp_path, job_lease_s=2, job_retention_s=120)


@pytest.fixture
async def replica(queue_settings: McpSettings) -> AsyncIterator[RedisJobStore]:
    """The job store as one MCP replica holds it."""
    store = RedisJobStore(queue_settings.broker_url or "", retention_s=queue_settings.job_retention_s)
    yield store
    await store.aclose()


@pytest.fixture
async def other_replica(queue_settings: McpSettings) -> AsyncIterator[RedisJobStore]:
    """A second replica's store: it shares nothing with the first but the broker."""
    store = RedisJobStore(queue_settings.broker_url or "", retention_s=queue_settings.job_retention_s)
    yield store
    await store.aclose()


# What every run of a `test_staged` job did, in this process (the broker may be frozen or gone meanwhile):
# tag -> [(start, end or None, stages that ended)], on the monotonic clock.
RUNS: dict[str, list[list[Any]]] = {}


# A job kind for the queue machinery's own tests: named stages, each taking `stage_s`, each logged when it
# ends, so a test sees exactly which stages ran (what a real ingest's stages are) and when each run was alive.
async def staged(state: AppState, params: dict[str, Any], progress: ProgressFn) -> dict[str, Any]:
    run: list[Any] = [time.monotonic(), None, []]
    RUNS.setdefault(params["tag"], []).append(run)
    stages = params["stages"]
    try:
        for number, stage in enumerate(stages):
            await progress(number / len(stages), stage)
            if stage == "storing":  # atomic: once begun, it ends (as the pipeline's commit does)
                await uninterrupted(asyncio.sleep(params["stage_s"]))
            else:
                await asyncio.sleep(params["stage_s"])
            run[2].append(stage)
        await progress(1.0, "done")
        await asyncio.sleep(params.get("after_s", 0))  # the moment between the last step and the answer
    finally:
        run[1] = time.monotonic()
    return {"stages": len(stages), "tag": params["tag"]}


def with_test_kinds(state: AppState) -> AppState:
    state.kinds.add("test_staged", staged)
    return state


async def claim_as_worker(store: RedisJobStore, job_id: str, attempt: int, lease_s: float = 30.0) -> Job | None:
    """What a worker's start does in Redis: arq's start (retry count, in-progress mark), then the claim."""
    await store.redis.incr(retry_key_prefix + job_id)
    await store.redis.set(in_progress_key_prefix + job_id, b"1", px=int(lease_s * 1000))
    claimed = await claim(store.redis, job_id, attempt, f"test-worker:{attempt}", lease_s)
    return None if claimed is None else claimed[0]
