"""`make bench` / `python -m bench.run`: quality, throughput and latency through the real services.

Scale (100k+ chunks per index engine, through the MCP tool) is its own bench: `python -m bench.scale`.

    python -m bench.run                    # the full run (SciFact 5,183 docs + dbpedia-5k 5,000; ~60 min on 2 cores)
    python -m bench.run --quick            # 50 queries of each set, their documents + 250 others
    python -m bench.run --dataset scifact  # quality on one set only (repeat --dataset for several)

Writes <out>/<stem>.json, .md and .png (default bench/results/latest.*).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from . import latency, pdf_fidelity, report, throughput
from .data import DATASETS, DEFAULT_DIR, load
from .metrics import evaluate
from .pipeline import Stack, ingest, open_stack, ranked_documents

ROOT = Path(__file__).resolve().parent
QUALITY_COLLECTION = "scifact"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="bench", description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="a small subset (what CI's smoke test uses)")
    parser.add_argument("--data", type=Path, default=DEFAULT_DIR, help="SciFact folder (BEIR format)")
    parser.add_argument("--dataset", action="append", choices=sorted(DATASETS),
                        help="quality on these sets (default: both); throughput etc. use SciFact")  # fmt: skip
    parser.add_argument("--queries", type=int, help="evaluate the first N test queries (default: all 300)")
    parser.add_argument("--extra-docs", type=int, help="with --queries: this many distractor documents")
    parser.add_argument("--chunking", default="default", choices=["default", "dense", "sparse"])
    parser.add_argument("--throughput-docs", type=int, default=300, help="documents for the throughput run")
    parser.add_argument("--latency-queries", type=int, default=300, help="queries timed per path (all 300 by default)")
    parser.add_argument("--skip", action="append", default=[], choices=["quality", "throughput", "latency", "pdf"])
    parser.add_argument("--out", type=Path, default=ROOT / "results")
    parser.add_argument("--stem", default="latest")
    parser.add_argument("--work-dir", type=Path, default=ROOT / "results" / "tmp" / "run")
    parser.add_argument(
        "--keep-index",
        action="store_true",
        help="reuse the work dir's index: unchanged documents are skipped by content hash (re-measure quickly)",
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.queries, args.extra_docs = args.queries or 50, args.extra_docs or 250
        args.throughput_docs, args.latency_queries = min(args.throughput_docs, 40), min(args.latency_queries, 20)
    return args


def stamp() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


async def quality(stack: Stack, args: argparse.Namespace, data: Any, collection: str) -> dict[str, Any]:
    """One benchmark's retrieval figures per mode. Documents the pipeline refuses (text under 50 characters)
    are skipped and listed under corpus.skipped; their judgments stay, as a missed document."""
    log(f"{data.name}: ingesting {len(data.docs)} documents (preset {args.chunking})")
    corpus = await ingest(stack, data.docs, collection=collection, chunking=args.chunking,
                          on_batch=lambda done, total: log(f"  {done}/{total} documents"))  # fmt: skip
    if corpus["skipped"]:
        log(f"  skipped {len(corpus['skipped'])} documents, e.g. {corpus['skipped'][0]}")
    relevance = "graded (0/1/2 as nDCG gain; grade >= 1 relevant for Recall, MRR)" if data.graded else "binary"
    out: dict[str, Any] = {"dataset": data.name, "relevance": relevance}
    out["corpus"] = {**corpus, "chunking": args.chunking}
    for mode in report.MODES:
        started = time.perf_counter()
        runs = {qid: await ranked_documents(stack, text, collection=collection, mode=mode)
                for qid, text in data.queries.items()}  # fmt: skip
        out[mode] = evaluate(runs, data.qrels)
        log(f"  {mode}: {out[mode]} ({time.perf_counter() - started:.0f} s)")
    return out


async def all_quality(stack: Stack, args: argparse.Namespace, data: Any) -> dict[str, Any]:
    """SciFact under "quality" (what latency and scale reuse), every other set under "quality_sets"."""
    sets: dict[str, Any] = {}
    for name in args.dataset or ["scifact", "dbpedia-5k"]:
        chosen = data if name == "scifact" else load(DATASETS[name]).subset(args.queries, args.extra_docs)
        collection = QUALITY_COLLECTION if name == "scifact" else name.replace("-", "_")
        sets[name] = {**await quality(stack, args, chosen, collection), "measured_at": stamp()}
    return sets


async def run(args: argparse.Namespace) -> dict[str, Any]:
    data = load(args.data).subset(args.queries, args.extra_docs)
    if not args.keep_index:
        shutil.rmtree(args.work_dir, ignore_errors=True)
    result: dict[str, Any] = {"machine": report.machine(), "device": throughput.encode_device()}
    async with open_stack(args.work_dir) as stack:
        if "quality" not in args.skip:
            sets = await all_quality(stack, args, data)
            result["quality"] = sets.pop("scifact", None) or {}
            result["quality_sets"] = sets
        if "throughput" not in args.skip:
            log(f"throughput on {args.throughput_docs} documents")
            docs, warmup = data.docs[: args.throughput_docs], data.docs[args.throughput_docs :][:4]
            result["throughput"] = await throughput.measure(
                stack, docs, warmup, chunking=args.chunking, files_dir=args.work_dir / "files"
            )
            result["throughput"]["measured_at"] = stamp()
            log(f"  {result['throughput']}")
        if os.environ.get("VECTOR_GATEWAY_INDEX_ENGINE") == "lance":
            log("latency: skipped (its baseline is raw pymilvus on the Milvus Lite index)")
        elif "latency" not in args.skip and "quality" not in args.skip:
            log("latency: MCP tool vs gateway API vs raw pymilvus")
            queries = list(data.queries.values())[: args.latency_queries]
            milvus_uri = str(args.work_dir / "milvus.db")
            result["latency"] = await latency.measure(stack, milvus_uri, QUALITY_COLLECTION, queries)
            result["latency"]["measured_at"] = stamp()
            log(f"  {result['latency']}")
    if "pdf" not in args.skip:
        log("PDF fidelity: table cells, OCR characters, pages/s per PDF pipeline")
        result["pdf_fidelity"] = pdf_fidelity.measure(repeats=1 if args.quick else 3, quick=args.quick)
        result["pdf_fidelity"]["measured_at"] = stamp()
    return result


def merged(result: dict[str, Any], previous: Path) -> dict[str, Any]:
    """With --keep-index, sections this run skipped keep the figures of the last run (each is stamped)."""
    if not previous.is_file():
        return result
    return {**json.loads(previous.read_text()), **result}


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    result = asyncio.run(run(args))
    if args.keep_index:
        result = merged(result, args.out / f"{args.stem}.json")
    paths = report.write(result, args.out, args.stem)
    print(report.markdown(result))
    log(f"wrote {', '.join(str(p) for p in paths.values())}")


if __name__ == "__main__":
    main()
