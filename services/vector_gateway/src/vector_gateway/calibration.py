"""Raw ranking scores -> bounded scores with one meaning across queries, collections and corpora.

A cosine (dense) and a BM25 score (keyword) live on different scales, and BM25's depends on the query and
the corpus. Each is mapped by a fixed, monotone function, fitted offline once with the bundled model
(all-MiniLM-L6-v2) and never per query (bench/TUNING.md, "Calibrated scores"):

- dense: ``clip((cosine - DENSE_FLOOR) / (DENSE_CEILING - DENSE_FLOOR), 0, 1)``: a cosine at or below
  DENSE_FLOOR (what unrelated text scores with this model) is 0, one at DENSE_CEILING or above is 1;
- keyword: ``bm25 / (bm25 + KEYWORD_HALF)``: a saturating transform, 0.5 at KEYWORD_HALF (40), below 1 always.

Hybrid adds the two with weights that sum to 1 (fusion.py), so every score is in [0, 1] and a fixed
``min_score`` means the same thing for every query. RELEVANT_SCORE (in the contract) holds the thresholds for
"relevant" per mode, measured on SciFact with 40 everyday off-topic queries (bench/offtopic.py, bench/TUNING.md):
hybrid 0.35 (all 40 off-topic queries return nothing, 94.6% of the relevant documents in hybrid's top 10 kept),
semantic 0.40 (97.5% / 98%), keyword 0.30 (best effort: 85% / 85%).
"""

from __future__ import annotations

import math

from ingestion_contracts.gateway import RELEVANT_SCORE

DENSE_FLOOR = 0.10
DENSE_CEILING = 0.80
KEYWORD_HALF = 40.0
# BM25's IDF of a word found in 1 of N chunks is ln(1 + (N - 0.5) / 1.5): 0.29 in a collection of one chunk, 8.1 at
# 5,000. KEYWORD_HALF was fitted on collections of 5,000+ chunks (SciFact, dbpedia-5k); a smaller collection's BM25
# scores are scaled up by keyword_scale so that its rarest word weighs what it weighs at REFERENCE_CHUNKS.
REFERENCE_CHUNKS = 5_000
RELEVANT = RELEVANT_SCORE["hybrid"]  # min_score for "relevant" with the bundled model (bench.offtopic measures it)


def dense_score(cosine: float) -> float:
    return min(max((cosine - DENSE_FLOOR) / (DENSE_CEILING - DENSE_FLOOR), 0.0), 1.0)


def _idf(found_in: int, chunks: int) -> float:
    return math.log(1.0 + (chunks - found_in + 0.5) / (found_in + 0.5))


def keyword_scale(chunks: int) -> float:
    """What a collection of ``chunks`` chunks' BM25 scores are multiplied by: 1 from REFERENCE_CHUNKS up; below, the
    IDF of a word in one chunk at REFERENCE_CHUNKS over its IDF here (30.2 for one chunk, 4.4 for ten). The ranking
    within a collection is unchanged (one factor for all its scores); a word in every chunk of a small collection
    stays weak (its IDF is near 0 before the factor)."""
    if chunks >= REFERENCE_CHUNKS:
        return 1.0
    return _idf(1, REFERENCE_CHUNKS) / _idf(1, max(chunks, 1))


def keyword_score(bm25: float) -> float:
    return bm25 / (bm25 + KEYWORD_HALF) if bm25 > 0 else 0.0
