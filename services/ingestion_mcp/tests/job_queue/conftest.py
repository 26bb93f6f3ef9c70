"""A real Redis (Debian's redis-server on a loopback port) for the job store and worker tests."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from ingestion_mcp.jobkinds import JOB_KINDS
from ingestion_mcp.jobqueue import RedisJobStore
from ingestion_mcp.jobs import ProgressFn
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


# A job kind for the queue machinery's own tests: named stages, each taking `stage_s`, each logged
# in Redis when it ends, so a test sees exactly which stages ran (what a real ingest's stages are).
async def staged(state: AppState, params: dict[str, Any], progress: ProgressFn) -> dict[str, Any]:
    store: RedisJobStore = state.jobs  # type: ignore[assignment]  # built with a broker URL: the Redis store
    stages = params["stages"]
    for number, stage in enumerate(stages):
        await progress(number / len(stages), stage)
        if stage == "storing":  # atomic: once begun, it ends (as the pipeline shields its write)
            await asyncio.shield(asyncio.sleep(params["stage_s"]))
        else:
            await asyncio.sleep(params["stage_s"])
        await store.redis.rpush(f"test:ran:{params['tag']}", stage)
    await progress(1.0, "done")
    await asyncio.sleep(params.get("after_s", 0))  # the moment between the last step and the answer
    return {"stages": len(stages), "tag": params["tag"]}


JOB_KINDS["test_staged"] = staged
