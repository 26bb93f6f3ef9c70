"""Every wheel and sdist `make dist` builds carries the project's licence: `python -m scripts.dist_licences dist/`.

A wheel must hold LICENSE and NOTICE under its .dist-info/licenses/ (PEP 639) with the root's Apache-2.0 text, and
its METADATA must declare `License-Expression: Apache-2.0` and both files; an sdist must hold both files at its top
and the same declaration in PKG-INFO. scripts/build_dist.py runs it on everything it built; a file missing fails the
build with the distribution's name and what it lacks.
"""

from __future__ import annotations

import sys
import tarfile
import zipfile
from email.parser import HeaderParser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXPRESSION = "Apache-2.0"
FILES = ("LICENSE", "NOTICE")


def _metadata_problems(text: str) -> list[str]:
    headers = HeaderParser().parsestr(text)
    problems = []
    if headers.get("License-Expression") != EXPRESSION:
        problems.append(f"License-Expression is {headers.get('License-Expression')!r}, not {EXPRESSION!r}")
    declared = set(headers.get_all("License-File") or [])
    problems += [f"License-File: {name} is not declared" for name in FILES if name not in declared]
    return problems


def wheel_problems(path: Path) -> list[str]:
    with zipfile.ZipFile(path) as wheel:
        names = set(wheel.namelist())
        info = next((name.split("/")[0] for name in names if name.endswith(".dist-info/METADATA")), None)
        if info is None:
            return ["no .dist-info/METADATA"]
        problems = _metadata_problems(wheel.read(f"{info}/METADATA").decode("utf-8"))
        for name in FILES:
            member = f"{info}/licenses/{name}"
            if member not in names:
                problems.append(f"{member} is missing")
            elif name == "LICENSE" and wheel.read(member) != (ROOT / "LICENSE").read_bytes():
                problems.append(f"{member} is not the Apache-2.0 text of the repository's LICENSE")
    return problems


def sdist_problems(path: Path) -> list[str]:
    with tarfile.open(path) as sdist:
        members = {member.name: member for member in sdist.getmembers()}
        top = path.name.removesuffix(".tar.gz")
        pkg_info = sdist.extractfile(members[f"{top}/PKG-INFO"]) if f"{top}/PKG-INFO" in members else None
        if pkg_info is None:
            return ["no PKG-INFO"]
        problems = _metadata_problems(pkg_info.read().decode("utf-8"))
        for name in FILES:
            member = members.get(f"{top}/{name}")
            if member is None or not member.isfile():  # a link would point outside the unpacked sdist
                problems.append(f"{name} is missing (or not a regular file)")
    return problems


def check(folder: Path) -> dict[str, list[str]]:
    """{file name: what it lacks} for every wheel and sdist in ``folder`` that lacks something."""
    found = {}
    for path in sorted(folder.glob("*.whl")) + sorted(folder.glob("*.tar.gz")):
        problems = wheel_problems(path) if path.suffix == ".whl" else sdist_problems(path)
        if problems:
            found[path.name] = problems
    return found


def main(argv: list[str] | None = None) -> int:
    folder = Path((argv if argv is not None else sys.argv[1:])[0])
    if not any(folder.glob("*.whl")):
        print(f"dist_licences: no wheels in {folder}", file=sys.stderr)
        return 2
    found = check(folder)
    for name, problems in found.items():
        print(f"dist_licences: {name}: {'; '.join(problems)}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
