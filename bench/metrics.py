"""Retrieval metrics over ranked document ids (binary relevance, as BEIR SciFact's qrels are)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence


def fold_to_documents(chunk_doc_ids: Iterable[str]) -> list[str]:
    """Chunk hits (best first) -> documents ranked by their best chunk, each once."""
    return list(dict.fromkeys(chunk_doc_ids))


def ndcg_at_k(ranked: Sequence[str], relevant: set[str], k: int = 10) -> float:
    gain = sum(1.0 / math.log2(rank + 2) for rank, doc in enumerate(ranked[:k]) if doc in relevant)
    ideal = sum(1.0 / math.log2(rank + 2) for rank in range(min(len(relevant), k)))
    return gain / ideal if ideal else 0.0


def recall_at_k(ranked: Sequence[str], relevant: set[str], k: int = 100) -> float:
    return len(set(ranked[:k]) & relevant) / len(relevant) if relevant else 0.0


def mrr_at_k(ranked: Sequence[str], relevant: set[str], k: int = 10) -> float:
    return next((1.0 / (rank + 1) for rank, doc in enumerate(ranked[:k]) if doc in relevant), 0.0)


def evaluate(runs: Mapping[str, Sequence[str]], qrels: Mapping[str, set[str]]) -> dict[str, float]:
    """Mean nDCG@10, Recall@100 and MRR@10 over the queries of ``qrels`` (a query with no run scores 0)."""
    queries = sorted(qrels)
    if not queries:
        return {"ndcg@10": 0.0, "recall@100": 0.0, "mrr@10": 0.0, "queries": 0}
    totals = {"ndcg@10": 0.0, "recall@100": 0.0, "mrr@10": 0.0}
    for query in queries:
        ranked, relevant = runs.get(query, []), qrels[query]
        totals["ndcg@10"] += ndcg_at_k(ranked, relevant)
        totals["recall@100"] += recall_at_k(ranked, relevant)
        totals["mrr@10"] += mrr_at_k(ranked, relevant)
    return {**{name: round(value / len(queries), 4) for name, value in totals.items()}, "queries": len(queries)}
