"""yamllint over the deployment YAML; bash -n and shellcheck over the smoke script."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CONFIG = Path(__file__).resolve().parent / "yamllint.yaml"
SMOKE = REPO / "scripts" / "compose_smoke.sh"
SCRIPTS = [SMOKE, REPO / "scripts" / "base_image.sh", REPO / "scripts" / "build_images.sh", REPO / ".ci" / "run"]


def test_yamllint_clean():
    targets = ["docker-compose.yml", "docker-compose.dev.yml", "docker-compose.milvus-lite.yml", "openshift"]
    proc = subprocess.run(
        [sys.executable, "-m", "yamllint", "-c", str(CONFIG), "-f", "parsable", *targets],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_smoke_script_parses(script):
    proc = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_smoke_script_shellcheck_clean(script):
    shellcheck = shutil.which("shellcheck")
    if shellcheck is None:
        pytest.skip("shellcheck not installed (apt-get install shellcheck)")
    proc = subprocess.run([shellcheck, "-x", str(script)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout


def test_yamllint_config_catches_broken_yaml(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("a: 1\na: 2\nb:   [x,\n")
    proc = subprocess.run(
        [sys.executable, "-m", "yamllint", "-c", str(CONFIG), str(bad)], capture_output=True, text=True, check=False
    )
    assert proc.returncode != 0
