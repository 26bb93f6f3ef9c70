"""Hybrid fusion and BM25 text analysis, checked against values worked out by hand."""

from __future__ import annotations

import pytest
from vector_gateway.fusion import Fusion
from vector_gateway.lexical import analyze


def test_convex_fusion_min_max_normalises_each_list_by_hand() -> None:
    dense = [("a", 0.9), ("b", 0.7), ("c", 0.5)]  # -> a 1.0, b 0.5, c 0.0
    sparse = [("c", 12.0), ("d", 6.0), ("a", 3.0)]  # -> c 1.0, d ~0.333, a 0.0
    fused = dict(Fusion("convex", alpha=0.5).fuse(dense, sparse))
    assert fused == pytest.approx({"a": 0.5, "b": 0.25, "c": 0.5, "d": 1 / 6})
    # alpha weights the dense list.
    assert dict(Fusion("convex", alpha=1.0).fuse(dense, sparse))["a"] == pytest.approx(1.0)
    assert dict(Fusion("convex", alpha=0.0).fuse(dense, sparse))["c"] == pytest.approx(1.0)


def test_rrf_is_one_for_first_in_both_and_orders_by_rank_sums() -> None:
    fusion = Fusion("rrf", alpha=0.5, rrf_k=60)
    fused = fusion.fuse([("a", 0.9), ("b", 0.8)], [("a", 5.0), ("c", 4.0)])
    assert fused[0] == ("a", pytest.approx(1.0))
    scores = dict(fused)
    assert scores["b"] == pytest.approx(scores["c"]) == pytest.approx((1 / 62) / (2 / 61))


def test_fusion_of_empty_and_single_lists() -> None:
    assert Fusion().fuse([], []) == []
    assert Fusion().fuse([("a", 0.3)], []) == [("a", pytest.approx(0.5))]


def test_analysis_stems_drops_stop_words_and_leaves_raw_alone() -> None:
    assert analyze("The mutations were Mutated in the genomes", "snowball_en") == "mutat were mutat genom"
    assert analyze("Running runners ran", "snowball_en") == "run runner ran"
    assert analyze("the and of", "snowball_en") == ""
    assert (
        analyze("Ünïcode wörds, 1,000 cells", "snowball_en") == "ünïcode wörds 1 000 cell"
    )  # English Snowball leaves non-ASCII words
    assert analyze("The Mutations", "raw") == "The Mutations"
