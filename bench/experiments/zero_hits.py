"""Zero-relevance hits dropped (issue 30, point 4): nDCG@10 / Recall@100 / MRR@10 on both benchmarks, offline.

    python -m bench.rankings --dataset scifact && python -m bench.rankings --dataset dbpedia-5k
    python -m bench.experiments.zero_hits

On the dense and BM25 lists bench.rankings keeps (100 deep, the real pipeline's chunks), each mode ranks as
the gateway does (Fusion().for_query, Fusion.single), once keeping every hit and once dropping the hits that
score 0 in every part (vector_gateway.search.relevant, what the gateway does now). Identical inputs, so any
difference is the drop's alone.
"""

from __future__ import annotations

import argparse

from vector_gateway.fusion import Fused, Fusion
from vector_gateway.search import relevant

from ..data import DATASETS, load
from ..metrics import fold_to_documents
from ..sweep import Lists, QueryRanker, load_lists, table

MODES = ("hybrid", "semantic", "keyword")


def fused_hits(lists: Lists, query: str, mode: str) -> list[tuple[str, Fused]]:
    """One query's chunk hits in `mode`, scored as the gateway scores them (before any drop)."""
    fusion = Fusion().for_query(query)
    dense = [(chunk, score) for _, chunk, score in lists["dense"]]
    bm25 = [(chunk, score) for _, chunk, score in lists["bm25"]]
    if mode == "hybrid":
        return fusion.fuse(dense, bm25)
    return fusion.single(dense, "dense") if mode == "semantic" else fusion.single(bm25, "keyword")


def ranker(mode: str, drop: bool) -> QueryRanker:
    def rank(lists: Lists, query: str) -> list[str]:
        doc_of = {chunk: doc for name in ("dense", "bm25") for doc, chunk, _ in lists[name]}
        hits = fused_hits(lists, query, mode)
        return fold_to_documents(doc_of[chunk] for chunk, f in hits if not drop or relevant(f))

    return rank


def dropped(datasets: list[str]) -> str:
    """How many chunk hits of the 100-deep rankings each mode drops: what the drop saves an agent."""
    lines = [
        "| dataset | mode | queries with a dropped hit | chunk hits dropped per query (mean) |",
        "|---|---|---|---|",
    ]
    for dataset in datasets:
        lists, queries = load_lists(dataset), load(DATASETS[dataset]).queries
        for mode in MODES:
            counts = [sum(not relevant(f) for _, f in fused_hits(per_query, queries[qid], mode))
                      for qid, per_query in lists.items()]  # fmt: skip
            share = sum(1 for n in counts if n) / len(counts)
            lines.append(f"| {dataset} | {mode} | {share:.1%} | {sum(counts) / len(counts):.1f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.experiments.zero_hits", description=__doc__)
    parser.add_argument("--dataset", action="append", choices=sorted(DATASETS), help="default: both")
    args = parser.parse_args(argv)
    datasets = args.dataset or sorted(DATASETS, reverse=True)
    chosen = {
        f"{mode}, {'zero-score hits dropped' if drop else 'every hit (before)'}": ranker(mode, drop)
        for mode in MODES
        for drop in (False, True)
    }
    print(table(chosen, datasets))
    print()
    print(dropped(datasets))


if __name__ == "__main__":
    main()
