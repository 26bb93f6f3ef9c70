"""Whether how far an answer's best document stands above the rest tells off-topic questions from on-topic ones
(issue 52, point 2): the query-level signal docs/search-scores.md named as the next thing to try for the floor.

    python -m bench.experiments.floor_margin

On bench.tune_floor's cached rankings (semantic mode, the variant the gateway ships), for each answer the relevance
rules show: its first document's calibrated score, and how far it stands above the second and the tenth document
(``gap_2``, ``gap_10``). On-topic answers (those holding a relevant document in their top 10; SciFact train and
test, dbpedia-5k dev and test) are summarised by percentiles; the everyday questions still shown (bench.offtopic_sets'
tuning and test halves) are listed one by one, with the reader's judgment whether the collection holds a document on
them (bench/sets/offtopic_judged.json). A margin could part the two only where the off-topic answers' gaps fall under
the on-topic answers' low percentiles.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from ingestion_contracts.gateway import MEANING_FLOOR, RELEVANCE_FLOOR

from ..data import DATASETS, load
from ..offtopic_sets import topical
from ..results_io import write_json
from ..tune import shipped_variant
from ..tune_floor import OFF_TOPIC, SPLITS, answers, cached_queries
from ..tune_rank import Cached, Variant

RESULTS = Path(__file__).with_name("results") / "floor_margin.json"
DEPTH = 10  # documents an answer's margin reads


def margins(cached: Cached, variant: Variant, text: str) -> dict[str, float]:
    scores = [score for _, score in cached.top_documents(cached.passages(variant, text), DEPTH)]
    return {"top": round(scores[0], 3), "gap_2": round(scores[0] - scores[1], 3),
            "gap_10": round(scores[0] - scores[-1], 3)}  # fmt: skip


def measure(root: Path | None = None) -> dict[str, Any]:
    variant = replace(shipped_variant(), mode="semantic")
    floor = RELEVANCE_FLOOR["semantic"]
    out: dict[str, Any] = {}
    for part, splits in SPLITS.items():
        for dataset, split in splits.items():
            cached = Cached(dataset, root)
            qrels = load(DATASETS[dataset], split).qrels
            queries = {q: t for q, t in cached.splits[cached_queries(split)].items() if q in qrels}
            shown = zip(queries.values(), answers(cached, variant, queries, qrels), strict=True)
            on = [margins(cached, variant, text) for text, answer in shown
                  if answer.relevant and answer.shown(floor, MEANING_FLOOR)]  # fmt: skip
            everyday = cached.splits[OFF_TOPIC[part]]
            judged = topical(dataset)
            asked = zip(everyday.values(), answers(cached, variant, everyday, None), strict=True)
            off = [{"question": text, "topical": text in judged} | margins(cached, variant, text)
                   for text, answer in asked if answer.shown(floor, MEANING_FLOOR)]  # fmt: skip
            out[f"{dataset} {split}"] = {
                "on_topic": {"answers": len(on)} | {
                    f"{key} p{p}": round(float(np.percentile([m[key] for m in on], p)), 3)
                    for key in ("top", "gap_2", "gap_10") for p in (5, 10, 25, 50)
                },
                "everyday_shown": off,
            }  # fmt: skip
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.experiments.floor_margin", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--cache", type=Path, help="the tune caches' folder (default: bench/results/tmp)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    report = measure(args.cache)
    write_json(args.out, report, indent=1)
    for name, part in report.items():
        print(name, part["on_topic"])
        for row in part["everyday_shown"]:
            print("   ", row)


if __name__ == "__main__":
    main()
