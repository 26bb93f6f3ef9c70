"""The project's licence (issue 50, point 3): Apache-2.0 at the root with a NOTICE that credits the bundled model,
declared by SPDX expression in every pyproject, and carried by every wheel and sdist (scripts/dist_licences.py,
which `make dist` runs on everything it builds; here on a real wheel and sdist of the smallest distribution)."""

from __future__ import annotations

import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from scripts import build_dist, dist_licences, registry

ROOT = Path(__file__).resolve().parents[2]
PROJECTS = [ROOT / project for project in build_dist.PROJECTS] + [ROOT / "packaging" / "minilm"]


def test_the_root_carries_apache_2_and_a_notice_crediting_the_bundled_model() -> None:
    text = (ROOT / "LICENSE").read_text()
    assert text.lstrip().startswith("Apache License") and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text
    notice = (ROOT / "NOTICE").read_text()
    for credit in ("all-MiniLM-L6-v2", "Apache License 2.0", "sentence-transformers", "Nils Reimers", "Microsoft"):
        assert credit in notice, credit


@pytest.mark.parametrize("project", PROJECTS, ids=lambda path: path.name)
def test_every_distribution_declares_the_licence_by_spdx_and_ships_its_files(project: Path) -> None:
    pyproject = tomllib.loads((project / "pyproject.toml").read_text())
    assert pyproject["project"]["license"] == "Apache-2.0"
    assert pyproject["project"]["license-files"] == ["LICENSE", "NOTICE"]
    assert (project / "LICENSE").read_bytes() == (ROOT / "LICENSE").read_bytes()
    assert (project / "NOTICE").is_file()
    assert registry.mcpb_manifest("0")["license"] == "Apache-2.0"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The contracts distribution as `make dist` builds it (sdist, then the wheel from it)."""
    out = tmp_path_factory.mktemp("dist")
    build_dist.build(ROOT / "libs" / "contracts", out)
    return out


def test_a_built_wheel_and_sdist_carry_the_licence(built: Path) -> None:
    assert {path.suffix for path in built.iterdir()} == {".whl", ".gz"}
    assert dist_licences.check(built) == {}
    run = subprocess.run([sys.executable, "-m", "scripts.dist_licences", str(built)], cwd=ROOT, capture_output=True)
    assert run.returncode == 0, run.stderr


def test_a_wheel_without_its_notice_fails_the_check(built: Path, tmp_path: Path) -> None:
    (wheel,) = built.glob("*.whl")
    stripped = tmp_path / wheel.name
    with zipfile.ZipFile(wheel) as source, zipfile.ZipFile(stripped, "w") as target:
        for item in source.infolist():
            if not item.filename.endswith("/licenses/NOTICE"):
                target.writestr(item, source.read(item))
    problems = dist_licences.check(tmp_path)
    assert list(problems) == [wheel.name] and "licenses/NOTICE is missing" in problems[wheel.name][0]
    run = subprocess.run([sys.executable, "-m", "scripts.dist_licences", str(tmp_path)], cwd=ROOT, capture_output=True)
    assert run.returncode == 1 and wheel.name in run.stderr.decode()
