"""The fault suite's fast subset (issue 20, point 9): the deployment's shape rides out three faults.

Each test runs one fault of bench/chaos.py on a fresh loopback topology (Redis with AOF, a milvus-lite
server, two gateways and two MCP replicas behind round-robin balancers, two workers): a real MCP client
submits a few ingest_text jobs (two keys twice, with new content) around the fault while probes call
search and get_job_status. Afterwards every acknowledged job has ended, and the store holds each
completed document exactly once, whole, in its last submitted version; no process died on its own; no job
ran twice at once. `make chaos` (python -m bench.chaos) runs every fault at a larger N.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.chaos import Config, run_fault
from bench.chaos_faults import FAULTS, QUICK
from scripts.redis_server import SKIP_REASON, redis_binary

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(900)]


@pytest.mark.skipif(redis_binary() is None, reason=SKIP_REASON)
@pytest.mark.parametrize("fault", QUICK)
def test_the_topology_rides_out(fault: str, tmp_path: Path) -> None:
    config = Config(jobs=6, twice=2, paragraphs=30, wait_s=150.0)
    result = run_fault(FAULTS[fault], tmp_path / fault, config)
    assert "error" not in result, "".join(result.get("traceback", [result.get("error", "")]))
    summary = {key: result[key] for key in ("note", "jobs", "documents", "exited", "ran_twice", "probes")}
    assert result["zero_cells"] == dict.fromkeys(result["zero_cells"], 0), json.dumps(summary, indent=1)
    # The 'before' half is submitted before the fault starts: a run where nothing was accepted proves nothing.
    assert result["jobs"]["acknowledged"] >= config.jobs // 2, json.dumps(result["jobs"], indent=1)
