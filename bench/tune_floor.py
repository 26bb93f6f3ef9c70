"""A relevance floor per mode: how often off-topic queries answer nothing, and what on-topic answers lose (issue 52).

    python -m bench.tune_floor --split train       # choose on SciFact train + dbpedia-5k dev (bench.tune's inputs)
    python -m bench.tune_floor --split test        # report on SciFact test + all 40 dbpedia-5k queries

On the cached rankings (bench.tune_cache) with the variant the gateway ships (bench.tune), each query's answer is
its first 10 passages. For each mode and floor t: the share of the off-topic questions (bench.offtopic_sets'
everyday questions: the tuning half on ``train``, the test half on ``test``) that answer nothing on each set, and
the share of the relevant documents among an on-topic query's top 10 that the answers keep (recall@10 kept), three
ways:

- ``per_hit``: every hit under t held back;
- ``gate``: the whole answer held back when its best hit is under t;
- ``rules``: the gate as the gateway judges an answer (``relevance.on_topic``): under t it is still shown when a
  hybrid hit's meaning alone reaches ``MEANING_FLOOR`` (its calibrated cosine, what semantic mode would score it), or
  when one of its passages holds two thirds of the query's content words as written.

``hybrid_meaning`` scores the rules over a grid of hybrid floors and meaning floors, to choose both on ``train``.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ingestion_contracts.gateway import MEANING_FLOOR
from vector_gateway import lexical

from .data import DATASETS, load
from .tune import RESULTS, shipped_variant
from .tune_rank import Cached, Variant

FLOORS = [0.2, 0.22, 0.25, 0.28, 0.3, 0.32, 0.35, 0.38, 0.4, 0.45]
HYBRID_FLOORS = [0.26, 0.28, 0.3, 0.32, 0.34, 0.36, 0.38, 0.4]
MEANING_FLOORS = [0.36, 0.38, 0.4, 0.42, 0.45, 0.5, 0.55, 1.01]  # 1.01: no meaning rule
ANSWER_HITS = 10  # passages of an answer the gateway judges (the search tool's top_k as the bench asks it)
SPLITS = {"train": {"scifact": "train", "dbpedia-5k": "dev"}, "test": {"scifact": "test", "dbpedia-5k": "test"}}
OFF_TOPIC = {"train": "offtopic", "test": "offtopic_test"}


@dataclass(frozen=True)
class Answer:
    best: float  # the first passage's score
    dense: float  # the best calibrated cosine among its passages (0 outside hybrid mode: the rule is hybrid's)
    holds_words: bool  # one passage holds two thirds of the query's content words as written
    relevant: list[float]  # the best-passage score of each relevant document among its top 10 documents

    def shown(self, floor: float, dense_floor: float) -> bool:
        return self.best >= floor or self.dense >= dense_floor or self.holds_words


def answers(cached: Cached, variant: Variant, split: str, qrels: dict[str, dict[str, int]] | None) -> list[Answer]:
    out = []
    for qid, text in cached.splits[split].items():
        if qrels is not None and qid not in qrels:
            continue
        ranked = cached.passages(variant, text)
        hits = [index for index, _ in ranked[:ANSWER_HITS]]
        dense = max((cached.calibrated_dense(variant, text, i) for i in hits), default=0.0)
        words = lexical.query_words(text)
        held = bool(words) and any(3 * len(words & cached.words[i]) >= 2 * len(words) for i in hits)
        documents = cached.top_documents(ranked)
        relevant = [score for doc, score in documents if qrels is not None and doc in qrels[qid]]
        best = ranked[0][1] if ranked else 0.0
        out.append(Answer(best, dense if variant.mode == "hybrid" else 0.0, held, relevant))
    return out


def shares(on: list[Answer], off: list[Answer], floor: float, dense_floor: float) -> dict[str, float]:
    total = max(sum(len(a.relevant) for a in on), 1)
    return {"offtopic_silent": round(sum(a.best < floor for a in off) / len(off), 3),
            "offtopic_silent_rules": round(sum(not a.shown(floor, dense_floor) for a in off) / len(off), 3),
            "relevant_kept_per_hit": round(sum(s >= floor for a in on for s in a.relevant) / total, 4),
            "relevant_kept_gate": round(sum(len(a.relevant) for a in on if a.best >= floor) / total, 4),
            "relevant_kept_rules": round(
                sum(len(a.relevant) for a in on if a.shown(floor, dense_floor)) / total, 4)}  # fmt: skip


def measure(part: str, variant: Variant, root: Path | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"variant": variant.changed(), "meaning_floor": MEANING_FLOOR, "offtopic": OFF_TOPIC[part]}
    for dataset, split in SPLITS[part].items():
        cached = Cached(dataset, root)
        qrels = load(DATASETS[dataset], split).qrels
        cache_split = "train" if split == "train" else "test"  # the cache keeps dbpedia's 40 judged queries whole
        out[dataset] = {}
        for mode in ("hybrid", "semantic", "keyword"):
            moded = replace(variant, mode=mode)
            on, off = answers(cached, moded, cache_split, qrels), answers(cached, moded, OFF_TOPIC[part], None)
            out[dataset][mode] = {floor: shares(on, off, floor, MEANING_FLOOR) for floor in FLOORS}
            if mode == "hybrid":
                out[dataset]["hybrid_meaning"] = {
                    f"{floor} / {dense}": shares(on, off, floor, dense)
                    for floor in HYBRID_FLOORS for dense in MEANING_FLOORS
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
