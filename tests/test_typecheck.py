"""mypy over every package (the paths and settings in pyproject.toml's [tool.mypy]) is clean, and every
`type: ignore` left in the code says which error it silences and why. CI runs only pytest: this is how the
type check runs there (`make lint` runs the same `mypy`)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CONFIG = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["mypy"]
# `# type: ignore[code]  # why`: the code names the one error silenced, the comment says why it stays.
IGNORE = re.compile(r"#\s*type:\s*ignore(?P<rest>.*)$")
EXPLAINED = re.compile(r"^\[[a-z-]+(,\s*[a-z-]+)*\]\s+#\s*(?!fmt:|noqa)\S")


def _mypy(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mypy", *args], cwd=REPO, capture_output=True, text=True, check=False, timeout=1200
    )


def test_every_package_is_checked():
    packages = sorted(path.parent.relative_to(REPO).as_posix() for path in REPO.glob("*/*/src"))
    packages = [f"{package}/src" for package in packages if package.startswith(("libs/", "services/"))]
    assert packages, "no src/ packages found under libs/ and services/"
    assert set(packages) <= set(CONFIG["files"]), "add the new package's src/ to [tool.mypy] files"
    assert set(packages) <= set(CONFIG["mypy_path"]), "add the new package's src/ to [tool.mypy] mypy_path"


@pytest.mark.slow
@pytest.mark.timeout(1500)
@pytest.mark.skipif(os.environ.get("LINT_DONE") == "1", reason="mypy ran in CI's lint stage (.ci/run)")
def test_mypy_clean():
    proc = _mypy()
    assert proc.returncode == 0, f"mypy found type errors (run `.venv/bin/mypy`):\n{proc.stdout}{proc.stderr}"


def test_mypy_config_catches_a_type_error(tmp_path):
    """The configuration really checks: a wrong argument type against a contract model is reported."""
    bad = tmp_path / "bad_types.py"
    bad.write_text(
        "from ingestion_contracts.gateway import SearchRequest\n\n\n"
        "def ask(query: str) -> SearchRequest:\n"
        '    return SearchRequest(query=query, top_k="ten")\n'
    )
    proc = _mypy("--no-incremental", str(bad))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert 'Argument "top_k" to "SearchRequest" has incompatible type "str"' in proc.stdout, proc.stdout


def test_every_type_ignore_says_what_and_why():
    unexplained = []
    for folder in ("libs", "services", "bench", "scripts", "tests"):
        for path in sorted((REPO / folder).rglob("*.py")):
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                match = IGNORE.search(line)
                if match and not EXPLAINED.match(match["rest"]) and path != Path(__file__).resolve():
                    unexplained.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert not unexplained, "write `# type: ignore[code]  # why` (or fix the type):\n" + "\n".join(unexplained)
