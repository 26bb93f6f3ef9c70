"""Each profile's score threshold, mapped onto the gateway's calibrated scale (vector_gateway.calibration).

The gateway's score is in [0, 1] and means the same for every query and collection; with the bundled model a
hit is relevant from ``RELEVANT_SCORE[mode]`` up (bench/TUNING.md, "Calibrated scores"). A profile whose spec
has its own threshold convention (docs_server's ``minScore``, default 0.7, "cosine similarity") keeps it:
its value is mapped piecewise linearly so that 0 -> 0, the spec's default -> the relevance threshold and
1 -> 1, and the scores it shows go through the inverse map, so a result always shows a score >= minScore.
"""

from __future__ import annotations

from ingestion_contracts.gateway import RELEVANT_SCORE

DOCS_SERVER_DEFAULT = 0.7  # docs_server's spec: minScore default


def to_gateway(value: float, *, anchor: float, mode: str) -> float:
    """A profile threshold (``anchor`` = its 'relevant' default) -> the gateway's min_score."""
    relevant = RELEVANT_SCORE[mode]
    if value <= anchor:
        return value / anchor * relevant
    return relevant + (value - anchor) / (1.0 - anchor) * (1.0 - relevant)


def from_gateway(score: float, *, anchor: float, mode: str) -> float:
    """The gateway's score -> the profile's scale (the inverse of to_gateway)."""
    relevant = RELEVANT_SCORE[mode]
    if score <= relevant:
        return score / relevant * anchor
    return anchor + (score - relevant) / (1.0 - relevant) * (1.0 - anchor)


def docs_server_threshold(min_score: float) -> float:
    """docs_server's minScore (semantic search) -> the gateway's min_score."""
    return to_gateway(min_score, anchor=DOCS_SERVER_DEFAULT, mode="semantic")


def docs_server_score(score: float) -> float:
    """The gateway's semantic score -> docs_server's scale, on which minScore compares."""
    return from_gateway(score, anchor=DOCS_SERVER_DEFAULT, mode="semantic")
