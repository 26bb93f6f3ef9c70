"""Fusion sweep behind bench/TUNING.md, on the corpus a `make bench` run left in its work folder.

    python -m bench.sweep [--work-dir bench/results/tmp/run]

Takes each query's dense and BM25 top-100 chunk lists once from the stored collection, then scores every
fusion variant on them (no re-ingest, no re-embedding), so the variants compare on identical inputs.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path

from vector_gateway import lexical
from vector_gateway.embedder import create_embedder
from vector_gateway.fusion import Fusion
from vector_gateway.settings import GatewaySettings
from vector_gateway.store import MilvusStore

from .data import SOURCE_PREFIX, load
from .metrics import evaluate, fold_to_documents
from .run import QUALITY_COLLECTION

Lists = dict[str, list[tuple[str, str, float]]]  # "dense"/"bm25" -> [(corpus id, chunk id, score)]


def ranked_lists(store: MilvusStore, queries: dict[str, str], depth: int = 100) -> dict[str, Lists]:
    embedder = create_embedder(GatewaySettings())
    analysis = store.analysis_of(QUALITY_COLLECTION)
    out = {}
    for qid, query in queries.items():
        dense = store.search(QUALITY_COLLECTION, mode="semantic", vector=embedder.embed_query(query), text="",
                             limit=depth, expr="")  # fmt: skip
        text = lexical.analyze(query, analysis) or query
        sparse = store.search(QUALITY_COLLECTION, mode="keyword", vector=None, text=text, limit=depth, expr="")
        out[qid] = {
            name: [(e["source"].removeprefix(SOURCE_PREFIX), e["chunk_id"], score) for score, e in hits]
            for name, hits in (("dense", dense), ("bm25", sparse))
        }
    return out


def fused(fusion: Fusion, depth: int) -> Callable[[Lists], list[str]]:
    def rank(lists: Lists) -> list[str]:
        doc_of = {chunk: doc for name in ("dense", "bm25") for doc, chunk, _ in lists[name][:depth]}
        order = fusion.fuse(*[[(chunk, s) for _, chunk, s in lists[name][:depth]] for name in ("dense", "bm25")])
        return fold_to_documents(doc_of[chunk] for chunk, _ in order)

    return rank


def variants() -> dict[str, Callable[[Lists], list[str]]]:
    out: dict[str, Callable[[Lists], list[str]]] = {
        "bm25 (stemmed)": lambda lists: fold_to_documents(d for d, _, _ in lists["bm25"]),
        "dense": lambda lists: fold_to_documents(d for d, _, _ in lists["dense"]),
    }
    for depth in (10, 20, 30, 50, 100):
        out[f"rrf k=60, {depth} candidates"] = fused(Fusion("rrf", 0.5, 60), depth)
        out[f"convex alpha=0.5, {depth} candidates"] = fused(Fusion("convex", 0.5), depth)
    for k in (10, 20, 40, 100):
        out[f"rrf k={k}"] = fused(Fusion("rrf", 0.5, k), 100)
    for alpha in (0.3, 0.4, 0.45, 0.55, 0.6, 0.7):
        out[f"convex alpha={alpha}"] = fused(Fusion("convex", alpha), 100)
        out[f"weighted rrf alpha={alpha}"] = fused(Fusion("rrf", alpha, 60), 100)
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.sweep", description=__doc__)
    parser.add_argument("--work-dir", type=Path, default=Path(__file__).resolve().parent / "results" / "tmp" / "run")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    data = load()
    store = MilvusStore(str(args.work_dir / "milvus.db"))
    lists = ranked_lists(store, data.queries)
    print("| variant | nDCG@10 | Recall@100 | MRR@10 |\n|---|---|---|---|")
    for name, rank in variants().items():
        scores = evaluate({qid: rank(per_query) for qid, per_query in lists.items()}, data.qrels)
        print(f"| {name} | {scores['ndcg@10']:.4f} | {scores['recall@100']:.4f} | {scores['mrr@10']:.4f} |")


if __name__ == "__main__":
    main()
