"""scripts/tool_list_sizes.py, which the README and the size test send readers to, runs and prints what
the size test measures (it broke once, silently, when the profiles left server.py)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from ingestion_mcp.profiles import NAMES

from .conftest import profile_state
from .test_tool_list_size import listed_size

SCRIPT = Path(__file__).resolve().parents[4] / "scripts" / "tool_list_sizes.py"


async def test_the_script_prints_each_profiles_tools_list_size_as_the_size_test_measures_it(app_state: Any) -> None:
    run = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stderr
    totals = {m[1]: int(m[2]) for m in re.finditer(r"^(\w+): (\d+) bytes, \d+ tools;", run.stdout, re.M)}
    assert set(totals) == set(NAMES)
    for profile in NAMES:
        assert totals[profile] == await listed_size(profile_state(app_state, profiles=[profile])), profile
    assert re.search(r"^  search +\d+ +\d+ +\d+ +\d+$", run.stdout, re.M), "a row per tool: total, descr, input, output"
