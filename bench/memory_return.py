"""Memory given back (issue 31): does an idle server return to its idle size plus what the index holds?

One real MCP server over stdio (``ingestion-mcp``, the embedded default: docling, chunker, gateway and Milvus
Lite in its process, docling workers as children) is driven through these phases, and the RSS of its whole
tree (the server and every process under it) is read after each:

- ``idle``: started, one warm-up search, a few seconds of quiet;
- ``after_ingest``: ``sync_folder`` of ``--docs`` Markdown files of ``--kb`` KB each and ``--pdfs`` 10-page PDFs;
- ``after_burst``: ``--searches`` searches one after another (hybrid, varied queries);
- ``after_idle``: ``--idle`` seconds later, nothing called meanwhile;
- ``index_resident``: a fresh server on the same data folder after one search: the idle server plus the part of
  the index it keeps resident, the size the idle server should come back to.

``ratio`` = after_idle / index_resident (goal <= 1.10). The whole run is done three times, each on a fresh server
and data folder: ``on`` (the defaults), ``trim_off`` (``INGESTION_MCP_IDLE_TRIM_S=0``: the idle trimmer off) and
``off`` (the trimmer off and ``DOCLING_WORKER_IDLE_S=300``: the docling worker kept as long as before). docs/memory.md.

    python -m bench.memory_return [--docs 40] [--kb 50] [--pdfs 3] [--searches 500] [--idle 60]
                                  [--out bench/results/memory_return.json]
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import psutil
from mcp import Client
from mcp.client.stdio import stdio_client

from scripts.service_stack import succeeded

from .pdf_scale import MB, ROOT, label, server, tree_mb
from .pdf_scale_docs import report_pdf
from .results_io import write_json
from .sync import log, sync
from .sync_docs import SENTENCES, TOPICS

COLLECTION = "memory_bench"
SETTLE_S = 5.0  # after a phase: longer than the trimmer's quiet time (2 s), shorter than any worker's idle exit
# on: the defaults. trim_off: the idle trimmer off alone. off: the trimmer off and the docling worker kept for the
# service's 300 s, not the embedded 30 s: the previous embedded default (less its trim at each job's end).
VARIANTS = {
    "on": {},
    "trim_off": {"INGESTION_MCP_IDLE_TRIM_S": "0"},
    "off": {"INGESTION_MCP_IDLE_TRIM_S": "0", "DOCLING_WORKER_IDLE_S": "300"},
}


def write_docs(folder: Path, docs: int, kb: int, pdfs: int) -> dict[str, Any]:
    """``docs`` Markdown files of about ``kb`` KB of distinct prose each, and ``pdfs`` 10-page reports."""
    rng = random.Random(31)
    for index in range(docs):
        parts, size = [f"# {TOPICS[index % len(TOPICS)]} report {index}"], 0
        while size < kb * 1024:
            sentences = rng.sample(SENTENCES, 5)
            paragraph = " ".join(s.replace("the", f"the {rng.choice(TOPICS).lower()}", 1) for s in sentences)
            parts.append(f"{paragraph} Note {index}-{len(parts)}.")
            size += len(parts[-1]) + 2
        (folder / f"report-{index:03d}.md").write_text("\n\n".join(parts))
    for index in range(pdfs):
        (folder / f"paper-{index}.pdf").write_bytes(report_pdf(10, seed=index)[0])
    sizes = [p.stat().st_size for p in folder.iterdir()]
    return {"files": len(sizes), "markdown": docs, "pdfs": pdfs, "mb": round(sum(sizes) / MB, 2)}


def snapshot() -> dict[str, Any]:
    """The tree's RSS (and PSS) in MiB with each process's own RSS."""
    each = []
    for process in psutil.Process().children(recursive=True):
        try:
            each.append({"process": label(process.cmdline()), "mb": round(process.memory_info().rss / MB, 1)})
        except psutil.Error:
            continue
    return {**tree_mb(), "processes": sorted(each, key=lambda p: -p["mb"])}


async def search(client: Client, query: str, collection: str = COLLECTION) -> None:
    await succeeded(client, "search", query=query, collection=collection, top_k=5)


def queries(count: int) -> list[str]:
    rng = random.Random(7)
    return [" ".join(rng.sample(rng.choice(SENTENCES).split(), 4)) for _ in range(count)]


def params_for(folder: Path, data: Path, env: dict[str, str]) -> Any:
    params = server(ROOT, folder, data)
    params.env = {**(params.env or {}), **env}
    return params


async def warm_up(client: Client) -> None:
    """One small text ingested apart and one search: both model paths and the services have run once."""
    text = " ".join(SENTENCES)
    await succeeded(client, "ingest_text", text=text, collection="warmup", name="warm-up")
    await search(client, "ferry timetable", collection="warmup")


async def phases(
    folder: Path, data: Path, env: dict[str, str], searches: int, idle_s: float, errlog: Any
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    async with Client(stdio_client(params_for(folder, data, env), errlog), read_timeout_seconds=3600) as client:
        await warm_up(client)
        await anyio.sleep(SETTLE_S)
        out["idle"] = snapshot()
        log(f"  idle {out['idle']['rss']} MB")
        out["ingest"] = await sync(client, folder, COLLECTION)
        await anyio.sleep(SETTLE_S)
        out["after_ingest"] = snapshot()
        log(f"  ingest {out['ingest']['seconds']} s {out['ingest']['counts']}: {out['after_ingest']['rss']} MB")
        started = time.perf_counter()
        for query in queries(searches):
            await search(client, query)
        out["burst_s"] = round(time.perf_counter() - started, 1)
        await anyio.sleep(SETTLE_S)
        out["after_burst"] = snapshot()
        log(f"  {searches} searches in {out['burst_s']} s: {out['after_burst']['rss']} MB")
        await anyio.sleep(idle_s)
        out["after_idle"] = snapshot()
        log(f"  after {idle_s} s idle: {out['after_idle']['rss']} MB")
    return out


async def index_resident(folder: Path, data: Path, env: dict[str, str], errlog: Any) -> dict[str, Any]:
    """A fresh server that opened the same index and ran one search: what the index legitimately holds."""
    async with Client(stdio_client(params_for(folder, data, env), errlog), read_timeout_seconds=3600) as client:
        await search(client, "ferry timetable")
        await anyio.sleep(SETTLE_S)
        return snapshot()


async def variant(folder: Path, env: dict[str, str], searches: int, idle_s: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="memory-bench-data-") as scratch, open(os.devnull, "w") as errlog:
        out = await phases(folder, Path(scratch), env, searches, idle_s, errlog)
        out["index_resident"] = await index_resident(folder, Path(scratch), env, errlog)
    goal = out["index_resident"]["rss"]
    out["index_part_mb"] = round(goal - out["idle"]["rss"], 1)
    out["ratio"] = {k: round(out[k]["rss"] / goal, 3) for k in ("after_ingest", "after_burst", "after_idle")}
    out["within_10_percent"] = out["ratio"]["after_idle"] <= 1.10
    log(f"  index resident {goal} MB; ratio after idle {out['ratio']['after_idle']}")
    return out


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="bench.memory_return", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--docs", type=int, default=40, help="Markdown files in the ingested folder")
    parser.add_argument("--kb", type=int, default=50, help="size of each Markdown file, KB")
    parser.add_argument("--pdfs", type=int, default=3, help="10-page PDFs in the folder")
    parser.add_argument("--searches", type=int, default=500, help="searches in the burst")
    parser.add_argument("--idle", type=float, default=60.0, help="seconds of quiet before the last reading")
    parser.add_argument("--variants", default="on,trim_off,off", help="which runs: on, trim_off, off")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "memory_return.json")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    result: dict[str, Any] = {"benchmark": "memory_return", "cpus": os.cpu_count(),
                              "load_average_before": os.getloadavg(), "settle_s": SETTLE_S, "idle_s": args.idle,
                              "searches": args.searches}  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="memory-bench-docs-") as docs:
        result["folder"] = write_docs(Path(docs), args.docs, args.kb, args.pdfs)
        for name in args.variants.split(","):
            log(f"{name} ...")
            result[name] = anyio.run(variant, Path(docs), VARIANTS[name], args.searches, args.idle)
    result["load_average_after"] = os.getloadavg()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_json(args.out, result)
    for name in args.variants.split(","):
        run = result[name]
        print(f"{name}: idle {run['idle']['rss']} MB, after ingest {run['after_ingest']['rss']}, after burst "
              f"{run['after_burst']['rss']}, after {args.idle:.0f} s idle {run['after_idle']['rss']}; index resident "
              f"{run['index_resident']['rss']} MB; ratio {run['ratio']['after_idle']}")  # fmt: skip
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
