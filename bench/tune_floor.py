"""A relevance floor per mode: how often off-topic queries answer nothing, and what on-topic answers lose (issue 52).

    python -m bench.tune_floor --split train       # choose on SciFact train + dbpedia-5k dev (bench.tune's inputs)
    python -m bench.tune_floor --split test        # report on SciFact test + all 40 dbpedia-5k queries

For each mode and floor t, on the cached rankings (bench.tune_cache) with the variant the gateway ships
(bench.tune): the share of bench.offtopic's 40 off-topic queries whose best passage scores below t on each set
(they answer nothing), and the share of the relevant documents among a query's top 10 that an answer keeps
(recall@10 kept): with every hit under t held back, and with the answer held back whole when its best hit is under
t (a gate).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from .data import DATASETS, load
from .tune import RESULTS, shipped_variant
from .tune_rank import Cached, Variant

FLOORS = [0.2, 0.22, 0.25, 0.28, 0.3, 0.32, 0.35, 0.38, 0.4, 0.45]
SPLITS = {"train": {"scifact": "train", "dbpedia-5k": "dev"}, "test": {"scifact": "test", "dbpedia-5k": "test"}}


def shares(cached: Cached, variant: Variant, split: str, qrels: dict[str, dict[str, int]]) -> dict[float, Any]:
    """Per floor: off-topic queries answering nothing, and the relevant documents of a top 10 kept, two ways: each
    hit below the floor held back ("per hit"), or a whole answer held back when its best hit is below it ("gate")."""
    offtopic = [docs[0][1] if docs else 0.0 for docs in cached.scored(variant, "offtopic", 1).values()]
    scored = {q: docs for q, docs in cached.scored(variant, split).items() if q in qrels}
    found = [(docs[0][1], score) for q, docs in scored.items() for doc, score in docs if doc in qrels[q]]
    total = max(len(found), 1)
    return {
        floor: {"offtopic_silent": round(sum(s < floor for s in offtopic) / len(offtopic), 3),
                "relevant_kept_per_hit": round(sum(s >= floor for _, s in found) / total, 4),
                "relevant_kept_gate": round(sum(best >= floor for best, _ in found) / total, 4)}
        for floor in FLOORS
    }  # fmt: skip


def measure(part: str, variant: Variant) -> dict[str, Any]:
    out: dict[str, Any] = {"variant": variant.changed()}
    for dataset, split in SPLITS[part].items():
        cached = Cached(dataset)
        qrels = load(DATASETS[dataset], split).qrels
        cache_split = "train" if split == "train" else "test"  # the cache keeps dbpedia's 40 judged queries whole
        out[dataset] = {mode: shares(cached, replace(variant, mode=mode), cache_split, qrels)
                        for mode in ("hybrid", "semantic", "keyword")}  # fmt: skip
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.tune_floor", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--split", choices=sorted(SPLITS), default="train")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    report = measure(args.split, shipped_variant())
    path = args.out or RESULTS / f"tune_floor_{args.split}.json"
    path.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
