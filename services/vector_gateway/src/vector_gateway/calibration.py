"""Raw ranking scores -> bounded scores with one meaning across queries, collections and corpora.

A cosine (dense) and a BM25 score (keyword) live on different scales, and BM25's depends on the query and
the corpus. Each is mapped by a fixed, monotone function, fitted offline once with the bundled model
(all-MiniLM-L6-v2) and never per query (bench/TUNING.md, "Calibrated scores"):

- dense: ``clip((cosine - DENSE_FLOOR) / (DENSE_CEILING - DENSE_FLOOR), 0, 1)``: a cosine at or below
  DENSE_FLOOR (what unrelated text scores with this model) is 0, one at DENSE_CEILING or above is 1;
- keyword: ``bm25 / (bm25 + KEYWORD_HALF)``: a saturating transform, 0.5 at KEYWORD_HALF, below 1 always.

Hybrid adds the two with weights that sum to 1 (fusion.py), so every score is in [0, 1] and a fixed
``min_score`` means the same thing for every query. RELEVANT is the threshold documented for "relevant".
"""

from __future__ import annotations

DENSE_FLOOR = 0.10
DENSE_CEILING = 0.80
KEYWORD_HALF = 20.0
RELEVANT = 0.40  # min_score for "relevant" with the bundled model (bench/offtopic.py measures it)


def dense_score(cosine: float) -> float:
    return min(max((cosine - DENSE_FLOOR) / (DENSE_CEILING - DENSE_FLOOR), 0.0), 1.0)


def keyword_score(bm25: float) -> float:
    return bm25 / (bm25 + KEYWORD_HALF) if bm25 > 0 else 0.0
