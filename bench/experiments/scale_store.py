"""The Lance engine at 100k and 1M chunks, at the store: build, upkeep, open, search (issue 31, docs/scale.md).

The rows are those the gateway's DocumentWriter stores (bench.experiments.scale_profile's SciFact one-chunk documents,
Snowball-analysed text, random unit vectors, one registry row per document), inserted in 20,000-row
batches; then the upkeep (compaction, BM25/IVF/B-tree indexes) runs once. A fresh process then opens the
folder and runs the gateway's own hybrid search (search.py: two rankings, liveness, fetch, calibrated
fusion) for 40 queries after 5 warm-ups, as bench.experiments.scale_profile did for Milvus Lite on the same rows.

    python -m bench.experiments.scale_store --rows 100000 --work bench/results/tmp/scale_store
    python -m bench.experiments.scale_store --rows 1000000 --work bench/results/tmp/scale_store --cache-mb 1024
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

from ..results_io import write_json
from .scale_profile import COLLECTION, QUERIES, WARMUP, disk, queries, rss, stats, unit_vectors, write_bulk

OUT = Path("bench/experiments/results/scale_store.json")
CACHED = "search_cache_1024mb"  # the default cache's run, the one plotted


def build(folder: str, rows: int) -> dict[str, Any]:
    from vector_gateway.lance import LanceStore
    from vector_gateway.records import REGISTRY

    store = LanceStore(folder, maintain=False)  # no upkeep while writing: it runs once, timed, below
    written, insert_s = write_bulk(store, rows)
    started = time.perf_counter()
    store.optimize(COLLECTION)
    store.optimize(REGISTRY)
    upkeep_s = time.perf_counter() - started
    out = {"rows": store.count(COLLECTION), "insert_s": round(insert_s, 1), "rows_per_s": round(written / insert_s),
           "upkeep_s": round(upkeep_s, 1), **rss(), "disk_right_after": disk(Path(folder))}  # fmt: skip
    for name in (COLLECTION, REGISTRY):  # what the upkeep's timer removes a minute later in a server
        store.optimize(name, keep=timedelta(0))
    out["disk"] = disk(Path(folder))
    return out


def search_run(folder: str, cache_mb: int) -> dict[str, Any]:
    from vector_gateway import lexical
    from vector_gateway.lance import LanceStore
    from vector_gateway.search import CANDIDATE_FIELDS, Query, search
    from vector_gateway.settings import GatewaySettings

    fusion = GatewaySettings(milvus_uri="unused.db").hybrid_fusion
    texts, vecs = queries(), unit_vectors(QUERIES + WARMUP, seed=99).tolist()
    out: dict[str, Any] = {"start": rss(), "cache_mb": cache_mb}
    started = time.perf_counter()
    store = LanceStore(folder, cache_mb=cache_mb)
    store.ping()
    search(store, [COLLECTION], Query("hybrid", vecs[0], texts[0], 10, None), fusion=fusion, candidates=20)
    out["open_to_first_search_ms"], out["after_first"] = round((time.perf_counter() - started) * 1000), rss()
    samples: dict[str, list[float]] = {"dense": [], "bm25": [], "hybrid": []}
    for i, (text, vec) in enumerate(zip(texts, vecs, strict=True)):
        analysed = lexical.analyze(text, "snowball_en") or text
        t0 = time.perf_counter()
        store.search(COLLECTION, mode="semantic", vector=vec, text="", limit=20, where=None, fields=CANDIDATE_FIELDS)
        t1 = time.perf_counter()
        store.search(
            COLLECTION, mode="keyword", vector=None, text=analysed, limit=20, where=None, fields=CANDIDATE_FIELDS
        )
        t2 = time.perf_counter()
        search(store, [COLLECTION], Query("hybrid", vec, text, 10, None), fusion=fusion, candidates=20)
        t3 = time.perf_counter()
        if i >= WARMUP:
            for name, seconds in (("dense", t1 - t0), ("bm25", t2 - t1), ("hybrid", t3 - t2)):
                samples[name].append(seconds * 1000)
    out.update({name: stats(values) for name, values in samples.items()})
    out["end"] = rss()
    return out


def mcp_run(folder: str, work: Path) -> dict[str, Any]:
    """The real MCP server (stdio, embedded services) on this Lance folder: open, 100 hybrid `search` tool
    calls after 5 warm-ups, RSS of every process (bench.scale's measurement, on the store-built index)."""
    import anyio

    from .. import scale_mcp
    from ..scale import scifact_queries

    env = {"VECTOR_GATEWAY_INDEX_ENGINE": "lance", "VECTOR_GATEWAY_LANCE_URI": folder}
    launch = scale_mcp.params(work / "mcp", env)
    queries = scifact_queries(1 + WARMUP + 100)
    started = time.perf_counter()
    return dict(anyio.run(scale_mcp.measure, launch, COLLECTION, queries, WARMUP, started, work / "mcp.log"))


def child(*args: str) -> dict[str, Any]:
    """A step in a fresh process (open time and memory are a new process's)."""
    command = [sys.executable, "-m", "bench.experiments.scale_store", "--child", *args]
    environment = {**os.environ, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(command, capture_output=True, text=True, check=True, env=environment)
    return json.loads(done.stdout.strip().splitlines()[-1])


def plot(out: Path = Path("docs/scale_engines.png")) -> None:
    """Hybrid search p50 / p95 and RSS by rows: Milvus Lite (bench.experiments.scale_profile) and Lance (this bench)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lite = json.loads(Path("bench/experiments/results/scale_profile.json").read_text())
    lance = json.loads(OUT.read_text())
    series = {
        "Milvus Lite 3.2.2": [(int(k), v["profile"]["baseline"]["hybrid_search_py"],
                               v["profile"]["memory_after_queries"]["rss_mb"]) for k, v in lite.items()],
        "Lance (cache 1,024 MB)": [(int(k), v[CACHED]["hybrid"], v[CACHED]["end"]["rss_mb"])
                                   for k, v in lance.items() if CACHED in v],
    }  # fmt: skip
    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for label, points in series.items():
        points.sort()
        rows = [p[0] for p in points]
        left.plot(rows, [p[1]["p50_ms"] for p in points], marker="o", label=f"{label} p50")
        left.plot(rows, [p[1]["p95_ms"] for p in points], marker="x", linestyle="--", label=f"{label} p95")
        right.plot(rows, [p[2] for p in points], marker="o", label=label)
    left.axhline(100, color="grey", linewidth=0.8, linestyle=":")
    left.axhline(250, color="grey", linewidth=0.8, linestyle=":")
    right.axhline(3000, color="grey", linewidth=0.8, linestyle=":")
    for axis, title, unit in (
        (left, "hybrid search (search.py)", "ms"),
        (right, "process RSS after the searches", "MB"),
    ):
        axis.set_xscale("log")
        axis.set_yscale("log")
        axis.set_xlabel("chunks")
        axis.set_ylabel(unit)
        axis.set_title(title)
        axis.grid(True, which="both", alpha=0.3)
        axis.legend(fontsize=8)
    figure.suptitle("Embedded engines by index size (2 shared cores; dotted: the issue's goals at 1M)", fontsize=10)
    figure.tight_layout()
    figure.savefig(out, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--work", type=Path, default=Path("bench/results/tmp/scale_store"))
    parser.add_argument("--cache-mb", type=int, default=1024)
    parser.add_argument("--skip-build", action="store_true")
    parser.add_argument("--plot", action="store_true", help="only draw docs/scale_engines.png from the results")
    parser.add_argument("--mcp", action="store_true", help="also search through the real MCP server's tool")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        step, folder, value = args.child
        print(json.dumps(build(folder, int(value)) if step == "build" else search_run(folder, int(value))))
        return
    if args.plot:
        plot()
        return
    folder = str(args.work / str(args.rows))
    results = json.loads(OUT.read_text()) if OUT.exists() else {}
    entry: dict[str, Any] = results.get(str(args.rows), {})
    if not args.skip_build:
        entry["build"] = child("build", folder, str(args.rows))
    entry[f"search_cache_{args.cache_mb}mb"] = child("search", folder, str(args.cache_mb))
    if args.mcp:
        measured = mcp_run(folder, args.work)
        entry["mcp_search_tool"] = {k: v for k, v in measured.items() if k != "processes"}
    results[str(args.rows)] = entry
    OUT.parent.mkdir(parents=True, exist_ok=True)
    write_json(OUT, results, indent=2)
    print(json.dumps(entry, indent=2))
    plot()


if __name__ == "__main__":
    main()
