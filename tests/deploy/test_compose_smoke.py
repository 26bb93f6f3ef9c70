"""The compose deployment run for real, in the suite (issue 27): scripts/compose_smoke.py builds every image from the
repository (on a Debian bookworm base made from apt, Python 3.11.2: AIRGAP=1), starts the stack with the milvus-lite
stand-in under podman-compose (or docker compose v2), drives it through a real MCP client over HTTP, breaks it and
tears it down. An image that does not build or start is a failing test here, not a note.

Needs a container engine: podman (CONTAINERS_CONF=scripts/podman/containers.conf) or Docker. On a laptop without one
the test is skipped; under CI (CI=true; .ci/run installs podman) a missing engine fails it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.slow, pytest.mark.timeout(3600)]


def engine() -> str | None:
    if shutil.which("podman"):
        return "podman"
    if shutil.which("docker") and subprocess.run(["docker", "info"], capture_output=True, check=False).returncode == 0:
        return "docker"
    return None


def test_the_compose_stack_builds_starts_serves_and_rides_out_its_faults(tmp_path: Path) -> None:
    found = engine()
    if found is None:
        message = "no container engine (apt-get install podman buildah runc mmdebstrap; see docs/deployment.md)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    if (REPO / ".env").exists():
        pytest.skip("a .env is in the repository root: the smoke writes its own (move yours away to run it)")
    env = {**os.environ, "ENGINE": found}
    if found == "podman":
        env.setdefault("CONTAINERS_CONF", str(REPO / "scripts" / "podman" / "containers.conf"))
        env.setdefault("AIRGAP", "1")  # no image registry here: bases from Debian packages (scripts/base_image.sh)
        env.setdefault("HOST_PIP", "1")  # pip in the builds sees what this machine's pip sees
        if os.environ.get("CI"):  # a fresh machine: no cache to gain, the disk holds the finished images only
            env.setdefault("LAYERS", "false")
    # CI builds every image once, in its images stage (.ci/run), before the suite: the smoke runs them as built.
    built = ["--no-build"] if os.environ.get("IMAGES_BUILT") == "1" else []
    proc = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "compose_smoke.py"), *built],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=3500, check=False,
    )  # fmt: skip
    header = "step" + " " * 20  # the table's header line (then its rows, the summary, each failure's reason)
    table = proc.stdout[proc.stdout.rfind(header) :] if header in proc.stdout else proc.stdout[-3000:]
    print(table)
    (tmp_path / "smoke.log").write_text(proc.stdout + proc.stderr)
    assert proc.returncode == 0, f"{table}\n--- stderr (tail) ---\n{proc.stderr[-6000:]}"
    summary = re.search(r"compose smoke: (\d+) passed, (\d+) failed", proc.stdout)
    assert summary and summary[2] == "0" and int(summary[1]) >= (10 if built else 12), table
