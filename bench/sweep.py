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

from vector_gateway import lexical
from vector_gateway.calibration import dense_score
from vector_gateway.fusion import Fusion

from .data import DATASETS, load
from .metrics import evaluate, fold_to_documents
from .rankings import TMP

Lists = dict[str, list[tuple[str, str, float]]]  # "dense"/"bm25" -> [(corpus id, chunk id, score)]
Ranker = Callable[[Lists], list[str]]
QueryRanker = Callable[[Lists, str], list[str]]  # the variants that look at the query's own words (C6-C8)


def fused(fusion: Fusion, depth: int = 100) -> Ranker:
    def rank(lists: Lists) -> list[str]:
        doc_of = {chunk: doc for name in ("dense", "bm25") for doc, chunk, _ in lists[name][:depth]}
        order = fusion.fuse(*[[(chunk, s) for _, chunk, s in lists[name][:depth]] for name in ("dense", "bm25")])
        return fold_to_documents(doc_of[chunk] for chunk, _ in order)

    return rank


def single(name: str) -> Ranker:
    return lambda lists: fold_to_documents(d for d, _, _ in lists[name])


def calibrated(alpha: float = 0.5, floor: float = 0.10, ceiling: float = 0.80, half: float = 20.0, depth: int = 100,
               adapt: Callable[[list, list], float] | None = None) -> Ranker:  # fmt: skip
    """alpha x clip((cos - floor) / (ceiling - floor)) + (1 - alpha) x bm25 / (bm25 + half); ``adapt`` may set
    alpha per query from the two calibrated lists (the query-adaptive variants)."""

    def rank(lists: Lists) -> list[str]:
        dense = {c: min(max((v - floor) / (ceiling - floor), 0.0), 1.0) for _, c, v in lists["dense"][:depth]}
        sparse = {c: v / (v + half) if v > 0 else 0.0 for _, c, v in lists["bm25"][:depth]}
        doc_of = {c: d for name in ("dense", "bm25") for d, c, _ in lists[name][:depth]}
        a = adapt(sorted(dense.values(), reverse=True), sorted(sparse.values(), reverse=True)) if adapt else alpha
        scores = {c: a * dense.get(c, 0.0) + (1 - a) * sparse.get(c, 0.0) for c in doc_of}
        return fold_to_documents(doc_of[c] for c in sorted(scores, key=scores.__getitem__, reverse=True))

    return rank


def peakedness(dense: list[float], sparse: list[float]) -> float:
    """alpha from how far each list's first hit stands above its tenth (half fixed 0.5, half adaptive)."""
    gap = [(v[0] - v[min(9, len(v) - 1)]) if v else 0.0 for v in (dense, sparse)]
    return 0.25 + 0.5 * (gap[0] / (gap[0] + gap[1])) if sum(gap) else 0.5


def confidence(dense: list[float], sparse: list[float]) -> float:
    """alpha from each list's best calibrated score: trust the list that is surer of its first hit."""
    best = [v[0] if v else 0.0 for v in (dense, sparse)]
    return 0.25 + 0.5 * (best[0] / (best[0] + best[1])) if sum(best) else 0.5


def words(query: str) -> int:
    """How many words BM25 sees in the query (stop words dropped), at least 1: what Fusion.for_query counts."""
    return max(1, lexical.content_words(query))


def per_word(alpha: float, half_per_word: float, combine: str = "sum") -> QueryRanker:
    """BM25 sums one term per query word, so a long claim scores high on any passage that shares its topic
    words: the half-point grows with the query's word count (a per-word BM25 of ``half_per_word`` is half)."""

    def rank(lists: Lists, query: str) -> list[str]:
        half = half_per_word * words(query)
        dense = {c: dense_score(v) for _, c, v in lists["dense"]}
        sparse = {c: v / (v + half) if v > 0 else 0.0 for _, c, v in lists["bm25"]}
        doc_of = {c: d for name in ("dense", "bm25") for d, c, _ in lists[name]}
        if combine == "or":  # noisy-or: either list alone can vouch for a passage
            scores = {c: 1 - (1 - alpha * dense.get(c, 0.0)) * (1 - (1 - alpha) * sparse.get(c, 0.0)) for c in doc_of}
        else:
            scores = {c: alpha * dense.get(c, 0.0) + (1 - alpha) * sparse.get(c, 0.0) for c in doc_of}
        return fold_to_documents(doc_of[c] for c in sorted(scores, key=scores.__getitem__, reverse=True))

    return rank


def by_length(short_alpha: float, long_alpha: float, cut: int, half: float = 40.0) -> QueryRanker:
    """alpha from the query's length alone: short (entity-like) queries lean on the vectors, long ones on words."""

    def rank(lists: Lists, query: str) -> list[str]:
        return calibrated(short_alpha if words(query) <= cut else long_alpha, half=half)(lists)

    return rank


def ignoring_query(rank: Ranker) -> QueryRanker:
    return lambda lists, query: rank(lists)


def query_variants() -> dict[str, QueryRanker]:
    out: dict[str, QueryRanker] = {}
    for half_per_word in (4.0, 6.0, 8.0, 12.0):
        for alpha in (0.4, 0.5, 0.6):
            out[f"C6 calibrated, BM25 half-point {half_per_word:g} per query word, alpha={alpha}"] = per_word(
                alpha, half_per_word
            )
        out[f"C7 noisy-or, BM25 half-point {half_per_word:g} per query word"] = per_word(0.8, half_per_word, "or")
    for cut in (3, 5, 8):
        for short_alpha, long_alpha in ((0.6, 0.4), (0.7, 0.5), (0.6, 0.5)):
            out[f"C8 alpha {short_alpha} up to {cut} query words, {long_alpha} above"] = by_length(
                short_alpha, long_alpha, cut
            )
    out["default (the gateway's Fusion().for_query)"] = lambda lists, query: fused(Fusion().for_query(query))(lists)
    for low, high in ((3, 8), (3, 12), (5, 10)):
        out[f"C9 alpha 0.6 up to {low} query words, falling linearly to 0.4 at {high}"] = sloped(low, high)
    return out


def sloped(low: int, high: int, short_alpha: float = 0.6, long_alpha: float = 0.4) -> QueryRanker:
    def rank(lists: Lists, query: str) -> list[str]:
        share = min(max((words(query) - low) / (high - low), 0.0), 1.0)
        return calibrated(short_alpha + share * (long_alpha - short_alpha), half=40.0)(lists)

    return rank


def variants() -> dict[str, Ranker]:
    out: dict[str, Ranker] = {"bm25 (stemmed)": single("bm25"), "dense": single("dense")}
    out["C0 before: convex min-max alpha=0.5"] = fused(Fusion("convex", 0.5))
    out["C0 rrf k=60"] = fused(Fusion("rrf", 0.5, 60))
    for half in (5, 10, 20, 40, 80):
        for alpha in (0.4, 0.5, 0.6, 0.7):
            out[f"C1 calibrated alpha={alpha} half={half}"] = calibrated(alpha, half=half)
    for floor, ceiling in ((0.0, 1.0), (0.2, 0.8), (0.1, 0.6)):
        out[f"C2 calibrated cosine {floor}..{ceiling}, alpha=0.5 half=40"] = calibrated(0.5, floor, ceiling, 40)
    for half in (20, 40):
        out[f"C3 adaptive: peakedness, half={half}"] = calibrated(half=half, adapt=peakedness)
        out[f"C3 adaptive: confidence, half={half}"] = calibrated(half=half, adapt=confidence)
    for depth in (20, 50):
        out[f"C4 calibrated alpha=0.5 half=40, {depth} candidates"] = calibrated(0.5, half=40, depth=depth)
    return out


def load_lists(dataset: str) -> dict[str, Lists]:
    path = TMP / f"lists-{dataset}.json"
    if not path.is_file():
        raise SystemExit(f"{path} is missing: run `python -m bench.rankings --dataset {dataset}` first.")
    return json.loads(path.read_text())


def table(chosen: dict[str, QueryRanker], datasets: list[str]) -> str:
    data = {d: load(DATASETS[d]) for d in datasets}
    inputs = {d: (load_lists(d), data[d].qrels, data[d].queries) for d in datasets}
    head = " | ".join(f"{d} nDCG@10 | R@100 | MRR@10" for d in datasets)
    lines = [f"| variant | {head} |", "|---|" + "---|" * 3 * len(datasets)]
    for name, rank in chosen.items():
        cells = []
        for lists, qrels, queries in inputs.values():
            s = evaluate({q: rank(per_query, queries[q]) for q, per_query in lists.items()}, qrels)
            binary = f" ({s['ndcg@10_binary']:.4f} binary)" if "ndcg@10_binary" in s else ""
            cells += [f"{s['ndcg@10']:.4f}{binary}", f"{s['recall@100']:.4f}", f"{s['mrr@10']:.4f}"]
        lines.append(f"| {name} | {' | '.join(cells)} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.sweep", description=__doc__)
    parser.add_argument("--dataset", action="append", choices=sorted(DATASETS), help="default: both")
    args = parser.parse_args(argv)
    datasets = args.dataset or sorted(DATASETS, reverse=True)
    chosen = {name: ignoring_query(rank) for name, rank in variants().items()} | query_variants()
    print(table(chosen, datasets))


if __name__ == "__main__":
    main()
