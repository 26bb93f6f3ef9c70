"""No trace of the machines the project was written on, in any tracked file, results included: no folder of those
machines (a checkout, a worktree, the shared data's folder, a temporary folder in docs and results) and no
command that exists only there. Conditions of a figure are said in words; the project's own command for a quiet
machine is `python -m bench.quiet` (docs/benchmarks.md). Paths inside images and examples stay (/home/app,
/home/me, /usr/share/doc/<package>: a container's, a placeholder, a Debian package's).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# Built from parts, so that this file does not name them itself.
LOAD_WRAPPERS = ("quiet" + "-run", "cpu" + "-run")
WORK, WORKTREE = "/" + "work/", r"\bwt" + r"/i\d+\b"
ANYWHERE = re.compile("|".join([WORK, WORKTREE, r"/home/(?!me\b|app\b|someone\b)\w", *LOAD_WRAPPERS]))
# A temporary folder as a path's start (bench/results/tmp/ is the repository's own work folder, not this).
TEMPORARY = re.compile(r"(?<![\w./<-])/tmp/")
DOCUMENTS = ("README.md", "docs/", "bench/")


def tracked_text() -> dict[str, str]:
    names = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    texts = {}
    for name in names:
        path = REPO / name
        if not path.is_file() or path.stat().st_size > 5_000_000:
            continue
        data = path.read_bytes()
        if b"\0" in data[:8192]:
            continue  # binary: images, archives, databases
        texts[name] = data.decode("utf-8", errors="replace")
    return texts


def traces(name: str, text: str) -> list[str]:
    found = [m.group(0) for m in ANYWHERE.finditer(text)]
    if name.startswith(DOCUMENTS):
        found += [m.group(0) for m in TEMPORARY.finditer(text)]
    return found


def test_no_tracked_file_names_the_authors_machines() -> None:
    found = {name: hits for name, text in tracked_text().items() if (hits := traces(name, text))}
    assert found == {}, "write paths relative to the checkout and conditions in words (docs/benchmarks.md)"


def test_the_check_sees_what_it_looks_for() -> None:
    assert traces("docs/x.md", f"measured under {LOAD_WRAPPERS[0]} in {WORK}main, logs in /tmp/run")
    assert traces("bench/results/x.json", '"checkout": "' + WORK + "wt" + '/i42"')
    assert not traces("docs/x.md", "bench/results/tmp/lists.json, /home/app, /home/me/Documents, <tmp>/x")
