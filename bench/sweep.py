"""Fusion sweep behind bench/TUNING.md, on both benchmarks, offline.

    python -m bench.rankings --dataset scifact && python -m bench.rankings --dataset dbpedia-5k
    python -m bench.sweep

bench.rankings keeps each query's dense and BM25 top-100 chunk lists with their raw scores (cosine, BM25);
this scores every fusion variant on them (no re-ingest, no re-embedding), so the variants compare on
identical inputs, and prints one row per variant with nDCG@10 / Recall@100 / MRR@10 on both sets.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path

from vector_gateway.fusion import Fusion

from .data import DATASETS, load
from .metrics import evaluate, fold_to_documents
from .rankings import TMP

Lists = dict[str, list[tuple[str, str, float]]]  # "dense"/"bm25" -> [(corpus id, chunk id, score)]
Ranker = Callable[[Lists], list[str]]


def fused(fusion: Fusion, depth: int = 100) -> Ranker:
    def rank(lists: Lists) -> list[str]:
        doc_of = {chunk: doc for name in ("dense", "bm25") for doc, chunk, _ in lists[name][:depth]}
        order = fusion.fuse(*[[(chunk, s) for _, chunk, s in lists[name][:depth]] for name in ("dense", "bm25")])
        return fold_to_documents(doc_of[chunk] for chunk, _ in order)

    return rank


def single(name: str) -> Ranker:
    return lambda lists: fold_to_documents(d for d, _, _ in lists[name])


def variants() -> dict[str, Ranker]:
    out: dict[str, Ranker] = {"bm25 (stemmed)": single("bm25"), "dense": single("dense")}
    out["before: convex min-max alpha=0.5"] = fused(Fusion("convex", 0.5))
    out["rrf k=60"] = fused(Fusion("rrf", 0.5, 60))
    out["default (calibrated)"] = fused(Fusion())
    return out


def load_lists(dataset: str) -> dict[str, Lists]:
    path = TMP / f"lists-{dataset}.json"
    if not path.is_file():
        raise SystemExit(f"{path} is missing: run `python -m bench.rankings --dataset {dataset}` first.")
    return json.loads(path.read_text())


def table(chosen: dict[str, Ranker], datasets: list[str]) -> str:
    inputs = {d: (load_lists(d), load(DATASETS[d]).qrels) for d in datasets}
    head = " | ".join(f"{d} nDCG@10 | R@100 | MRR@10" for d in datasets)
    lines = [f"| variant | {head} |", "|---|" + "---|" * 3 * len(datasets)]
    for name, rank in chosen.items():
        cells = []
        for lists, qrels in inputs.values():
            s = evaluate({q: rank(per_query) for q, per_query in lists.items()}, qrels)
            cells += [f"{s['ndcg@10']:.4f}", f"{s['recall@100']:.4f}", f"{s['mrr@10']:.4f}"]
        lines.append(f"| {name} | {' | '.join(cells)} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.sweep", description=__doc__)
    parser.add_argument("--dataset", action="append", choices=sorted(DATASETS), help="default: both")
    args = parser.parse_args(argv)
    print(table(variants(), args.dataset or sorted(DATASETS, reverse=True)))


if __name__ == "__main__":
    main()
