"""The load test (scripts/load_test.py, `make load`) kept alive in CI: 4 clients for ~15 s."""

from __future__ import annotations

import pytest
from load_test import run_load
from service_stack import ServiceStack

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(300)]


async def test_short_load_run_has_no_errors_and_no_lost_or_duplicated_documents(stack: ServiceStack) -> None:
    report = await run_load(stack, clients=4, duration_s=15)
    assert report["errors"] == 0, report["error_samples"]
    assert report["ingests"] > 0 and report["searches"] > 0
    assert report["lost"] == [] and report["unexpected"] == [] and report["duplicated"] == 0
    assert report["unreadable_chunks"] == {}  # every listed document's chunks read back
    assert report["stray_chunk_rows"] == 0 and report["documents_stored"] == report["documents_acknowledged"]
    assert report["ok"] and report["ingest"]["p95_ms"] is not None and report["search"]["p50_ms"] is not None


async def test_short_load_run_through_the_balanced_queue_topology_loses_nothing(stack: ServiceStack) -> None:
    """`make load`'s topology: Redis, two MCP replicas over HTTP and a worker behind a round-robin balancer."""
    from load_topology import http_client_factory, queue_topology
    from redis_server import SKIP_REASON, redis_binary

    if redis_binary() is None:
        pytest.skip(SKIP_REASON)
    with queue_topology(stack, replicas=2, workers=1) as url:
        report = await run_load(stack, clients=4, duration_s=15, connect=http_client_factory(url, stack.headers()))
    assert report["errors"] == 0, report["error_samples"]
    assert report["ingests"] > 0 and report["searches"] > 0
    assert report["lost"] == [] and report["unexpected"] == [] and report["duplicated"] == 0
    assert report["unreadable_chunks"] == {} and report["stray_chunk_rows"] == 0
    assert report["ok"] and report["documents_stored"] == report["documents_acknowledged"]
