"""Dense pseudo-relevance feedback (issue 52, point 4: "the query" among the levers), offline, on the tuning sets.

    python -m bench.tune_cache                            # the cached chunks and query vectors (bench.tune's)
    python -m bench.experiments.query_feedback            # -> bench/experiments/results/query_feedback.json

A query's vector moves toward the passages it found first (Rocchio's rule: q' = q + beta x the mean of the first
``m`` passages' vectors, unit length again) and the dense list is ranked again with it; BM25 is unchanged and the
two are fused as the shipped search fuses them (bench.tune.shipped_variant). The feedback comes from the shipped
hybrid ranking or from the dense list alone. Scored on SciFact train and dbpedia-5k dev only, as bench.tune's levers
are: no test query is read.
"""

from __future__ import annotations

import argparse
import itertools
import json
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from ..tune import Tuning, mean, shipped_variant
from ..tune_cache import cache_paths
from ..tune_rank import Cached, Run, Variant, fold, rank_passages

OUT = Path(__file__).resolve().parent / "results" / "query_feedback.json"
SOURCES = ("hybrid", "dense")
FIRST = (1, 2, 3, 5)  # passages read back
BETAS = (0.25, 0.5, 1.0)


@lru_cache(maxsize=2)
def vectors(dataset: str) -> tuple[np.ndarray, np.ndarray]:
    """The cached query and chunk vectors (unit length) of ``dataset``."""
    loaded = np.load(cache_paths(dataset)[0])
    return loaded["queries"], loaded["chunks"]


def run(cached: Cached, variant: Variant, split: str, source: str, first: int, beta: float) -> Run:
    queries, chunks = vectors(cached.dataset)
    sparse = cached.bm25(variant)
    ranked = {}
    for qid, text in cached.splits[split].items():
        row = cached.row[text]
        if source == "hybrid":
            hits = rank_passages(variant, text, cached.cosines[row], sparse[row], cached.words)
            read = [index for index, _ in hits[:first]]
        else:
            read = np.argsort(-cached.cosines[row])[:first].tolist()
        moved = queries[row] + beta * chunks[read].mean(axis=0)
        moved /= np.linalg.norm(moved)
        hits = rank_passages(variant, text, chunks @ moved, sparse[row], cached.words)
        ranked[qid] = fold(((cached.docs[i], score) for i, score in hits), variant.second)
    return Run(ranked)


def measure() -> dict[str, Any]:
    tuning, variant = Tuning(), shipped_variant()
    train, dev = tuning.score(variant)
    rows: list[dict[str, Any]] = []
    for source, first, beta in itertools.product(SOURCES, FIRST, BETAS):
        scifact = mean(run(tuning.scifact, variant, "train", source, first, beta).per_query(tuning.train))
        dbpedia = mean(run(tuning.dbpedia, variant, "test", source, first, beta).per_query(tuning.dev))
        rows.append({"source": source, "first": first, "beta": beta,
                     "scifact_train": round(scifact, 4), "dbpedia_dev": round(dbpedia, 4)})  # fmt: skip
    best = max(rows, key=lambda r: r["scifact_train"])
    return {
        "variant": variant.changed(),
        "without feedback": {"scifact_train": train, "dbpedia_dev": dev},
        "best on scifact train": best,
        "rows": rows,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.experiments.query_feedback", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    report = measure()
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps({k: v for k, v in report.items() if k != "rows"}, indent=1))


if __name__ == "__main__":
    main()
