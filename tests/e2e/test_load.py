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
    assert report["stray_chunk_rows"] == 0 and report["documents_stored"] == report["documents_acknowledged"]
    assert report["ok"] and report["ingest"]["p95_ms"] is not None and report["search"]["p50_ms"] is not None
