"""Real PDFs from Debian packages for the benchmarks: found where the package installs them, or unpacked without
installing (``apt-get download`` and ``dpkg-deb -x`` into a folder of one's choosing), so a large documentation
package (texlive-publishers-doc is 213 MB) need not be installed to measure on it.

    python -m bench.debian_docs --into ~/.cache/debian-docs graphviz-doc xorg-docs   # unpack these packages
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
from collections import defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

DOC = Path("/usr/share/doc")


def converted(
    module: str, paths: dict[str, str], checkout: Path | None, emit: Callable[[dict[str, str]], dict[str, Any]]
) -> dict[str, Any]:
    """``emit(paths)`` here, or (``checkout``: another checkout's converter, for a before/after) the same module run
    as ``python -m MODULE --emit PATHS --out ANSWER`` with that checkout's docling service, contracts and servicekit."""
    if checkout is None:
        return emit(paths)
    sources = [checkout / part for part in ("services/docling/src", "libs/contracts/src", "libs/servicekit/src")]
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(map(str, sources))}
    with tempfile.TemporaryDirectory() as work:
        request, answer = Path(work) / "paths.json", Path(work) / "out.json"
        request.write_text(json.dumps(paths))
        command = [sys.executable, "-m", module, "--emit", str(request), "--out", str(answer)]
        subprocess.run(command, cwd=Path(__file__).resolve().parent.parent, env=environment, check=True)
        return dict(json.loads(answer.read_text()))


Totals = Callable[[list[dict[str, Any]]], dict[str, Any]]


def labelled_summary(reports: list[dict[str, Any]], totals: Totals) -> dict[str, Any]:
    """A labelled set's reports (one per hand-labelled item; ``{"missing": package}`` where its PDF was not found) in
    ``totals`` for all of them, by generator, by kind and by set (tune or holdout), with the packages missing."""
    groups: dict[str, dict[str, list[dict[str, Any]]]] = {
        "by_generator": defaultdict(list), "by_kind": defaultdict(list), "by_set": defaultdict(list)
    }  # fmt: skip
    for report in reports:
        groups["by_generator"][report["generator"]].append(report)
        if "kind" in report:
            groups["by_kind"][report["kind"]].append(report)
            groups["by_set"][report["set"]].append(report)
    out: dict[str, Any] = {"all": totals(reports)}
    for name, group in groups.items():
        out[name] = {key: totals(value) for key, value in sorted(group.items())}
    out["missing"] = sorted({r["missing"] for r in reports if "missing" in r})
    return out


def locate(file: str, roots: Iterable[Path] = ()) -> Path | None:
    """``file`` (a path under /usr/share/doc) where an unpacked package root or the system holds it."""
    for root in (*roots, Path("/")):
        path = root / DOC.relative_to("/") / file
        if path.is_file():
            return path
    return None


def read_pdf(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if path.suffix == ".gz" else data


def unpack(packages: Iterable[str], into: Path) -> list[str]:
    """Download each package and unpack it under ``into`` (nothing is installed); the packages that failed."""
    into.mkdir(parents=True, exist_ok=True)
    failed = []
    for package in packages:
        with tempfile.TemporaryDirectory() as work:
            done = subprocess.run(["apt-get", "download", package], cwd=work, capture_output=True, text=True)
            debs = list(Path(work).glob("*.deb"))
            if done.returncode != 0 or not debs:
                failed.append(package)
                continue
            subprocess.run(["dpkg-deb", "-x", str(debs[0]), str(into)], check=True)
    return failed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--into", type=Path, required=True, help="folder to unpack the packages into")
    parser.add_argument("packages", nargs="+")
    args = parser.parse_args()
    failed = unpack(args.packages, args.into)
    if failed:
        raise SystemExit(f"could not download: {', '.join(failed)} (run apt-get update first?)")


if __name__ == "__main__":
    main()
