"""Measure what write leases cost per document write (docs/consistency.md), against a baseline source tree.

Writes the same documents through the real write path (DocumentWriter on Milvus Lite, hash vectors so
embedding costs nothing): first as new documents, then again with changed content (a replace: the
old version is retired). Reports p50/p95 per single-document write and the time of batched writes.
With --baseline-src, runs the same measurement on another checkout's gateway package in a subprocess
right after, and prints the ratios:

    git archive HEAD~1 services/vector_gateway/src | tar -x -C /tmp/base
    python services/vector_gateway/scripts/write_bench.py --baseline-src /tmp/base/services/vector_gateway/src
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from flush_bench import HashEmbedder, make_documents
from ingestion_contracts.gateway import UpsertDocumentRequest
from vector_gateway.milvus import MilvusStore
from vector_gateway.upsert import DocumentWriter, plan


def changed(documents: list[UpsertDocumentRequest]) -> list[UpsertDocumentRequest]:
    return [d.model_copy(update={"content_hash": d.content_hash[::-1]}) for d in documents]


def timed_writes(writer: DocumentWriter, name: str, documents: list[UpsertDocumentRequest]) -> list[float]:
    timings = []
    for document in documents:
        started = time.perf_counter()
        writer.write(name, plan(name, [document]))
        timings.append((time.perf_counter() - started) * 1000)
    return timings


def summary(timings: list[float]) -> dict[str, float]:
    ordered = sorted(timings)
    return {"p50_ms": round(statistics.median(ordered), 1), "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))], 1)}


def measure(docs: int, chunks: int, batch: int) -> dict[str, object]:
    documents = make_documents(docs, chunks)
    report: dict[str, object] = {"documents": docs, "chunks_per_document": chunks}
    # Lite may still be compacting in the background when the folder goes: a leftover is harmless.
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as tmp:
        store = MilvusStore(str(Path(tmp) / "bench.db"))
        for name in ("single", "batched"):
            store.create_collection(name, HashEmbedder.dimension, HashEmbedder.model_name)
        writer = DocumentWriter(store, HashEmbedder(), lambda _stage, _seconds: None)
        report["new_document"] = summary(timed_writes(writer, "single", documents))
        report["replace_document"] = summary(timed_writes(writer, "single", changed(documents)))
        for label, docs_in in (("batched_new_s", documents), ("batched_replace_s", changed(documents))):
            started = time.perf_counter()
            for first in range(0, len(docs_in), batch):
                writer.write("batched", plan("batched", docs_in[first : first + batch]))
            report[label] = round(time.perf_counter() - started, 2)
        store.close()
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=100)
    parser.add_argument("--chunks", type=int, default=10, help="chunks per document")
    parser.add_argument("--batch", type=int, default=25, help="documents per batched write")
    parser.add_argument("--baseline-src", type=Path, help="a src/ folder holding another vector_gateway package")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    report = {"this_tree": measure(args.docs, args.chunks, args.batch)}
    if args.baseline_src:
        env = {**os.environ, "PYTHONPATH": str(args.baseline_src)}
        argv = [sys.executable, __file__, "--docs", str(args.docs), "--chunks", str(args.chunks),
                "--batch", str(args.batch), "--json"]  # fmt: skip
        baseline = json.loads(subprocess.run(argv, env=env, check=True, capture_output=True, text=True).stdout)
        report["baseline"] = baseline["this_tree"]
        mine, base = report["this_tree"], report["baseline"]
        report["ratio_this_over_baseline"] = {
            "new_p50": round(mine["new_document"]["p50_ms"] / base["new_document"]["p50_ms"], 2),
            "replace_p50": round(mine["replace_document"]["p50_ms"] / base["replace_document"]["p50_ms"], 2),
            "batched_new": round(mine["batched_new_s"] / base["batched_new_s"], 2),
            "batched_replace": round(mine["batched_replace_s"] / base["batched_replace_s"], 2),
        }
    print(json.dumps(report, indent=None if args.json else 2))


if __name__ == "__main__":
    main()
