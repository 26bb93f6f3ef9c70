"""A real folder at scale (issue 48, point 8): sync_folder on --files real documents through a real MCP client (stdio).

The folder is made from the system's own documentation (/usr/share/doc: Debian's -doc packages and every package's
README, copyright, Markdown, text, HTML and PDF files), copied in a fixed order, with hostile names mixed in (bytes
that are not UTF-8, a newline, NFC and NFD twins, a 255-byte name, a path past the 2,048 characters a key holds, an
empty file, a Latin-1 text), an ignore file and compressed files (skipped by type). It answers:

- ``first``: the first sync of the whole folder (seconds, files/s, counts);
- ``unchanged``: re-syncs with nothing changed, ``--repeats`` times (median, p95; goal < 1.5 s at 10,000 files);
- ``watched``: with the folder watched, 100 files changed at once (a new marker word each): seconds until the last
  of the 100 words is found by search (goal < 5 s);
- ``accounted``: every file of the folder is ingested, unchanged, ignored (a folder counts once), excluded, skipped
  by type, or failed with its reason: their sum against the files on disk (hidden entries counted apart).

    python -m bench.sync_real [--files 10000] [--repeats 5] [--out bench/results/sync_real.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import unicodedata
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import stdio_client

from scripts.service_stack import call, succeeded

from .pdf_scale import ROOT, server
from .sync import sync

SOURCE = Path("/usr/share/doc")
KINDS = (".md", ".txt", ".html", ".htm", ".pdf", ".rst")
COLLECTION = "sync_real"
CHANGED = 100
GROUP = 50  # files a group word marks (the search tool's top_k is at most 50)
WATCH_TIMEOUT_S = 120.0


def candidates(limit: int) -> list[Path]:
    """Real documents in a fixed order: Markdown, text, HTML, reStructuredText, READMEs and copyrights under 256 KB,
    with one PDF under 300 KB in every 200 files (a PDF converts at ~50-75 ms a page: a folder of big manuals would
    measure the converter, not the sync)."""
    found: list[Path] = []
    for path in sorted(SOURCE.rglob("*")):
        if not path.is_file() or path.is_symlink():
            continue
        name, suffix, size = path.name.lower(), path.suffix.lower(), path.stat().st_size
        if (suffix == ".pdf" and size < 300 << 10) or (
            (suffix in KINDS or name.startswith("readme") or name == "copyright") and size < 256 << 10
        ):
            found.append(path)
    pdfs = [p for p in found if p.suffix.lower() == ".pdf"][: max(1, limit // 200)]
    others = [p for p in found if p.suffix.lower() != ".pdf"][: limit - len(pdfs)]
    step = max(1, len(others) // max(1, len(pdfs)))
    mixed = []
    for n, path in enumerate(others):
        if n % step == 0 and pdfs:
            mixed.append(pdfs.pop())
        mixed.append(path)
    return (mixed + pdfs)[:limit]


def hostile(folder: Path) -> int:
    """Names any file system holds, mixed in; how many files."""
    text = "Hostile names are files too: each one is read, or listed as failed with its reason.\n" * 3
    base = os.fsencode(folder / "hostile")
    os.makedirs(base, exist_ok=True)
    deep = "/".join(["d" * 240] * 9)
    names = [b"bad\xffname.md", b"new\nline.md", "café.md".encode(), unicodedata.normalize("NFD", "café.md").encode(),
             ("L" * 252 + ".md").encode(), f"{deep}/deep.md".encode(), b"empty.md", b"latin1.txt"]  # fmt: skip
    for name in names:
        path = os.path.join(base, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        body = b"" if name == b"empty.md" else ("Caf\xe9 " * 20).encode("latin-1") if name == b"latin1.txt" else text
        with open(path, "wb") as handle:
            handle.write(body if isinstance(body, bytes) else body.encode())
    return len(names)


def build(folder: Path, files: int) -> dict[str, int]:
    """The folder: `files` real documents in sub-folders of 500, hostile names, an ignore file, compressed files."""
    made = {"real": 0, "hostile": hostile(folder), "gz": 0, "ignored": 0}
    for n, source in enumerate(candidates(files)):
        target = folder / f"part{n // 500:03}" / f"{n:05}-{source.name}"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        made["real"] += 1
    (folder / "build").mkdir()
    for n in range(20):
        (folder / "build" / f"generated{n}.html").write_text(f"<p>Generated page {n}</p>")
        (folder / f"part000/notes{n}.log").write_text(f"log line {n}\n")
    made["ignored"] = 21  # build/ (one folder) and 20 .log files
    (folder / ".gitignore").write_text("build/\n*.log\n")
    for n, source in enumerate(sorted(SOURCE.rglob("changelog*.gz"))[:50]):
        shutil.copyfile(source, folder / f"part000/{n:03}-{source.name}")
        made["gz"] += 1
    return made


def on_disk(folder: Path) -> dict[str, int]:
    """Entries as the walk meets them: files outside ignored folders, ignored folders once, hidden entries."""
    counts = {"files": 0, "hidden": 0}
    for top, dirs, names in os.walk(os.fsencode(folder)):
        hidden = [d for d in dirs if d.startswith(b".")]
        counts["hidden"] += len(hidden) + sum(1 for n in names if n.startswith(b"."))
        dirs[:] = [d for d in dirs if not d.startswith(b".") and not (top == os.fsencode(folder) and d == b"build")]
        counts["files"] += sum(1 for n in names if not n.startswith(b"."))
    return counts


async def watched_change(client: Client, folder: Path) -> dict[str, Any]:
    """100 files changed at once under a watch: seconds until each one's new word is searchable. Each file also holds
    the word of its group of 50, and each round searches the two group words (top 50): one search per word would
    itself take 100 searches a round (~6 s at 60 ms each), more than the goal being measured."""
    await succeeded(client, "sync_folder", folder=str(folder), collection=COLLECTION, watch=True)
    await anyio.sleep(5)  # the watcher's catch-up sync (nothing to do) is over
    words = [f"zqx{n:03}marker" for n in range(CHANGED)]
    groups = {f"zqxgroup{chr(97 + n // GROUP)}": words[n : n + GROUP] for n in range(0, CHANGED, GROUP)}
    started = time.perf_counter()
    for n, word in enumerate(words):
        group = f"zqxgroup{chr(97 + n // GROUP)}"
        (folder / "changed" / f"c{n:03}.md").parent.mkdir(exist_ok=True)
        (folder / "changed" / f"c{n:03}.md").write_text(
            f"# Change {n}\n\nThe new word of this file is {word}, its group {group}.\n"
        )
    missing, seen, searches = set(words), {}, 0
    while missing and time.perf_counter() - started < WATCH_TIMEOUT_S:
        for group, members in groups.items():
            if not missing.intersection(members):
                continue
            arguments = {"query": group, "collection": COLLECTION, "mode": "keyword", "top_k": GROUP}
            hits = (await call(client, "search", **arguments)).get("results") or []
            searches += 1
            for word in missing.intersection(members):
                if any(word in hit["text"] for hit in hits):
                    missing.discard(word)
                    seen[word] = time.perf_counter() - started
        await anyio.sleep(0.1)
    return {"files": CHANGED, "searchable_s": round(max(seen.values()), 2) if seen else None, "missing": len(missing),
            "searches": searches}  # fmt: skip


async def phase(name: str, step: Awaitable[dict[str, Any]]) -> dict[str, Any]:
    """One phase, with the 1-minute load average at its start and end (the machine's other work shows there)."""
    load = os.getloadavg()[0]
    print(f"{time.strftime('%H:%M:%S')} {name}: started (load {load:.1f})", file=sys.stderr, flush=True)
    result = await step
    result["load"] = [round(load, 2), round(os.getloadavg()[0], 2)]
    print(f"{time.strftime('%H:%M:%S')} {name}: {json.dumps(result, default=str)[:300]}", file=sys.stderr, flush=True)
    return result


async def run(files: int, repeats: int, work: Path) -> dict[str, Any]:
    folder, data = work / "docs", work / "data"
    made = build(folder, files)
    disk = on_disk(folder)
    params = server(ROOT, folder, data)
    with open(work / "server.log", "w") as errlog:
        async with Client(stdio_client(params, errlog), read_timeout_seconds=7200) as client:
            first = await phase("first sync", sync(client, folder, COLLECTION))
            again = [await phase("unchanged re-sync", sync(client, folder, COLLECTION)) for _ in range(repeats)]
            watched = await phase("watched change", watched_change(client, folder))
    seconds = [r["seconds"] for r in again]
    counts = first["counts"]
    listed = sum(
        counts.get(k, 0) for k in ("added", "replaced", "unchanged", "failed", "skipped", "ignored", "excluded")
    )
    return {
        "made": made, "on_disk": disk, "first": first,
        "unchanged": {"runs": seconds, "median_s": statistics.median(seconds),
                      "p95_s": sorted(seconds)[max(0, round(0.95 * len(seconds)) - 1)], "counts": again[-1]["counts"]},
        "watched": watched,
        "accounted": {"answer": listed, "on_disk_files_and_ignored_folders": disk["files"] + 1,
                      "all": listed == disk["files"] + 1},
    }  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.sync_real", description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "sync_real.json")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="sync-real-") as tmp:
        result = anyio.run(run, args.files, args.repeats, Path(tmp))
    result["conditions"] = {"files": args.files, "load": os.getloadavg()[0], "cores": os.cpu_count()}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1, default=str))
    print(json.dumps({k: result[k] for k in ("first", "unchanged", "watched", "accounted")}, default=str)[:3000])


if __name__ == "__main__":
    main()
