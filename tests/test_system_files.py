"""Every test that reads a file of a Debian package skips, naming the package to install, where it is missing
(tests/.../test_chatgpt.py errored on a machine without debian-refcard), and CI installs every such package.

The files and their packages are listed once, in scripts/system_files.py; a test names one only through it.
"""

from __future__ import annotations

import re
from pathlib import Path

from scripts.system_files import PACKAGE_OF, missing, needs

REPO = Path(__file__).resolve().parents[1]
# A file inside a package's folder (the folder alone, "/usr/share/doc", is prose, not a file a test reads).
SYSTEM_FILE = re.compile(r"/usr/(?:share/doc|lib)/[\w.+-]+/[\w./+-]+")


def sources() -> list[Path]:
    return sorted({*REPO.glob("tests/**/*.py"), *REPO.glob("services/*/tests/**/*.py"), REPO / "conftest.py"})


def test_no_test_names_a_package_file_but_through_the_list() -> None:
    named = {str(path.relative_to(REPO)): SYSTEM_FILE.findall(path.read_text(encoding="utf-8")) for path in sources()}
    assert {path: found for path, found in named.items() if found} == {}, (
        "name the file in scripts/system_files.py (with its package) and use needs() / system_file()"
    )


def test_ci_installs_every_package_a_test_reads() -> None:
    ci = (REPO / ".ci" / "run").read_text()
    installed = set(re.findall(r"missing\+=\(([\w.+-]+)\)", ci))
    assert set(PACKAGE_OF.values()) - installed == set(), "add a [ -e FILE ] || missing+=(PACKAGE) line to .ci/run"


def test_a_missing_file_skips_naming_its_package(tmp_path: Path) -> None:
    absent = Path("/usr/share/doc") / "no-such-package-here" / "manual.pdf"
    mark = needs(absent)
    assert mark.args == (True,) and "apt-get install -y no-such-package-here" in mark.kwargs["reason"]
    assert missing([tmp_path]) is None and needs(tmp_path).args == (False,)
