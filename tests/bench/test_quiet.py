"""bench.quiet: the project's own way to take figures on a quiet machine and say so (what `make bench-quiet` runs)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from bench import quiet


def test_the_conditions_of_a_run_are_recorded(tmp_path: Path) -> None:
    out = tmp_path / "conditions.json"
    assert quiet.main(["--max-load", "1000", "--out", str(out), "--", sys.executable, "-c", "pass"]) == 0
    conditions = json.loads(out.read_text())
    assert conditions["cores"] >= 1 and len(conditions["load_before"]) == len(conditions["load_after"]) == 3
    assert conditions["exit"] == 0 and "cores, load" in quiet.in_words(conditions)


def test_a_busy_machine_is_refused_and_the_command_never_runs(tmp_path: Path, capsys) -> None:
    marker = tmp_path / "ran"
    code = quiet.main(["--max-load", "-1", "--wait", "0", "--", sys.executable, "-c", f"open({str(marker)!r}, 'w')"])
    assert code == 3 and not marker.exists()
    assert "stayed over -1.0" in capsys.readouterr().err


def test_the_commands_exit_code_is_passed_on() -> None:
    assert quiet.main(["--max-load", "1000", "--", sys.executable, "-c", "raise SystemExit(4)"]) == 4
