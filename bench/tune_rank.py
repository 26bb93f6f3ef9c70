"""One ranking variant scored on a cached benchmark (bench.tune_cache): the search code's arithmetic, offline.

A ``Variant`` names every parameter the tuning grid moves: fusion method and weights, the calibration's constants,
the candidate depth of each list, BM25's k1, b and title weight, and how a document's passages make its score. With
the defaults it ranks as the gateway's search does (vector_gateway.search and fusion.py), which ``bench.tune``
checks against the Fusion class itself before anything else.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, fields
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
from vector_gateway import lexical
from vector_gateway.passages import passage_text

from .metrics import mrr_at_k, ndcg_at_k, recall_at_k
from .tune_bm25 import Bm25
from .tune_cache import cache_paths

DOCS_KEPT = 100  # documents per query the metrics read (Recall@100)


@dataclass(frozen=True)
class Variant:
    mode: str = "hybrid"  # hybrid | semantic | keyword
    fusion: str = "calibrated"  # calibrated | convex | rrf
    alpha: float = 0.5  # dense weight of a long query
    short_alpha: float | None = 0.6  # dense weight of a query of at most short_words content words; None: alpha
    short_words: int = 5
    half: float = 40.0  # calibrated keyword part: bm25 / (bm25 + half)
    floor: float = 0.10  # calibrated dense part: clip((cos - floor) / (ceiling - floor))
    ceiling: float = 0.80
    rrf_k: int = 60
    depth: int = 100  # candidates taken from each list
    k1: float = 1.2
    b: float = 0.75
    title_weight: float = 1.0
    second: float = 0.0  # a document scores its best passage + second x its second best
    # A keyword candidate holding every content word of a query of at most exact_words words as written (case and
    # accents aside) is raised to exact_floor + (1 - exact_floor) x its score (hybrid and keyword modes); 0: off.
    exact_floor: float = 0.0
    exact_words: int = 3

    def changed(self) -> str:
        """The parameters that differ from the defaults, as "name=value" (the default variant: "default")."""
        base = Variant()
        moved = [f"{f.name}={getattr(self, f.name)}" for f in fields(self)
                 if getattr(self, f.name) != getattr(base, f.name)]  # fmt: skip
        return ", ".join(moved) or "default"


@dataclass
class Run:
    ranked: dict[str, list[str]]  # query id -> documents, best first

    def per_query(self, qrels: dict[str, dict[str, int]], metric: str = "ndcg@10") -> dict[str, float]:
        measure = {"ndcg@10": ndcg_at_k, "recall@100": recall_at_k, "mrr@10": mrr_at_k}[metric]
        return {q: measure(self.ranked.get(q, []), relevant) for q, relevant in qrels.items()}


class Cached:
    """A benchmark's cached chunks and query vectors, with the score matrices every variant reads."""

    def __init__(self, dataset: str, root: Path | None = None) -> None:
        arrays, meta_path = cache_paths(dataset, root)
        if not arrays.is_file():
            raise SystemExit(f"{arrays} is missing: run `python -m bench.tune_cache --dataset {dataset}` first.")
        loaded = np.load(arrays)
        meta = json.loads(Path(meta_path).read_text())
        self.dataset = dataset
        self.chunks = meta["chunks"]
        self.docs = np.array(meta["chunks"]["doc"])
        self.splits: dict[str, dict[str, str]] = meta["splits"]
        self.row = {text: i for i, text in enumerate(meta["query_texts"])}
        self.vectors = loaded["chunks"]  # each chunk's unit vector
        self.cosines = loaded["queries"] @ self.vectors.T  # queries x chunks
        self._bm25: dict[tuple[float, float, float], np.ndarray] = {}

    @cached_property
    def index(self) -> Bm25:
        titles = [_analysed_title(t, s) for t, s in zip(self.chunks["title"], self.chunks["search_text"], strict=True)]
        return Bm25(self.chunks["search_text"], titles)

    @cached_property
    def query_terms(self) -> list[str]:
        texts = sorted(self.row, key=self.row.__getitem__)
        return [lexical.analyze_query(text, "snowball_multi") for text in texts]

    def bm25(self, variant: Variant) -> np.ndarray:
        key = (variant.k1, variant.b, variant.title_weight)
        if key not in self._bm25:
            weights = self.index.weights(variant.k1, variant.b, variant.title_weight)
            self._bm25[key] = self.index.scores(self.index.query_matrix(self.query_terms), weights)
        return self._bm25[key]

    @cached_property
    def words(self) -> list[frozenset[str]]:
        """Each chunk's words as written (lexical.phrase_text: case and accents folded), title and headings too."""
        parts = zip(self.chunks["title"], self.chunks["heading_path"], self.chunks["text"], strict=True)
        return [frozenset(lexical.phrase_text(passage_text(t, h or [], x)).split()) for t, h, x in parts]

    def run(self, variant: Variant, split: str) -> Run:
        ranked = {}
        for qid, text in self.splits[split].items():
            hits = self.passages(variant, text)
            ranked[qid] = fold(((self.docs[i], score) for i, score in hits), variant.second)
        return Run(ranked)

    def passages(self, variant: Variant, text: str) -> list[tuple[int, float]]:
        """The query's passages (chunk row, score), best first, as the variant ranks them."""
        sparse = self.bm25(variant) if variant.mode != "semantic" else None
        row = self.row[text]
        return rank_passages(variant, text, self.cosines[row], None if sparse is None else sparse[row],
                             self.words if variant.exact_floor else None)  # fmt: skip

    def calibrated_dense(self, variant: Variant, text: str, index: int) -> float:
        """A chunk's cosine to the query on the calibrated 0-1 scale (what a semantic hit scores)."""
        return float(_calibrated_dense(variant, self.cosines[self.row[text], index]))

    def top_documents(self, hits: Iterable[tuple[int, float]], depth: int = 10) -> list[tuple[str, float]]:
        """The first ``depth`` documents of ``hits`` (passages, best first) with their best passage's score."""
        best: dict[str, float] = {}
        for index, score in hits:
            best.setdefault(str(self.docs[index]), score)
            if len(best) == depth:
                break
        return list(best.items())


def _analysed_title(title: str, stored: str) -> str:
    """The title's terms as the chunk's stored BM25 text holds them (in the document's language)."""
    first = stored.split(" ", 1)[0]
    language = first.split(lexical.LANGUAGE_MARK, 1)[0] if lexical.LANGUAGE_MARK in first else lexical.DEFAULT_LANGUAGE
    return lexical.analyze(title, "snowball_multi", language)


def _top(scores: np.ndarray, depth: int, positive: bool) -> np.ndarray:
    """Indices of the ``depth`` best scores, best first (for BM25 only those above 0: a list holds matches)."""
    depth = min(depth, scores.size)
    top = np.argpartition(-scores, depth - 1)[:depth]
    top = top[np.argsort(-scores[top], kind="stable")]
    return top[scores[top] > 0] if positive else top


def _calibrated_dense(variant: Variant, cosines: Any) -> Any:
    """Cosines on the calibrated 0-1 scale of the variant's floor and ceiling (calibration.dense_score's formula)."""
    return np.clip((cosines - variant.floor) / (variant.ceiling - variant.floor), 0.0, 1.0)


def _parts(variant: Variant, scores: np.ndarray, kind: str, weight: float) -> np.ndarray:
    if variant.fusion == "calibrated" or variant.mode != "hybrid":
        if kind == "dense":
            return weight * _calibrated_dense(variant, scores)
        return weight * scores / (scores + variant.half)
    if variant.fusion == "convex":
        high, low = scores.max(initial=0.0), scores.min(initial=0.0)
        return weight * ((scores - low) / (high - low) if high > low else np.ones_like(scores))
    ranks = np.arange(1, scores.size + 1)
    return weight * (variant.rrf_k + 1) / (variant.rrf_k + ranks)


def rank_passages(variant: Variant, query: str, cosines: np.ndarray, bm25: np.ndarray | None,
                  words: list[frozenset[str]] | None = None) -> list[tuple[int, float]]:  # fmt: skip
    """(chunk, score) by the variant's fused score, best first."""
    alpha = variant.alpha
    if variant.short_alpha is not None and lexical.content_words(query) <= variant.short_words:
        alpha = variant.short_alpha
    weights = {"hybrid": (alpha, 1.0 - alpha), "semantic": (1.0, 0.0), "keyword": (0.0, 1.0)}[variant.mode]
    total: dict[int, float] = {}
    lists = [("dense", cosines)] + ([("keyword", bm25)] if bm25 is not None else [])
    keyword: list[int] = []
    for (kind, scores), weight in zip(lists, weights, strict=False):
        if weight == 0.0:
            continue
        top = _top(scores, variant.depth, positive=kind == "keyword")
        keyword = top.tolist() if kind == "keyword" else keyword
        for index, part in zip(top.tolist(), _parts(variant, scores[top], kind, weight).tolist(), strict=True):
            total[index] = total.get(index, 0.0) + part
    if words is not None and variant.mode != "semantic":
        asked = exact_words(query, variant.exact_words)
        for index in keyword if asked else []:
            if asked <= words[index]:
                total[index] = variant.exact_floor + (1.0 - variant.exact_floor) * min(total[index], 1.0)
    order = sorted((i for i in total if total[i] > 0), key=lambda i: -total[i])
    return [(i, total[i]) for i in order]


def exact_words(query: str, most: int) -> frozenset[str]:
    """The query's content words as written (folded), when it has 1 to ``most`` of them; else none."""
    found = [w for w in lexical.phrase_text(query).split() if w not in lexical.ENGLISH_STOP_WORDS]
    return frozenset(found) if 0 < len(found) <= most else frozenset()


def fold(hits: Iterable[tuple[str, float]], second: float = 0.0) -> list[str]:
    """Passages (best first) -> documents by their best passage (+ ``second`` x their second best)."""
    best: dict[str, list[float]] = {}
    for doc, score in hits:
        kept = best.setdefault(str(doc), [])
        if len(kept) < 2:
            kept.append(score)
    if second == 0.0:
        return list(best)[:DOCS_KEPT]
    scored = {doc: s[0] + second * (s[1] if len(s) > 1 else 0.0) for doc, s in best.items()}
    return sorted(scored, key=lambda d: -scored[d])[:DOCS_KEPT]
