"""Fusing the dense and the BM25 ranking of one hybrid search into one list, scores 0..1.

Two methods (VECTOR_GATEWAY_FUSION):
- ``convex``: alpha * dense + (1 - alpha) * bm25, each min-max normalised over its candidate list
  (Bruch et al., "An Analysis of Fusion Functions for Hybrid Retrieval", 2023). A hit missing from a
  list scores 0 there. Uses how far apart the scores are, not only their order.
- ``rrf``: reciprocal rank fusion, sum of w / (k + rank), divided by its maximum so 1.0 means first in both.

Both take each list's top ``candidates`` hits (deeper than top_k, so a passage ranked 15th by BM25 and
3rd by meaning can win). The choice and its parameters were measured on BEIR SciFact: bench/TUNING.md.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Literal

FusionMethod = Literal["convex", "rrf"]
Ranked = Sequence[tuple[Hashable, float]]  # (hit key, raw score), best first


@dataclass(frozen=True)
class Fusion:
    method: FusionMethod = "convex"
    alpha: float = 0.5  # weight of the dense list (convex) or of its reciprocal ranks (rrf)
    rrf_k: int = 60

    def fuse(self, dense: Ranked, sparse: Ranked) -> list[tuple[Hashable, float]]:
        scores = convex(dense, sparse, self.alpha) if self.method == "convex" else rrf(dense, sparse, self)
        return sorted(scores.items(), key=lambda item: item[1], reverse=True)


def _min_max(ranked: Ranked) -> dict[Hashable, float]:
    if not ranked:
        return {}
    values = [score for _, score in ranked]
    high, low = max(values), min(values)
    if high == low:
        return {key: 1.0 for key, _ in ranked}
    return {key: (score - low) / (high - low) for key, score in ranked}


def convex(dense: Ranked, sparse: Ranked, alpha: float) -> dict[Hashable, float]:
    scores: dict[Hashable, float] = {}
    for weight, normalised in ((alpha, _min_max(dense)), (1.0 - alpha, _min_max(sparse))):
        for key, value in normalised.items():
            scores[key] = scores.get(key, 0.0) + weight * value
    return scores


def rrf(dense: Ranked, sparse: Ranked, fusion: Fusion) -> dict[Hashable, float]:
    weights = (2 * fusion.alpha, 2 * (1.0 - fusion.alpha))  # alpha 0.5 = plain RRF
    best = sum(w / (fusion.rrf_k + 1) for w in weights)
    scores: dict[Hashable, float] = {}
    for weight, ranked in zip(weights, (dense, sparse), strict=True):
        for rank, (key, _) in enumerate(ranked):
            scores[key] = scores.get(key, 0.0) + weight / (fusion.rrf_k + rank + 1) / best
    return scores
