"""The benchmark's metric code against cases computed by hand."""

from __future__ import annotations

import math

import pytest

from bench.metrics import evaluate, fold_to_documents, mrr_at_k, ndcg_at_k, recall_at_k


def test_ndcg_by_hand() -> None:
    # Relevant docs at ranks 1 and 3 of 2 relevant: DCG = 1/log2(2) + 1/log2(4) = 1.5; IDCG = 1 + 1/log2(3).
    ranked = ["a", "x", "b", "y"]
    assert ndcg_at_k(ranked, {"a", "b"}) == pytest.approx(1.5 / (1 + 1 / math.log2(3)))
    assert ndcg_at_k(["x", "y"], {"a"}) == 0.0
    assert ndcg_at_k(["a"], {"a"}) == 1.0
    # Only the first k ranks count.
    assert ndcg_at_k(["x"] * 10 + ["a"], {"a"}) == 0.0


def test_recall_and_mrr_by_hand() -> None:
    assert recall_at_k(["a", "x", "b"], {"a", "b", "c", "d"}) == 0.5
    assert recall_at_k(["x"] * 100 + ["a"], {"a"}) == 0.0  # past 100
    assert mrr_at_k(["x", "y", "a"], {"a"}) == pytest.approx(1 / 3)
    assert mrr_at_k(["x"] * 10 + ["a"], {"a"}) == 0.0


def test_chunks_fold_to_documents_by_their_best_chunk() -> None:
    assert fold_to_documents(["d2", "d1", "d2", "d3", "d1"]) == ["d2", "d1", "d3"]


def test_evaluate_averages_over_qrels_queries_and_scores_missing_runs_zero() -> None:
    qrels = {"q1": {"a"}, "q2": {"b"}}
    scores = evaluate({"q1": ["a"]}, qrels)
    assert scores == {"ndcg@10": 0.5, "recall@100": 0.5, "mrr@10": 0.5, "queries": 2}
