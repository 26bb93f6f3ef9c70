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

from ingestion_contracts.gateway import RELEVANT_SCORE

DENSE_FLOOR = 0.10
DENSE_CEILING = 0.80
KEYWORD_HALF = 40.0
RELEVANT = RELEVANT_SCORE["hybrid"]  # min_score for "relevant" with the bundled model (bench.offtopic measures it)


def dense_score(cosine: float) -> float:
    return min(max((cosine - DENSE_FLOOR) / (DENSE_CEILING - DENSE_FLOOR), 0.0), 1.0)


def keyword_score(bm25: float) -> float:
    return bm25 / (bm25 + KEYWORD_HALF) if bm25 > 0 else 0.0
