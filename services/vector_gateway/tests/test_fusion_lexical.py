"""Hybrid fusion and BM25 text analysis, checked against values worked out by hand."""

from __future__ import annotations

import pytest
from vector_gateway.calibration import DENSE_FLOOR, KEYWORD_HALF, dense_score, keyword_score
from vector_gateway.fusion import Fused, Fusion
from vector_gateway.lexical import analyze, phrase, phrase_text


def _scores(fused) -> dict:
    return {key: parts.score for key, parts in fused}


def test_calibrated_fusion_uses_fixed_transforms_not_the_other_hits() -> None:
    fusion = Fusion("calibrated", alpha=0.5)
    dense = [("a", 0.9), ("b", 0.7)]
    sparse = [("a", 20.0), ("c", 5.0)]
    fused = dict(fusion.fuse(dense, sparse))
    assert fused["a"].dense == pytest.approx(0.5 * dense_score(0.9))
    assert fused["a"].keyword == pytest.approx(0.5 * keyword_score(20.0))
    assert fused["a"].score == pytest.approx(fused["a"].dense + fused["a"].keyword)
    assert (fused["a"].dense_rank, fused["a"].keyword_rank) == (1, 1)
    assert (fused["b"].keyword, fused["b"].keyword_rank) == (0.0, None)  # absent from the BM25 list
    # A hit's score does not depend on what else the query found (min-max would make "b" 1.0 here).
    alone = dict(fusion.fuse([("b", 0.7)], []))
    assert alone["b"].score == pytest.approx(fused["b"].score)


def test_calibration_is_bounded_and_monotone() -> None:
    assert dense_score(-0.5) == dense_score(DENSE_FLOOR) == 0.0
    assert dense_score(1.0) == 1.0 and 0 < dense_score(0.5) < dense_score(0.6) < 1
    assert keyword_score(0.0) == 0.0 and keyword_score(KEYWORD_HALF) == pytest.approx(0.5)
    assert keyword_score(1e9) < 1.0 and keyword_score(5) < keyword_score(50)


def test_convex_fusion_min_max_normalises_each_list_by_hand() -> None:
    dense = [("a", 0.9), ("b", 0.7), ("c", 0.5)]  # -> a 1.0, b 0.5, c 0.0
    sparse = [("c", 12.0), ("d", 6.0), ("a", 3.0)]  # -> c 1.0, d ~0.333, a 0.0
    fused = _scores(Fusion("convex", alpha=0.5).fuse(dense, sparse))
    assert fused == pytest.approx({"a": 0.5, "b": 0.25, "c": 0.5, "d": 1 / 6})
    # alpha weights the dense list.
    assert _scores(Fusion("convex", alpha=1.0).fuse(dense, sparse))["a"] == pytest.approx(1.0)
    assert _scores(Fusion("convex", alpha=0.0).fuse(dense, sparse))["c"] == pytest.approx(1.0)


def test_rrf_is_one_for_first_in_both_and_orders_by_rank_sums() -> None:
    fusion = Fusion("rrf", alpha=0.5, rrf_k=60)
    fused = fusion.fuse([("a", 0.9), ("b", 0.8)], [("a", 5.0), ("c", 4.0)])
    assert fused[0][0] == "a" and fused[0][1].score == pytest.approx(1.0)
    scores = _scores(fused)
    assert scores["b"] == pytest.approx(scores["c"]) == pytest.approx((1 / 62) / (2 / 61))


def test_fusion_of_empty_and_single_lists() -> None:
    assert Fusion().fuse([], []) == []
    assert _scores(Fusion().fuse([("a", 0.3)], [])) == {"a": pytest.approx(Fusion().alpha * dense_score(0.3))}
    single = Fusion().single([("a", 0.3)], "dense")
    assert single[0][1].score == pytest.approx(dense_score(0.3)) and single[0][1].dense_rank == 1


def test_analysis_stems_drops_stop_words_and_leaves_raw_alone() -> None:
    assert analyze("The mutations were Mutated in the genomes", "snowball_en") == "mutat were mutat genom"
    assert analyze("Running runners ran", "snowball_en") == "run runner ran"
    assert analyze("the and of", "snowball_en") == ""
    assert (
        analyze("Ünïcode wörds, 1,000 cells", "snowball_en") == "ünïcode wörds 1 000 cell"
    )  # English Snowball leaves non-ASCII words
    assert analyze("The Mutations", "raw") == "The Mutations"


def test_short_queries_lean_on_vectors_long_ones_on_words() -> None:
    """A setting (VECTOR_GATEWAY_HYBRID_ALPHA_SHORT); by default every query is weighed alike (bench.tune)."""
    assert Fusion().for_query("the Szechwan dish").alpha == Fusion().for_query("b c d e f g").alpha == 0.3
    fusion = Fusion(alpha=0.5, short_alpha=0.6)
    short, long = (
        fusion.for_query("the Szechwan dish"),
        fusion.for_query("Vitamin D deficiency raises the risk of hip fractures"),
    )
    assert (short.alpha, long.alpha) == (0.6, 0.5)  # stop words do not count: "the Szechwan dish" has two words
    assert fusion.for_query("one two three four five").alpha == 0.6 and fusion.for_query("b c d e f g").alpha == 0.5
    # The weights come from the query alone: the same hit scores the same for every query of a length.
    hits = ([("a", 0.6)], [("a", 30.0)])
    assert _scores(long.fuse(*hits))["a"] == pytest.approx(0.5 * dense_score(0.6) + 0.5 * 30 / 70)
    assert Fusion(short_alpha=None).for_query("two words").alpha == Fusion().alpha


def test_multi_language_analysis_keeps_english_terms_and_marks_the_others() -> None:
    """An English document and the query's English side are analysed as snowball_en (accents folded): an English
    collection ranks as before; another language's terms carry its mark and never meet an English one."""
    from vector_gateway.lexical import LANGUAGE_MARK, analyze_query

    text = "The mutations were Mutated in the genomes of 1,000 cells"
    assert analyze(text, "snowball_multi", "en") == analyze(text, "snowball_en")
    assert analyze("Hans-Bernhard Bröker", "snowball_multi", "en") == analyze("Hans-Bernhard Broker", "snowball_en")
    query = analyze_query("mutated cells", "snowball_multi").split()
    assert query[:2] == ["mutat", "cell"] and all(LANGUAGE_MARK in term for term in query[2:])
    assert f"de{LANGUAGE_MARK}standardpak" in analyze_query("Standardpaket", "snowball_multi").split()
    assert analyze("Standardpakete", "snowball_multi", "de") == f"de{LANGUAGE_MARK}standardpak"


def test_a_query_word_makes_no_term_of_a_language_it_is_a_stop_word_of() -> None:
    """A French everyday question matched every French passage on "comment", "de", "un" (issue 52): a stop word of a
    language makes no term of that language, and still makes the others' (English "comment" is a word)."""
    from vector_gateway.lexical import LANGUAGE_MARK, analyze_query

    terms = set(analyze_query("comment enlever une tache de vin sur un tapis", "snowball_multi").split())
    assert not {f"fr{LANGUAGE_MARK}{word}" for word in ("comment", "de", "un", "sur", "une")} & terms
    assert {f"fr{LANGUAGE_MARK}enlev", f"fr{LANGUAGE_MARK}tapis", "comment"} <= terms
    german = set(analyze_query("war die Installation erfolgreich", "snowball_multi").split())
    assert f"de{LANGUAGE_MARK}war" not in german and f"de{LANGUAGE_MARK}installation" in german and "war" in german


def test_an_exact_phrase_ignores_case_accents_ligatures_punctuation_and_markdown() -> None:
    stored = "**Note:** the ﬁle is read by `set\\_term` — Hans-Bernhard Bröker's\nfix."
    for typed in ("the file is read by set_term", "THE FILE IS READ BY SET TERM", "hans bernhard broker s fix"):
        assert phrase(typed) is not None and phrase(typed) in phrase_text(stored), typed
    assert phrase("the file is written by set_term") not in phrase_text(stored)  # a word differs
    assert phrase("is read by set") is not None and phrase("ead by set term") not in phrase_text(stored)  # whole words
    # Too short to be a phrase: under four words, or fewer than two that are not stop words.
    assert [phrase(q) for q in ("read by Bröker", "set term", "it is in the", "")] == [None, None, None, None]
    assert phrase("read by set_term") == " read by set term "  # set_term: two words, as the stored "set\\_term"


def test_an_exact_phrase_lifts_a_score_onto_the_floor_and_keeps_the_order() -> None:
    fusion = Fusion(phrase_floor=0.5)
    low, high = Fused(0.1, 0.2), Fused(0.4, 0.3)
    assert fusion.exact(low).score == pytest.approx(0.5 + 0.5 * 0.3)
    assert fusion.exact(high).score == pytest.approx(0.5 + 0.5 * 0.7)
    assert fusion.exact(low).phrase == pytest.approx(0.5 * 0.7) and fusion.exact(Fused(0.6, 0.4)).score == 1.0
    assert low.score < fusion.exact(low).score < fusion.exact(high).score  # raised, in the same order
