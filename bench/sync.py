"""Folder sync (issue 29) end to end: sync_folder through a real MCP client (stdio) on one real server process.

Phases, each timed with the server tree's peak RSS (every process under this one, sampled every 0.2 s):

- ``first``: a fresh collection from a ``--files`` mixed folder (70 % Markdown, 20 % text, 5 % one-page PDFs,
  5 % DOCX, in sub-folders of 100);
- ``unchanged``: re-syncs with nothing changed, ``--repeats`` times (median and p95; goal < 2 s for 1,000);
- ``touched``: every file's mtime moved, its content kept (a copy, a checkout): two re-syncs;
- ``edits``: a re-sync after 10 edits, 5 deletions and 5 additions; then keyword searches check that every
  edited and added file's new marker word is found and that no deleted or replaced marker is;
- ``watch``: seconds from a saved edit to its new word being searchable while the folder is watched
  (``watch: true``; polled every 0.1 s; goal < 5 s), when sync_folder offers ``watch``;
- ``big``: on a fresh server, ``--big`` small text files: first sync, no-change re-syncs and save -> searchable
  while watched, peak RSS against the ``--files`` run (bounded memory: the engine holds one small tuple per
  document, never bodies).

A call that outlasts ``sync_wait_s`` answers a job_id: the bench polls get_job_status (0.1 s) as an agent would.

    python -m bench.sync [--files 1000] [--big 10000] [--repeats 7] [--out bench/results/sync.json]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import stdio_client

from scripts.service_stack import succeeded

from .pdf_scale import MB, ROOT, TreeSampler, server, tree_mb
from .results_io import write_json
from .sync_docs import Made, mixed_folder, small_text_folder, write

COLLECTION = "sync_bench"
POLL_S = 0.1
WATCH_EDITS = 10
WATCH_TIMEOUT_S = 60.0


async def sync(client: Client, folder: Path, collection: str, **extra: Any) -> dict[str, Any]:
    """One sync_folder, waited for (the job polled when it outlasts the call), timed, with the tree's peak RSS."""
    started = time.perf_counter()
    with TreeSampler().sampling() as sampler:
        answer = await succeeded(client, "sync_folder", folder=str(folder), collection=collection, **extra)
        polls = 0
        if job_id := answer.get("job_id"):
            while True:
                await anyio.sleep(POLL_S)
                polls += 1
                job = (await succeeded(client, "get_job_status", job_id=job_id)).get("job") or {}
                if job.get("status") != "running":
                    answer = dict(job.get("result") or {"error": job.get("error"), "status": job.get("status")})
                    break
        seconds = time.perf_counter() - started
        now = sum(rss for _, rss in TreeSampler.tree().values())  # a call shorter than one sample still counts
    counts = answer.get("counts") or {}
    handled = sum(counts.values())
    return {
        "seconds": round(seconds, 3),
        "files_per_s": round(handled / seconds, 1) if seconds else None,
        "counts": counts,
        "failed": answer.get("failed") or [],
        "error": answer.get("error"),
        "job_polls": polls,
        "peak_tree_mb": round(max(sampler.tree_peak, now) / MB, 1),
        "peak_server_mb": max((p["mb"] for p in peaks(sampler) if p["process"] == "mcp server"), default=None),
        "peak_mb": peaks(sampler),
    }


def peaks(sampler: TreeSampler) -> list[dict[str, Any]]:
    each = ({"process": name, "mb": round(rss / MB, 1)} for name, rss in sampler.peaks.values())
    return sorted(each, key=lambda p: -p["mb"])


def spread(runs: list[dict[str, Any]]) -> dict[str, Any]:
    seconds = sorted(r["seconds"] for r in runs)
    p95 = seconds[min(len(seconds) - 1, round(0.95 * (len(seconds) - 1)))]
    return {"runs": len(runs), "median_s": round(statistics.median(seconds), 3), "p95_s": p95,
            "min_s": seconds[0], "max_s": seconds[-1], "seconds": seconds,
            "counts": runs[-1]["counts"], "peak_tree_mb": max(r["peak_tree_mb"] for r in runs)}  # fmt: skip


async def found(client: Client, word: str, collection: str) -> list[str]:
    """Sources of the passages a keyword search for ``word`` returns that really hold it."""
    answer = await succeeded(client, "search", query=word, collection=collection, mode="keyword", top_k=3)
    return [hit["source"] for hit in answer.get("results") or [] if word in hit["text"]]


async def touch_all(client: Client, folder: Path) -> list[dict[str, Any]]:
    """Every file's mtime moved, content kept (a copy, a checkout): two re-syncs, each hashing what it must."""
    later = time.time_ns() + 10**9
    for path in folder.rglob("*"):
        if path.is_file():
            os.utime(path, ns=(later, later))
    return [await sync(client, folder, COLLECTION) for _ in range(2)]


def change(folder: Path, made: list[Made]) -> dict[str, list[Made]]:
    """10 edits (8 Markdown/text, a PDF, a DOCX), 5 deletions, 5 additions, spread over the folder."""
    count = len(made)
    step = max(count // 20, 1)
    by_kind = {k: [m for m in made if m.kind == k] for k in ("md", "txt", "pdf", "docx")}
    texts = [m for m in made if m.kind in ("md", "txt")]
    chosen = [texts[(i * 7 * step) % len(texts)] for i in range(8)]
    chosen += [by_kind[k][len(by_kind[k]) // 2] for k in ("pdf", "docx") if by_kind[k]]
    edited = [write(folder, int(m.marker[4:]), edit=1, kind=m.kind) for m in chosen]
    gone = [m for m in texts[3::step] if m not in chosen][:5]
    for m in gone:
        (folder / m.rel).unlink()
    added = [write(folder, count + i) for i in range(5)]
    return {"edited": edited, "replaced_old": chosen, "deleted": gone, "added": added}


async def verify(client: Client, changed: dict[str, list[Made]]) -> dict[str, Any]:
    """After the edit sync: what must be found is found (in its own file), what must be gone is gone."""
    missing, stale = [], []
    for m in changed["edited"] + changed["added"]:
        if not any(source.endswith(Path(m.rel).name) for source in await found(client, m.marker, COLLECTION)):
            missing.append(m.marker)
    for m in changed["deleted"] + changed["replaced_old"]:
        if await found(client, m.marker, COLLECTION):
            stale.append(m.marker)
    checked = len(changed["edited"]) + len(changed["added"]) + len(changed["deleted"]) + len(changed["replaced_old"])
    return {"checked_words": checked, "missing_new": missing, "still_found_old": stale, "ok": not missing and not stale}


async def watch_phase(client: Client, folder: Path, edits: int = WATCH_EDITS) -> dict[str, Any]:
    """Save -> searchable while watched; 'not available' when sync_folder has no ``watch`` argument."""
    tools = {t.name: t for t in (await client.list_tools()).tools}
    if "watch" not in (tools["sync_folder"].input_schema.get("properties") or {}):
        return {"available": False, "TODO": "sync_folder has no `watch` argument yet: rerun bench.sync once it has"}
    started = await succeeded(client, "sync_folder", folder=str(folder), collection=COLLECTION, watch=True)
    delays, timeouts = [], 0
    for n in range(edits):
        index = 900_000 + n  # small Markdown files of their own, alternately new and edited
        made = write(folder, index if n % 2 == 0 else index - 1, edit=n + 1, kind="md", prefix="watched")
        saved = time.perf_counter()
        while not await found(client, made.marker, COLLECTION):
            if time.perf_counter() - saved > WATCH_TIMEOUT_S:
                timeouts += 1
                break
            await anyio.sleep(POLL_S)
        else:
            delays.append(time.perf_counter() - saved)
    delays.sort()
    return {"available": True, "started": started.get("message"), "edits": edits, "timeouts": timeouts,
            "median_s": round(statistics.median(delays), 2) if delays else None,
            "p95_s": round(delays[min(len(delays) - 1, round(0.95 * (len(delays) - 1)))], 2) if delays else None,
            "seconds": [round(d, 2) for d in delays]}  # fmt: skip


async def session(folder: Path, log_file: Path, body: Any) -> dict[str, Any]:
    """A fresh server (its own data dir) over stdio, its JSON log to ``log_file``; ``body(client)`` runs the phases."""
    with tempfile.TemporaryDirectory(prefix="sync-bench-data-") as data:
        params = server(ROOT, folder, Path(data))
        with log_file.open("w") as errlog:
            async with Client(stdio_client(params, errlog), read_timeout_seconds=3600) as client:
                await succeeded(client, "get_collections")  # services up, model loaded
                await anyio.sleep(2)
                return {"idle_tree_mb": tree_mb(), **await body(client)}


async def mixed(folder: Path, files: int, repeats: int, logs: Path) -> dict[str, Any]:
    started = time.perf_counter()
    made = mixed_folder(folder, files)
    kinds = {k: sum(1 for m in made if m.kind == k) for k in ("md", "txt", "pdf", "docx")}
    generated = {"files": files, "kinds": kinds, "seconds": round(time.perf_counter() - started, 1),
                 "mb": round(sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / MB, 2)}  # fmt: skip

    async def body(client: Client) -> dict[str, Any]:
        log(f"first sync of {files} files ...")
        first = await sync(client, folder, COLLECTION)
        log(f"  {first['seconds']} s {first['counts']}")
        again = [await sync(client, folder, COLLECTION) for _ in range(repeats)]
        log(f"  unchanged: {[r['seconds'] for r in again]}")
        touched = await touch_all(client, folder)
        log(f"  touched: {[r['seconds'] for r in touched]}")
        changed = change(folder, made)
        edits = await sync(client, folder, COLLECTION)
        edits["expected"] = {"added": 5, "replaced": len(changed["edited"]), "removed": len(changed["deleted"]),
                             "unchanged": files - len(changed["edited"]) - len(changed["deleted"])}  # fmt: skip
        edits["search_check"] = await verify(client, changed)
        log(f"  edits: {edits['seconds']} s {edits['counts']} check ok={edits['search_check']['ok']}")
        watched = await watch_phase(client, folder)
        log(f"  watch: {watched}")
        return {"first": first, "unchanged": spread(again), "unchanged_runs": again, "touched": touched, "edits": edits,
                "watch": watched, "after_tree_mb": tree_mb()}  # fmt: skip

    return {"folder": generated, **await session(folder, logs / "server-mixed.log", body)}


async def big(folder: Path, files: int, repeats: int, logs: Path) -> dict[str, Any]:
    written = small_text_folder(folder, files)

    async def body(client: Client) -> dict[str, Any]:
        log(f"first sync of {files} small text files ...")
        first = await sync(client, folder, COLLECTION)
        log(f"  {first['seconds']} s {first['counts']} peak {first['peak_tree_mb']} MB")
        again = [await sync(client, folder, COLLECTION) for _ in range(repeats)]
        log(f"  unchanged: {[r['seconds'] for r in again]}")
        watched = await watch_phase(client, folder, WATCH_EDITS // 2)  # fewer saves: a bigger folder's phase
        log(f"  watch: {watched}")
        return {"first": first, "unchanged": spread(again), "watch": watched, "after_tree_mb": tree_mb()}

    return {
        "folder": {"files": files, "mb": round(written / MB, 2)},
        **await session(folder, logs / "server-big.log", body),
    }


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="bench.sync", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--files", type=int, default=1000, help="files in the mixed folder (at least 200)")
    parser.add_argument("--big", type=int, default=10000, help="small text files in the big folder (0: skip)")
    parser.add_argument("--repeats", type=int, default=7, help="no-change re-syncs per folder")
    parser.add_argument("--logs", type=Path, help="folder for the servers' logs (default: a temporary one)")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "sync.json")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.files < 200:
        raise SystemExit("--files: at least 200 (10 edits, 5 deletions spread over the folder)")
    result: dict[str, Any] = {"benchmark": "sync", "cpus": os.cpu_count(), "load_average_before": os.getloadavg()}
    with tempfile.TemporaryDirectory(prefix="sync-bench-docs-") as scratch:
        logs = args.logs or Path(scratch)
        logs.mkdir(parents=True, exist_ok=True)
        (mixed_dir := Path(scratch) / "mixed").mkdir()
        result["mixed"] = anyio.run(mixed, mixed_dir, args.files, args.repeats, logs)
        if args.big:
            (big_dir := Path(scratch) / "big").mkdir()
            result["big"] = anyio.run(big, big_dir, args.big, max(args.repeats // 2, 3), logs)
    result["load_average_after"] = os.getloadavg()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_json(args.out, result)
    print(summary(result))
    print(f"wrote {args.out}")


def summary(result: dict[str, Any]) -> str:
    lines = []
    for name in ("mixed", "big"):
        if run := result.get(name):
            first, same = run["first"], run["unchanged"]
            lines.append(f"{name}: {run['folder']['files']} files; first {first['seconds']} s "
                         f"({first['files_per_s']} files/s, peak {first['peak_tree_mb']} MB); unchanged median "
                         f"{same['median_s']} s p95 {same['p95_s']} s (peak {same['peak_tree_mb']} MB)")  # fmt: skip
    if touched := result["mixed"].get("touched"):
        lines.append(f"touched (every mtime moved, content kept): {[t['seconds'] for t in touched]} s")
    if edits := result["mixed"].get("edits"):
        lines.append(f"edits: {edits['seconds']} s {edits['counts']} search check ok={edits['search_check']['ok']}")
    for name in ("mixed", "big"):
        watched = (result.get(name) or {}).get("watch") or {}
        lines.append(f"watch ({name}): median {watched.get('median_s')} s p95 {watched.get('p95_s')} s"
                     if watched.get("available") else f"watch ({name}): not available")  # fmt: skip
    return "\n".join(lines)


if __name__ == "__main__":
    main()
