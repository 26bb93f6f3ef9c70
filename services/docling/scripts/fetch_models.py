"""Put docling's standard-pipeline models in one folder (DOCLING_ARTIFACTS_PATH), pinned and checked.

    python services/docling/scripts/fetch_models.py OUT [--lock services/docling/models.lock.json]
    python services/docling/scripts/fetch_models.py OUT --record     # once, on a trusted build: write the sums

Each Hugging Face repository is fetched at the revision the lock names (a commit or tag, never a branch
that moves), then every file is checked against the SHA-256 the lock records: a changed or missing file
stops the build. RapidOCR's models are copied from the installed ``rapidocr`` wheel (pinned in
constraints.txt), where they already are, and checked the same way. An air-gapped build runs the script
with ``--offline SRC`` on a folder carried in by hand: the same layout, the same sums.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
from pathlib import Path

LOCK = Path(__file__).resolve().parents[1] / "models.lock.json"
UNPINNED = "RECORD-ME"


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _files(folder: Path) -> dict[str, str]:
    return {
        str(path.relative_to(folder)): sha256(path)
        for path in sorted(folder.rglob("*"))
        if path.is_file() and ".cache" not in path.parts
    }


def _fetch_repo(entry: dict, target: Path, offline: Path | None) -> None:
    if offline is not None:
        shutil.copytree(offline / entry["folder"], target, dirs_exist_ok=True)
        return
    from huggingface_hub import snapshot_download  # installed with docling-slim[models-local]

    snapshot_download(repo_id=entry["repo_id"], revision=entry["revision"], local_dir=target)


def _pin(entry: dict) -> None:
    """--record: an unpinned revision becomes the commit the repository's main branch is at now."""
    if entry["revision"] == UNPINNED:
        from huggingface_hub import HfApi

        entry["revision"] = HfApi().model_info(entry["repo_id"], revision="main").sha


def _copy_rapidocr(target: Path) -> None:
    import rapidocr

    source = Path(rapidocr.__file__).parent / "models"
    target.mkdir(parents=True, exist_ok=True)
    for model in source.glob("*.onnx"):
        shutil.copy2(model, target / model.name)


def _check(name: str, found: dict[str, str], expected: dict[str, str] | None) -> list[str]:
    if not expected:
        return [f"{name}: the lock records no checksums; run with --record once on a trusted build"]
    problems = [f"{name}: {path} missing" for path in expected if path not in found]
    changed = [path for path in expected if path in found and found[path] != expected[path]]
    problems += [f"{name}: {path} has sha256 {found[path]}, the lock says {expected[path]}" for path in changed]
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--lock", type=Path, default=LOCK)
    parser.add_argument("--offline", type=Path, help="copy the repositories from this folder instead")
    parser.add_argument("--record", action="store_true", help="write the checksums found into the lock")
    args = parser.parse_args(argv)
    lock = json.loads(args.lock.read_text())
    problems: list[str] = []
    for entry in lock["models"]:
        target = args.out / entry["folder"]
        if entry["source"] == "huggingface" and args.record:
            _pin(entry)
        if not args.record and (entry.get("revision") == UNPINNED or not entry.get("sha256")):
            problems.append(f"{entry['folder']}: not pinned yet (revision and sha256); run with --record once")
            continue
        if entry["source"] == "rapidocr-wheel":
            _copy_rapidocr(target)
        else:
            _fetch_repo(entry, target, args.offline)
        found = _files(target)
        if args.record:
            entry["sha256"] = found
        else:
            problems += _check(entry["folder"], found, entry.get("sha256"))
    if args.record:
        args.lock.write_text(json.dumps(lock, indent=2) + "\n")
    for problem in problems:
        print(f"fetch_models: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
