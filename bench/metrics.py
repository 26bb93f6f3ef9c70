"""Retrieval metrics over ranked document ids.

Relevance comes as {doc id: grade}: nDCG@10 uses the grade as the gain (linear, as BEIR's pytrec_eval does),
so it is graded on dbpedia-5k (0/1/2) and binary on SciFact (all 1); Recall@100 and MRR@10 count any grade
>= 1 as relevant. A plain set of ids means grade 1 for each.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

Relevance = Mapping[str, int] | set[str]


def _grades(relevant: Relevance) -> Mapping[str, int]:
    return relevant if isinstance(relevant, Mapping) else dict.fromkeys(relevant, 1)


def fold_to_documents(chunk_doc_ids: Iterable[str]) -> list[str]:
    """Chunk hits (best first) -> documents ranked by their best chunk, each once."""
    return list(dict.fromkeys(chunk_doc_ids))


def ndcg_at_k(ranked: Sequence[str], relevant: Relevance, k: int = 10) -> float:
    grades = _grades(relevant)
    gain = sum(grades.get(doc, 0) / math.log2(rank + 2) for rank, doc in enumerate(ranked[:k]))
    best = sorted(grades.values(), reverse=True)[:k]
    ideal = sum(grade / math.log2(rank + 2) for rank, grade in enumerate(best))
    return gain / ideal if ideal else 0.0


def recall_at_k(ranked: Sequence[str], relevant: Relevance, k: int = 100) -> float:
    return len(set(ranked[:k]) & set(relevant)) / len(relevant) if relevant else 0.0


def mrr_at_k(ranked: Sequence[str], relevant: Relevance, k: int = 10) -> float:
    return next((1.0 / (rank + 1) for rank, doc in enumerate(ranked[:k]) if doc in relevant), 0.0)


def evaluate(runs: Mapping[str, Sequence[str]], qrels: Mapping[str, Relevance]) -> dict[str, float]:
    """Mean nDCG@10, Recall@100 and MRR@10 over the queries of ``qrels`` (a query with no run scores 0)."""
    queries = sorted(qrels)
    if not queries:
        return {"ndcg@10": 0.0, "recall@100": 0.0, "mrr@10": 0.0, "queries": 0}
    graded = any(grade > 1 for q in queries for grade in _grades(qrels[q]).values())
    totals = {"ndcg@10": 0.0, "recall@100": 0.0, "mrr@10": 0.0} | ({"ndcg@10_binary": 0.0} if graded else {})
    for query in queries:
        ranked, relevant = runs.get(query, []), qrels[query]
        totals["ndcg@10"] += ndcg_at_k(ranked, relevant)
        totals["recall@100"] += recall_at_k(ranked, relevant)
        totals["mrr@10"] += mrr_at_k(ranked, relevant)
        if graded:  # the same run with every grade >= 1 counted as 1, as SciFact's and published figures are
            totals["ndcg@10_binary"] += ndcg_at_k(ranked, set(relevant))
    return {**{name: round(value / len(queries), 4) for name, value in totals.items()}, "queries": len(queries)}
