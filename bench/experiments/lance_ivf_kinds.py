"""The dense ranking of a Lance table at scale: IVF_FLAT (the engine's index) at several probe counts against
IVF_SQ (int8 scalar quantisation, with and without exact re-ranking), each with its recall@20 against an exact
scan of the same table (issue 31: what a quantised index or fewer probes would buy at 1M, docs/scale.md).

    python -m bench.experiments.lance_ivf_kinds --lance bench/results/tmp/scale_store/1000000 \
        --copy bench/results/tmp/ivf_sq_copy

The table is bench.experiments.scale_store's (SciFact text, random unit vectors); the queries are random unit vectors
(seed 99,
as that bench). IVF_SQ is built on a copy of the folder (the original keeps its index). Random vectors are the worst
case for both levers: their distances crowd together, so the recall figures rank the options, not a real corpus.
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np

from ..results_io import write_json
from .scale_profile import COLLECTION, stats, unit_vectors

OUT = Path("bench/experiments/results/lance_ivf_kinds.json")
QUERIES, WARMUP, DEEP = 40, 5, 20
FLAT_PROBES = (24, 16, 12, 8)
SQ_RUNS: tuple[tuple[int, int | None], ...] = ((24, None), (24, 2), (24, 5), (16, 5), (32, 5))


def ranking(table: Any, vectors: np.ndarray, probes: int, refine: int | None = None, exact: bool = False
            ) -> tuple[dict[str, float], list[list[str]]]:  # fmt: skip
    """p50 / p95 / mean ms of the dense ranking (DEEP rows, ids and distances only) and the ids per query."""
    times, found = [], []
    for i, vector in enumerate(vectors):
        query = table.search(vector.tolist(), vector_column_name="vector").distance_type("cosine")
        if exact:
            query = query.bypass_vector_index()
        else:
            query = query.nprobes(probes)
            if refine:
                query = query.refine_factor(refine)
        started = time.perf_counter()
        rows = query.select(["chunk_id", "_distance"]).limit(DEEP).to_arrow()
        if i >= WARMUP:
            times.append((time.perf_counter() - started) * 1000)
            found.append(rows.column("chunk_id").to_pylist())
    return stats(times), found


def recall(found: list[list[str]], truth: list[list[str]]) -> float:
    return round(float(np.mean([len(set(a) & set(b)) / DEEP for a, b in zip(found, truth, strict=True)])), 3)


def main() -> None:
    from lancedb.index import IvfSq
    from vector_gateway.lance import LanceStore

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lance", type=Path, required=True, help="a folder bench.experiments.scale_store built")
    parser.add_argument("--copy", type=Path, required=True, help="where the copy that gets IVF_SQ goes")
    parser.add_argument("--cache-mb", type=int, default=1024)
    args = parser.parse_args()
    vectors = unit_vectors(QUERIES + WARMUP, seed=99)
    table = LanceStore(str(args.lance), maintain=False, cache_mb=args.cache_mb)._table(COLLECTION)
    out: dict[str, Any] = {"rows": table.count_rows(), "deep": DEEP, "queries": QUERIES}
    started = time.perf_counter()
    _, truth = ranking(table, vectors, 0, exact=True)
    out["exact_scan_s_per_query"] = round((time.perf_counter() - started) / len(vectors), 2)
    for probes in FLAT_PROBES:
        ranking(table, vectors, probes)  # warm
        figures, found = ranking(table, vectors, probes)
        out[f"ivf_flat_p{probes}"] = {**figures, "recall@20": recall(found, truth)}
        print(f"ivf_flat_p{probes}", out[f"ivf_flat_p{probes}"], flush=True)
    if not args.copy.exists():
        shutil.copytree(args.lance, args.copy)
    copy = LanceStore(str(args.copy), maintain=False, cache_mb=args.cache_mb)._table(COLLECTION)
    started = time.perf_counter()
    partitions = max(1, copy.count_rows() // 1000)  # as the engine's upkeep makes IVF_FLAT's
    copy.create_index("vector", config=IvfSq(distance_type="cosine", num_partitions=partitions), replace=True)
    out["ivf_sq_build_s"] = round(time.perf_counter() - started, 1)
    for probes, refine in SQ_RUNS:
        ranking(copy, vectors, probes, refine)  # warm
        figures, found = ranking(copy, vectors, probes, refine)
        name = f"ivf_sq_p{probes}" + (f"_refine{refine}" if refine else "")
        out[name] = {**figures, "recall@20": recall(found, truth)}
        print(name, out[name], flush=True)
    write_json(OUT, out, indent=2)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
