"""scripts/podman_dns.sh: CI says in a second that podman's containers cannot resolve each other's names, and which
package to install, instead of failing the compose smoke after its 600 s wait ("Name or service not known: redis").

A fake `podman` on PATH reports the network backend; the helper and plugin folders are temporary ones holding the
DNS server or not, so each machine CI may meet is played here without changing this one.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "podman_dns.sh"


def check(tmp_path: Path, backend: str, *, helpers: Sequence[str] = (), plugins: Sequence[str] = ()) -> tuple[int, str]:
    fake = tmp_path / "bin"
    fake.mkdir(exist_ok=True)
    (fake / "podman").write_text(f"#!/bin/sh\necho '{backend}'\n")
    (fake / "podman").chmod(0o755)
    for folder, names in (("helpers", helpers), ("plugins", plugins)):
        (tmp_path / folder).mkdir(exist_ok=True)
        for name in names:
            (tmp_path / folder / name).write_text("#!/bin/sh\n")
            (tmp_path / folder / name).chmod(0o755)
    env = os.environ | {"PATH": f"{fake}:{os.environ['PATH']}", "PODMAN_HELPER_DIRS": str(tmp_path / "helpers"),
                        "CNI_PLUGIN_DIRS": str(tmp_path / "plugins")}  # fmt: skip
    done = subprocess.run([str(SCRIPT)], env=env, capture_output=True, text=True, timeout=60, check=False)
    return done.returncode, done.stderr


@pytest.mark.parametrize(
    ("backend", "helpers", "plugins", "named"),
    [
        ("netavark", ["netavark"], [], "apt-get install aardvark-dns"),
        ("cni", [], ["bridge"], "golang-github-containernetworking-plugin-dnsname"),
        ("", [], [], "apt-get install netavark aardvark-dns"),  # podman cannot say: no backend at all
    ],
)
def test_a_podman_without_its_dns_server_fails_naming_the_package(
    tmp_path: Path, backend: str, helpers: list[str], plugins: list[str], named: str
) -> None:
    code, said = check(tmp_path, backend, helpers=helpers, plugins=plugins)
    assert code == 1 and named in said and "Name or service not known" in said, said


@pytest.mark.parametrize(
    ("backend", "helpers", "plugins"), [("netavark", ["aardvark-dns"], []), ("cni", [], ["dnsname"])]
)
def test_a_podman_with_its_dns_server_passes(
    tmp_path: Path, backend: str, helpers: list[str], plugins: list[str]
) -> None:
    assert check(tmp_path, backend, helpers=helpers, plugins=plugins) == (0, "")


def test_ci_installs_the_dns_server_and_checks_it_before_building() -> None:
    ci = (REPO / ".ci" / "run").read_text()
    assert "for helper in netavark aardvark-dns" in ci and "scripts/podman_dns.sh" in ci
    assert ci.index("scripts/podman_dns.sh\n") < ci.index("stage images")
