"""Fusing the dense and the BM25 ranking of one search (over one or many collections) into one list.

Three methods (VECTOR_GATEWAY_FUSION):
- ``calibrated`` (default): ``alpha * dense_score(cosine) + (1 - alpha) * keyword_score(bm25)``, both fixed
  transforms (calibration.py), so a score means the same for every query and every collection, and
  ``min_score`` works. A hit missing from a list scores 0 there.
- ``convex``: the same sum over min-max normalised lists (Bruch et al. 2023; the default until
  bench/TUNING.md row C1): the best hit of every query scores about 1, whatever it is.
- ``rrf``: reciprocal rank fusion, sum of w / (k + rank), divided by its maximum.

The dense weight ``alpha`` is 0.3 for every query: tuned on SciFact's train queries and a dbpedia-5k dev split
(bench.tune, docs/search-scores.md "Tuned without the test queries"), it lifts SciFact test nDCG@10 by 0.012 over
the weights before (0.5, and 0.6 for a query of at most five content words: ``short_alpha``, still a setting).
The weights depend on the query alone, never on its hits, so a score means the same for every query and
``min_score`` keeps its meaning.

The candidate lists come from every collection searched, merged by raw score before fusing, so a search
over three collections ranks as one over one collection holding the same chunks.

A passage that holds the query word for word (``Fusion.exact``; search.py finds them) is raised onto
``[phrase_floor, 1]``: ``phrase_floor + (1 - phrase_floor) x score``, in every mode and method. Its order among
such passages stays; above every other passage scoring less than its raised score.
Every fused hit keeps its parts: ``score == dense + keyword + phrase`` (what a detailed search shows).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, replace
from typing import Literal, TypeVar

from ingestion_contracts.gateway import EXACT_PHRASE_SCORE

from .calibration import dense_score, keyword_score
from .lexical import content_words

FusionMethod = Literal["calibrated", "convex", "rrf"]
K = TypeVar("K", bound=Hashable)  # what identifies a hit (a chunk id, a row)
Ranked = Sequence[tuple[K, float]]  # (hit key, raw score), best first


@dataclass(frozen=True)
class Fused:
    """A hit's fused score and its contributions (0 for a list the hit is not in; ``phrase``: what an exact phrase
    added, Fusion.exact); ranks from 1."""

    dense: float
    keyword: float
    dense_rank: int | None = None
    keyword_rank: int | None = None
    phrase: float = 0.0

    @property
    def score(self) -> float:
        return self.dense + self.keyword + self.phrase


@dataclass(frozen=True)
class Fusion:
    method: FusionMethod = "calibrated"
    alpha: float = 0.3  # weight of the dense list (its reciprocal ranks for rrf); of a short query: short_alpha
    rrf_k: int = 60
    short_alpha: float | None = None  # None: alpha for every query
    short_words: int = 5
    phrase_floor: float = EXACT_PHRASE_SCORE  # the least score of a passage holding the query; 0: no exact phrases

    def for_query(self, text: str) -> Fusion:
        """The fusion for this query: ``short_alpha`` when it has at most ``short_words`` content words."""
        if self.short_alpha is None or content_words(text) > self.short_words:
            return self
        return replace(self, alpha=self.short_alpha)

    def fuse(self, dense: Ranked[K], sparse: Ranked[K]) -> list[tuple[K, Fused]]:
        """Both lists fused, best first (ties keep dense order, then keyword order)."""
        weights = (self.alpha, 1.0 - self.alpha)
        parts = [_parts(self, dense, weights[0], "d"), _parts(self, sparse, weights[1], "k")]
        ranks = [{key: rank for rank, (key, _) in enumerate(ranked, 1)} for ranked in (dense, sparse)]
        keys = dict.fromkeys([key for key, _ in dense] + [key for key, _ in sparse])
        fused = [
            (key, Fused(parts[0].get(key, 0.0), parts[1].get(key, 0.0), ranks[0].get(key), ranks[1].get(key)))
            for key in keys
        ]
        return sorted(fused, key=lambda item: item[1].score, reverse=True)

    def single(self, ranked: Ranked[K], kind: Literal["dense", "keyword"]) -> list[tuple[K, Fused]]:
        """One list scored alone (semantic or keyword mode), on the calibrated scale."""
        transform = dense_score if kind == "dense" else keyword_score
        return [
            (key, Fused(transform(raw), 0.0, rank, None) if kind == "dense" else Fused(0.0, transform(raw), None, rank))
            for rank, (key, raw) in enumerate(ranked, 1)
        ]

    def part(self, kind: Literal["dense", "keyword"], raw: float, hybrid: bool) -> float:
        """What a raw score (cosine, BM25) of a hit found beyond its list adds to its score, as ``fuse`` or
        ``single`` weigh it."""
        if self.method != "calibrated":
            return 0.0  # a rank-based part needs the whole list: a hit found beyond it has none
        if kind == "dense":
            return (self.alpha if hybrid else 1.0) * dense_score(raw)
        return (1.0 - self.alpha if hybrid else 1.0) * keyword_score(raw)

    def exact(self, fused: Fused) -> Fused:
        """``fused`` of a passage that holds the query word for word: raised to ``phrase_floor + (1 - phrase_floor)
        x score`` (the lift is its ``phrase`` part), so it scores at least ``phrase_floor`` and keeps its order
        among exact passages."""
        base = min(max(fused.dense + fused.keyword, 0.0), 1.0)
        return replace(fused, phrase=self.phrase_floor * (1.0 - base))

    def ceiling(self, cosine: float | None, bm25: float | None) -> float:
        """The best score a hit ranked below both of these raw scores can reach (calibrated only)."""
        if self.method != "calibrated":
            return float("inf")
        dense = self.alpha * dense_score(cosine) if cosine is not None else 0.0
        keyword = (1.0 - self.alpha) * keyword_score(bm25) if bm25 is not None else 0.0
        return dense + keyword


def _parts(fusion: Fusion, ranked: Ranked[K], weight: float, kind: str) -> dict[K, float]:
    if fusion.method == "calibrated":
        transform = dense_score if kind == "d" else keyword_score
        return {key: weight * transform(raw) for key, raw in ranked}
    if fusion.method == "convex":
        return {key: weight * value for key, value in _min_max(ranked).items()}
    best = 1.0 / (fusion.rrf_k + 1)  # first in both lists: sum of weights x best = 1
    return {key: weight * (1.0 / (fusion.rrf_k + rank)) / best for rank, (key, _) in enumerate(ranked, 1)}


def _min_max(ranked: Ranked[K]) -> dict[K, float]:
    if not ranked:
        return {}
    values = [score for _, score in ranked]
    high, low = max(values), min(values)
    if high == low:
        return {key: 1.0 for key, _ in ranked}
    return {key: (score - low) / (high - low) for key, score in ranked}
