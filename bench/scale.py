"""Search at scale through the MCP tool, per index engine (issue 31): milvus-lite, milvus-server, lance.

For each engine and size: SciFact's chunks, replicated under new sources with a little noise on their cached
vectors (bench.scale_corpus: embedded once; 1M chunks could not be embedded on a laptop CPU), are written
through the gateway's DocumentWriter into the engine's store (ingest rows/s, wall, disk). Then the real MCP
server (``ingestion_mcp.cli.server_command`` over stdio, embedded services) starts on that index: "open" runs from the
engine's first process start to the first answered search; then ``--queries`` hybrid ``search`` tool calls
with SciFact queries after ``--warmup`` (p50/p95 ms), and the resident memory of every process (server,
children, the ``milvus-lite server``), peak and after. Sizes grow one index per engine (300k adds to 100k).
Every figure is also given against milvus-lite's (today's default) at the same size, in the same run.

``--quality`` writes each retrieval set (SciFact, dbpedia-5k: the pipeline's chunks and vectors, cached)
into every engine and scores nDCG@10 of hybrid search through the tool (bench.metrics), with the
difference to milvus-lite.

    python -m bench.scale [--rows 100000,300000,1000000] [--engines milvus-lite,milvus-server,lance]
                          [--queries 100] [--warmup 5] [--quality] [--out bench/results/scale.json]
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import psutil
from mcp.client.stdio import StdioServerParameters

from . import scale_mcp
from .data import DATASETS, load
from .metrics import evaluate
from .results_io import write_json
from .scale_engines import ENGINES, SCALE_COLLECTION, Precomputed, disk_mb, serving, unavailable
from .scale_report import plot, quality_difference, ratios, table

__all__ = ["Precomputed", "main"]  # Precomputed: bench.experiments.scale_profile imports it from here

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
QUALITY_SETS = ("scifact", "dbpedia-5k")


def log(message: str) -> None:
    print(f"[scale {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def build_child(engine: str, uri: str, *args: str) -> dict[str, Any]:
    """One write in a fresh process (one process per Milvus Lite database; its memory is not the server's)."""
    done = subprocess.run([sys.executable, "-m", "bench.scale_engines", engine, uri, *args], cwd=ROOT,
                          capture_output=True, text=True, check=False)  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"building {engine} {args} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def corpus_queries(corpus: str) -> list[str]:
    """Real queries of the corpus's sets (SciFact's 300; the mixed corpus adds dbpedia-5k's 50), shuffled once."""
    names = QUALITY_SETS if corpus == "mixed" else (corpus,)
    texts = []
    for name in names:
        with (DATASETS[name] / "queries.jsonl").open(encoding="utf-8") as handle:
            texts += [json.loads(line)["text"] for line in handle]
    random.Random(31).shuffle(texts)
    return texts


def scifact_queries(count: int) -> list[str]:
    """SciFact's queries, shuffled once (the same for every engine); repeated if more are asked for."""
    return repeated(corpus_queries("scifact"), count)


def repeated(texts: list[str], count: int) -> list[str]:
    return (texts * (count // len(texts) + 1))[:count]


@contextlib.contextmanager
def launched(engine: str, folder: Path) -> Iterator[tuple[StdioServerParameters, float]]:
    """The MCP server's launch parameters on the engine's index, and when the engine's processes started."""
    started = time.perf_counter()
    with serving(engine, folder) as where:
        yield scale_mcp.params(folder, where.env), started


def size_folder(args: argparse.Namespace, engine: str, size: int) -> Path:
    return args.work / engine / str(size)


def build_size(engine: str, size: int, args: argparse.Namespace) -> dict[str, Any]:
    """The index of ``size`` chunks in its own folder: a copy of the largest smaller one already built, grown by
    replicas (or built from nothing). Kept (build.json) so that a measure phase, or another run, finds it."""
    folder = size_folder(args, engine, size)
    record = folder / "build.json"
    if record.is_file() and not args.rebuild:
        log(f"{engine}: {size:,} chunks already built in {folder}")
        return dict(json.loads(record.read_text()))
    shutil.rmtree(folder, ignore_errors=True)
    smaller = sorted((int(p.parent.name), p.parent) for p in (args.work / engine).glob("*/build.json")
                     if p.parent.name.isdigit() and int(p.parent.name) < size)  # fmt: skip
    replica, grown_from = 0, None
    if smaller:
        grown_from, source = smaller[-1]
        shutil.copytree(source, folder, ignore=shutil.ignore_patterns("*.log", "mcp", "docs", "build.json"))
        replica = json.loads((source / "build.json").read_text())["build"]["next_replica"]
    folder.mkdir(parents=True, exist_ok=True)
    log(f"{engine}: building {size:,} chunks" + (f" from the {grown_from:,} index" if grown_from else ""))
    began = time.perf_counter()
    with serving(engine, folder) as where:
        build = build_child(engine, where.uri, "scale", str(size), str(replica), args.corpus)
    entry = {"rows": build["rows"], "build": build, "disk_mb": disk_mb(where.disk), "grown_from": grown_from,
             "corpus": args.corpus, "build_wall_s": round(time.perf_counter() - began, 1),
             "build_load_avg": [round(x, 2) for x in psutil.getloadavg()]}  # fmt: skip
    record.write_text(json.dumps(entry, indent=1) + "\n")
    log(f"  {build}")
    return entry


def measure_size(engine: str, size: int, args: argparse.Namespace) -> dict[str, Any]:
    """``--runs`` fresh MCP servers on the built index, each: open, warm-up, timed searches, memory. The entry's
    own figures are the median run's (by p50); every run's are kept, with the median and worst p50 / p95."""
    folder = size_folder(args, engine, size)
    built = json.loads((folder / "build.json").read_text())
    queries = repeated(corpus_queries(built.get("corpus", "scifact")), 1 + args.warmup + args.queries)
    runs = []
    for run in range(args.runs):
        with launched(engine, folder) as (launch, started):
            measured = anyio.run(scale_mcp.measure, launch, SCALE_COLLECTION, queries, args.warmup, started,
                                 folder / "server.log")  # fmt: skip
        measured["load_avg"] = [round(x, 2) for x in psutil.getloadavg()]
        runs.append(measured)
        log(f"  {engine} {size:,} run {run + 1}/{args.runs}: open {measured['open_s']} s, search "
            f"{measured['search']}, server peak {measured['rss_peak_server_mb']} MB")  # fmt: skip
    middle = sorted(runs, key=lambda r: r["search"]["p50_ms"])[(len(runs) - 1) // 2]
    return {**built, **middle, "over_runs": over_runs(runs),
            "runs": [{k: v for k, v in r.items() if k != "processes"} for r in runs]}  # fmt: skip


def over_runs(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Median and worst of each run's p50 and p95, and the server's highest peak: what "every run" is held to."""
    p50 = sorted(r["search"]["p50_ms"] for r in runs)
    p95 = sorted(r["search"]["p95_ms"] for r in runs)
    peaks = [r["rss_peak_server_mb"] for r in runs if r.get("rss_peak_server_mb")]
    return {"runs": len(runs), "p50_median_ms": round(statistics.median(p50), 2), "p50_worst_ms": p50[-1],
            "p50_best_ms": p50[0], "p95_median_ms": round(statistics.median(p95), 2), "p95_worst_ms": p95[-1],
            "server_peak_max_mb": max(peaks, default=None)}  # fmt: skip


def reindex_size(engine: str, size: int, args: argparse.Namespace) -> dict[str, Any]:
    """A built Lance index given the vector index the engine makes now (its kind changed since the build)."""
    folder = size_folder(args, engine, size)
    record = folder / "build.json"
    built = json.loads(record.read_text())
    with serving(engine, folder) as where:
        built["reindexed"] = build_child(engine, where.uri, "reindex")
    built["disk_mb"] = disk_mb(where.disk)
    record.write_text(json.dumps(built, indent=1) + "\n")
    log(f"{engine} {size:,}: {built['reindexed']}")
    return dict(built)


def run_engine(engine: str, sizes: list[int], args: argparse.Namespace, previous: dict[str, Any]) -> dict[str, Any]:
    out = dict(previous.get("sizes") or {})
    if args.phase == "reindex":
        return {"sizes": out | {str(size): reindex_size(engine, size, args) for size in sizes}}
    for size in sizes:
        built = build_size(engine, size, args) if args.phase in ("build", "all") else None
        if args.phase in ("measure", "all"):
            out[str(size)] = measure_size(engine, size, args)
        elif built is not None:
            out[str(size)] = built
    return {"sizes": out}


def quality_of(engine: str, name: str, args: argparse.Namespace) -> dict[str, Any]:
    data, collection = load(DATASETS[name]).subset(args.quality_queries, None), name.replace("-", "_")
    folder = args.work / "quality" / engine / name
    shutil.rmtree(folder, ignore_errors=True)
    log(f"quality: {name} on {engine}")
    with serving(engine, folder) as where:
        build = build_child(engine, where.uri, "quality", name)
    with launched(engine, folder) as (launch, started):
        runs = anyio.run(scale_mcp.ranked, launch, collection, data.queries, folder / "server.log")
    seconds = round(time.perf_counter() - started, 1)
    return {**evaluate(runs, data.qrels), "build": build, "server_and_queries_s": seconds}


def quality(engines: list[str], args: argparse.Namespace) -> dict[str, Any]:
    """nDCG@10 of hybrid search through the tool, per engine and set, on the same chunks and vectors."""
    scores: dict[str, dict[str, Any]] = {}
    for engine in engines:
        for name in QUALITY_SETS:
            scores.setdefault(engine, {})[name] = attempt(functools.partial(quality_of, engine, name, args))
            log(f"  {scores[engine][name]}")
    ndcg = {e: {n: s["ndcg@10"] for n, s in sets.items() if "ndcg@10" in s} for e, sets in scores.items()}
    return {"ndcg@10_hybrid": ndcg, "difference_to_milvus_lite": quality_difference(scores), "runs": scores,
            "depth_chunks": scale_mcp.QUALITY_DEPTH}  # fmt: skip


def attempt(step: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """The step's figures, or what failed (one engine that breaks does not cost the others' figures)."""
    try:
        return step()
    except Exception as exc:  # noqa: BLE001 - reported in the results, the run goes on
        log(f"  failed: {exc!r}")
        return {"failed": f"{type(exc).__name__}: {exc}"[:3000]}


def save(result: dict[str, Any], out: Path, *, complete: bool = False) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    write_json(out, {**result, "complete": complete}, indent=1)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="bench.scale", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--rows", default="100000", help="index sizes in chunks, comma-separated")
    parser.add_argument(
        "--phase",
        choices=("all", "build", "measure", "reindex"),
        default="all",
        help="reindex: give built Lance indexes the vector index the engine makes now; "
        "build the indexes (each size in its own folder, grown from the next smaller one), "
        "measure them through the MCP server, or both; a built size is reused unless --rebuild",
    )
    parser.add_argument("--runs", type=int, default=1, help="fresh MCP servers measured per engine and size")
    parser.add_argument(
        "--corpus",
        choices=("mixed", "scifact"),
        default="mixed",
        help="what is replicated: SciFact + dbpedia-5k (real embeddings of both), or SciFact alone",
    )
    parser.add_argument("--rebuild", action="store_true", help="build every size anew")
    parser.add_argument(
        "--keep", action="store_true", help="merge into --out: sizes and engines not run now keep their earlier entries"
    )
    parser.add_argument("--engines", default=",".join(ENGINES), help=f"comma-separated, of {', '.join(ENGINES)}")
    parser.add_argument("--queries", type=int, default=100, help="timed search tool calls per engine and size")
    parser.add_argument("--warmup", type=int, default=5, help="untimed calls first (after the first answer)")
    parser.add_argument("--quality", action="store_true", help="also nDCG@10 on SciFact and dbpedia-5k per engine")
    parser.add_argument("--quality-queries", type=int, help="with --quality: the first N queries of each set only")
    parser.add_argument("--work", type=Path, default=RESULTS / "tmp" / "scale", help="indexes and server logs")
    parser.add_argument("--out", type=Path, default=RESULTS / "scale.json")
    parser.add_argument("--plot", type=Path, default=ROOT / "docs" / "scale.png", help="a copy of the plot")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    earlier = json.loads(args.out.read_text()) if args.keep and args.out.is_file() else {}
    kept = earlier.get("engines", {})
    sizes = sorted(int(part) for part in args.rows.split(",") if part.strip())
    engines = [part.strip() for part in args.engines.split(",") if part.strip()]
    result: dict[str, Any] = {
        "benchmark": "scale", "when_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {"cores": psutil.cpu_count(), "load_avg_start": [round(x, 2) for x in psutil.getloadavg()]},
        "command": " ".join(["python -m bench.scale", *(argv if argv is not None else sys.argv[1:])]),
        "flush_policy": os.environ.get("VECTOR_GATEWAY_FLUSH_POLICY", "auto"),  # auto: no flush on a server URI
        "engines": dict(kept),
    }  # fmt: skip
    runnable = []
    for engine in engines:
        if reason := unavailable(engine):
            log(f"{engine}: not available: {reason}")
            result["engines"][engine] = {"unavailable": reason}
        else:
            runnable.append(engine)
            before = kept.get(engine, {}) if args.keep else {}
            result["engines"][engine] = attempt(functools.partial(run_engine, engine, sizes, args, before))
        save(result, args.out)  # a long run (1M rows: hours) keeps what it measured so far
    result["ratios"] = ratios(result["engines"])
    if earlier:  # the commands that made the entries kept from earlier runs
        result["earlier_commands"] = [*earlier.get("earlier_commands", []), earlier.get("command")]
    if args.quality:
        save(result, args.out)
        result["quality"] = quality(runnable, args)
    result["machine"]["load_avg_end"] = [round(x, 2) for x in psutil.getloadavg()]
    save(result, args.out, complete=True)
    png = args.out.with_suffix(".png")
    plot(result, png, args.plot)
    print(table(result))
    log(f"wrote {args.out}, {png} and {args.plot}")


if __name__ == "__main__":
    main()
