"""A relevance floor per mode: how often off-topic queries answer nothing, and what on-topic answers lose (issue 52).

    python -m bench.tune_floor --split train       # choose on SciFact train + dbpedia-5k dev (bench.tune's inputs)
    python -m bench.tune_floor --split test        # report on SciFact test + all 40 dbpedia-5k queries

On the cached rankings (bench.tune_cache) with the variant the gateway ships (bench.tune), each query's answer is
its first 10 passages. For each mode and floor t: the share of the off-topic questions (bench.offtopic_sets'
everyday questions: the tuning half on ``train``, the test half on ``test``) and of its made-up words (those no
chunk holds) that answer nothing on each set, and the share of the relevant documents among an on-topic query's top
10 that the answers keep (recall@10 kept), three ways:

- ``per_hit``: every hit under t held back;
- ``gate``: the whole answer held back when its best hit is under t;
- ``rules``: the answer judged as the gateway judges it (``relevance.off_topic``): shown when one of its passages
  holds two thirds of the query's content words as written; held back when no passage shares a word with the query
  and the model knows fewer than half of the query's words whole (made-up words, another language); semantic by t;
  hybrid and keyword when a hit's meaning alone reaches ``MEANING_FLOOR`` (its calibrated cosine, what semantic mode
  would score it), or when it reaches t with a hit's meaning at ``LEXICAL_MEANING_FLOOR``, unless the hit closest in
  meaning holds one of the query's content words only and that word alone is as close to it as the query (the
  word embedded by the gateway's embedder, as the gateway embeds it; ``one_word`` scores the rules without it); a
  semantic answer under t is shown still when the hybrid answer to the query is (``by_words`` scores the rules
  without it).

``hybrid_meaning`` scores the rules over a grid of hybrid floors and meaning floors, ``hybrid_lexical`` and
``keyword_meaning`` over lexical meaning floors (keyword: by keyword floors), to choose them on ``train``; ``shown``
lists the off-topic questions each mode still answers, with the title of the first hit and whether a reader judged
the collection to hold a document on the question (bench/sets/offtopic_judged.json, judged blind to what the floor
shows); ``judged`` gives, at the shipped floors, the share of the questions the collection holds nothing on that
answer nothing.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, replace
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from ingestion_contracts.gateway import LEXICAL_MEANING_FLOOR, MEANING_FLOOR, RELEVANCE_FLOOR
from vector_gateway import lexical
from vector_gateway.embedder import Embedder, bundled_model_dir, create_embedder
from vector_gateway.settings import GatewaySettings
from vector_gateway.vocabulary import content, model_words, readable

from .data import DATASETS, load
from .offtopic_sets import topical
from .tune import RESULTS, shipped_variant
from .tune_rank import Cached, Variant

FLOORS = [0.2, 0.22, 0.25, 0.28, 0.3, 0.32, 0.35, 0.38, 0.4, 0.45]
HYBRID_FLOORS = [0.26, 0.28, 0.3, 0.32, 0.34, 0.36, 0.38, 0.4]
MEANING_FLOORS = [0.36, 0.38, 0.4, 0.42, 0.45, 0.5, 0.55, 1.01]  # 1.01: no meaning rule
ANSWER_HITS = 10  # passages of an answer the gateway judges (the search tool's top_k as the bench asks it)
SPLITS = {"train": {"scifact": "train", "dbpedia-5k": "dev"}, "test": {"scifact": "test", "dbpedia-5k": "test"}}
OFF_TOPIC = {"train": "offtopic", "test": "offtopic_test"}
NONSENSE = {"train": "nonsense", "test": "nonsense_test"}
KNOWN = model_words(bundled_model_dir()) or frozenset()  # the words the bundled model knows whole
KEYWORD_FLOORS = [0.0, 0.1, 0.15, 0.2, 0.22, 0.25, 0.3]
LEXICAL_FLOORS = [0.0, 0.2, 0.25, 0.3, 0.32, 0.34, 0.36, 0.38, 0.4, 0.45]  # 0: no lexical meaning rule (before)


@dataclass(frozen=True)
class Answer:
    mode: str
    best: float  # the first passage's score
    dense: float  # the best calibrated cosine among its passages (what semantic mode would score them)
    holds_words: bool  # one passage holds two thirds of the query's content words as written
    relevant: list[float]  # the best-passage score of each relevant document among its top 10 documents
    # A passage holds one of the query's content words as written (vocabulary.content: no language's stop words), or
    # the model knows half of them whole (vocabulary.readable): else it is made-up words or another language, held
    # back whatever its meaning.
    words_to_go_by: bool = True
    # The hit closest in meaning holds one of the query's (two or more) content words only, and that word alone is
    # at least as close to it as the query: it is about the word, not the question (relevance._about_one_word).
    one_word: bool = False
    # Semantic: the hybrid answer to the same query is shown (an answer under the semantic floor is judged on the
    # query's words and meaning together too: GatewayService._by_words_too).
    worded: bool = False
    # The model cannot read the query (vocabulary.readable): its meaning counts only on hits its words tie to it
    # (``dense`` and a semantic ``best`` are read on those: relevance._tied), and a hybrid answer reaching its floor
    # is shown on its score.
    unread: bool = False

    def shown(self, floor: float, dense_floor: float, lexical_floor: float | None = None, *,
              one_word_rule: bool = True, by_words: bool = True) -> bool:  # fmt: skip
        """As relevance.off_topic judges it: an answer holding the query's words is shown, one with no word to go by
        is not; semantic by its score; hybrid and keyword by their meaning alone (``dense_floor``), or by their score
        with their meaning reaching ``lexical_floor`` (default: LEXICAL_MEANING_FLOOR) and not about one word of the
        query only (``one_word_rule``); a semantic answer under ``floor`` still when the hybrid answer is shown
        (``by_words``)."""
        if self.holds_words:
            return True
        if not self.words_to_go_by:
            return False
        if self.mode == "semantic":
            return self.best >= floor or (by_words and self.worded)
        if self.dense >= dense_floor:  # hybrid and keyword: a hit's meaning alone, under the floor too
            return True
        if self.mode == "hybrid" and self.unread:
            return self.best >= floor
        lexical_floor = LEXICAL_MEANING_FLOOR[self.mode] if lexical_floor is None else lexical_floor
        return self.best >= floor and self.dense >= lexical_floor and not (one_word_rule and self.one_word)


def answers(cached: Cached, variant: Variant, queries: dict[str, str],
            qrels: dict[str, dict[str, int]] | None) -> list[Answer]:  # fmt: skip
    out = []
    for qid, text in queries.items():
        if qrels is not None and qid not in qrels:
            continue
        ranked = cached.passages(variant, text)
        hits = [index for index, _ in ranked[:ANSWER_HITS]]
        words = lexical.query_words(text)
        held = bool(words) and any(3 * len(words & cached.words[i]) >= 2 * len(words) for i in hits)
        meant = content(words)
        unread = bool(meant) and not readable(meant, KNOWN)
        tied = tied_hits(cached, variant, text, meant, hits) if unread else hits
        dense = max((cached.calibrated_dense(variant, text, i) for i in tied), default=0.0)
        one = variant.mode != "semantic" and about_one_word(cached, text, meant, hits)
        shares = not words or any(meant & cached.words[i] for i in hits) or not unread
        documents = cached.top_documents(ranked)
        relevant = [score for doc, score in documents if qrels is not None and doc in qrels[qid]]
        best = dense if variant.mode == "semantic" and unread else ranked[0][1] if ranked else 0.0
        worded = variant.mode == "semantic" and by_words_too(cached, variant, qid, text)
        out.append(Answer(variant.mode, best, dense, held, relevant, shares, one, worded, unread))
    return out


def tied_hits(cached: Cached, variant: Variant, text: str, meant: frozenset[str], hits: list[int]) -> list[int]:
    """As relevance._tied judges it for a query the model cannot read: every hit when one holds two of the query's
    content words as written, else the hits holding one (as written, or a BM25 match outside semantic mode)."""
    if any(len(meant & cached.words[i]) >= min(2, len(meant)) for i in hits):
        return hits
    matched = cached.bm25(variant)[cached.row[text]] if variant.mode != "semantic" else None
    return [i for i in hits if meant & cached.words[i] or (matched is not None and matched[i] > 0)]


def by_words_too(cached: Cached, variant: Variant, qid: str, text: str) -> bool:
    """Whether the hybrid answer to the query is shown at the shipped floors (what a semantic answer under its floor
    is judged by too)."""
    hybrid = answers(cached, replace(variant, mode="hybrid"), {qid: text}, None)[0]
    return hybrid.shown(RELEVANCE_FLOOR["hybrid"], MEANING_FLOOR)


def about_one_word(cached: Cached, text: str, meant: frozenset[str], hits: list[int]) -> bool:
    """As relevance._about_one_word judges it: the hit closest to the query in meaning holds only one of its two or
    more content words (``meant``), and that word alone is at least as close to it, for a query the model reads."""
    if not hits or len(meant) < 2 or not readable(meant, KNOWN):
        return False
    cosines = cached.cosines[cached.row[text]]
    nearest = max(hits, key=lambda i: cosines[i])
    shared = meant & cached.words[nearest]
    return len(shared) == 1 and word_cosine(next(iter(shared)), cached.vectors[nearest]) >= cosines[nearest]


def word_cosine(word: str, vector: np.ndarray) -> float:
    """A word's cosine with a chunk's vector, the word embedded as the gateway embeds a query."""
    return float(_word_vector(word) @ vector)


@cache
def _word_vector(word: str) -> np.ndarray:
    return np.asarray(_embedder().embed_query(word), dtype=np.float32)


@lru_cache(maxsize=1)
def _embedder() -> Embedder:
    return create_embedder(GatewaySettings())


def made_up(cached: Cached, split: str) -> dict[str, str]:
    """The nonsense queries of ``split`` none of whose words any chunk holds (a made-up word can be a real one)."""
    if split not in cached.splits:
        raise SystemExit(
            f"The {cached.dataset} cache has no {split!r} queries: run `python -m bench.tune_cache` again."
        )
    held = frozenset().union(*cached.words)
    return {qid: text for qid, text in cached.splits[split].items() if not lexical.query_words(text) & held}


def silent(answers: list[Answer], floor: float, dense_floor: float, lexical_floor: float | None = None,
           **rules: bool) -> float:  # fmt: skip
    """The share of ``answers`` the gateway would hold back (relevance.off_topic's rules; ``rules``: Answer.shown's
    switches)."""
    held = sum(not a.shown(floor, dense_floor, lexical_floor, **rules) for a in answers)
    return round(held / len(answers), 3) if answers else 1.0


def shares(on: list[Answer], off: list[Answer], nonsense: list[Answer], floor: float, dense_floor: float,
           lexical_floor: float | None = None, **rules: bool) -> dict[str, float]:  # fmt: skip
    total = max(sum(len(a.relevant) for a in on), 1)
    kept = sum(len(a.relevant) for a in on if a.shown(floor, dense_floor, lexical_floor, **rules))
    return {"offtopic_silent": round(sum(a.best < floor for a in off) / len(off), 3),
            "offtopic_silent_rules": silent(off, floor, dense_floor, lexical_floor, **rules),
            "nonsense_silent_rules": silent(nonsense, floor, dense_floor, lexical_floor, **rules),
            "relevant_kept_per_hit": round(sum(s >= floor for a in on for s in a.relevant) / total, 4),
            "relevant_kept_gate": round(sum(len(a.relevant) for a in on if a.best >= floor) / total, 4),
            "relevant_kept_rules": round(kept / total, 4)}  # fmt: skip


def shown_offtopic(cached: Cached, variant: Variant, queries: dict[str, str],
                   off: list[Answer]) -> list[list[str | bool]]:  # fmt: skip
    """The off-topic questions the shipped rules show (``off``: their answers, in the order of ``queries``), each
    with its first hit's title and whether a reader judged the collection to hold a document on it
    (bench.offtopic_sets.topical)."""
    out: list[list[str | bool]] = []
    judged = topical(cached.dataset)
    for text, answer in zip(queries.values(), off, strict=True):
        if answer.shown(RELEVANCE_FLOOR[variant.mode], MEANING_FLOOR):
            out.append([text, str(cached.chunks["title"][cached.passages(variant, text)[0][0]]), text in judged])
    return out


def judged_silence(cached: Cached, off: list[Answer], queries: dict[str, str], mode: str) -> dict[str, Any]:
    """At the shipped floors: the share of the everyday questions the collection holds nothing on (a reader's
    judgment, bench.offtopic_sets.topical) that answer nothing, and how many of the others are shown."""
    judged = topical(cached.dataset)
    on_it = [text in judged for text in queries.values()]
    nothing = [answer for answer, topical_ in zip(off, on_it, strict=True) if not topical_]
    shown = [answer.shown(RELEVANCE_FLOOR[mode], MEANING_FLOOR) for answer in off]
    return {"nothing_on_it": len(nothing), "silent": silent(nothing, RELEVANCE_FLOOR[mode], MEANING_FLOOR),
            "topical": sum(on_it), "topical_shown": sum(s for s, t in zip(shown, on_it, strict=True) if t)}  # fmt: skip


def cached_queries(split: str) -> str:
    """The tune cache's query split that holds ``split``'s judged queries (it keeps dbpedia's 40 dev and test queries
    whole, as "test")."""
    return "train" if split == "train" else "test"


def measure(part: str, variant: Variant, root: Path | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"variant": variant.changed(), "meaning_floor": MEANING_FLOOR,
                           "lexical_meaning_floor": LEXICAL_MEANING_FLOOR, "offtopic": OFF_TOPIC[part]}  # fmt: skip
    for dataset, split in SPLITS[part].items():
        cached = Cached(dataset, root)
        qrels = load(DATASETS[dataset], split).qrels
        cache_split = cached_queries(split)
        made = made_up(cached, NONSENSE[part])
        out[dataset] = {"nonsense_queries": len(made), "shown": {}}
        for mode in ("hybrid", "semantic", "keyword"):
            moded = replace(variant, mode=mode)
            on = answers(cached, moded, cached.splits[cache_split], qrels)
            off = answers(cached, moded, cached.splits[OFF_TOPIC[part]], None)
            nonsense = answers(cached, moded, made, None)
            out[dataset][mode] = {floor: shares(on, off, nonsense, floor, MEANING_FLOOR) for floor in FLOORS}
            # The shipped floors with and without the one-word rule (hybrid, keyword) and the hybrid judgment of a
            # semantic answer under its floor.
            key, switch = ("by_words", "by_words") if mode == "semantic" else ("one_word", "one_word_rule")
            out[dataset].setdefault(key, {})[mode] = {
                rule: shares(on, off, nonsense, RELEVANCE_FLOOR[mode], MEANING_FLOOR, **{switch: on_})
                for rule, on_ in (("with", True), ("without", False))
            }  # fmt: skip
            out[dataset]["shown"][mode] = shown_offtopic(cached, moded, cached.splits[OFF_TOPIC[part]], off)
            out[dataset].setdefault("judged", {})[mode] = judged_silence(
                cached, off, cached.splits[OFF_TOPIC[part]], mode
            )
            if mode == "keyword":
                out[dataset]["keyword_meaning"] = {
                    f"{floor} / {lexical}": shares(on, off, nonsense, floor, MEANING_FLOOR, lexical)
                    for floor in KEYWORD_FLOORS for lexical in LEXICAL_FLOORS
                }  # fmt: skip
            if mode == "hybrid":
                out[dataset]["hybrid_meaning"] = {
                    f"{floor} / {dense}": shares(on, off, nonsense, floor, dense)
                    for floor in HYBRID_FLOORS for dense in MEANING_FLOORS
                }  # fmt: skip
                out[dataset]["hybrid_lexical"] = {
                    f"{RELEVANCE_FLOOR['hybrid']} / {lexical}": shares(
                        on, off, nonsense, RELEVANCE_FLOOR["hybrid"], MEANING_FLOOR, lexical)
                    for lexical in LEXICAL_FLOORS
                }  # fmt: skip
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.tune_floor", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--split", choices=sorted(SPLITS), default="train")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--cache", type=Path, help="the tune caches' folder (default: bench/results/tmp)")
    args = parser.parse_args(argv)
    report = measure(args.split, shipped_variant(), args.cache)
    path = args.out or RESULTS / f"tune_floor_{args.split}.json"
    path.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
