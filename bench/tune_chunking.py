"""How a passage is cut, judged like every other lever (issue 52 point 4, issue 49 point 1): tuning sets first.

A chunking is a change of the index, so each one is an index of its own: a checkout with the chunker and preset to
judge builds its caches (bench.rankings, then bench.tune_cache, in its own bench/results/tmp/), and this command
scores the shipped search variant (bench.tune) on each cache given, against the first:

    python -m bench.tune_chunking --split tune before=BEFORE/bench/results/tmp after=AFTER/bench/results/tmp [...]
    python -m bench.tune_chunking --split test before=BEFORE/bench/results/tmp chosen=CHOSEN/bench/results/tmp

Each cache is ``LABEL=FOLDER`` (the label names it in the report; the folder is not written there).
``tune`` scores SciFact's train queries and dbpedia-5k's dev half (no test judgment read); ``test`` scores the
SciFact test queries and all 40 dbpedia-5k queries (and the 20 held out), once, for the chunking chosen on ``tune``.
Each figure is nDCG@10 (recall@100 beside it) with a paired bootstrap of the per-query differences against the
first cache; chunks and tokens per document say what each index costs to embed. A cache that lacks a dataset is
scored on the others. docs/search-scores.md ("How a passage is cut") gives the figures.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from .data import DATASETS, load
from .tune import RESULTS, bootstrap, mean, shipped_variant
from .tune_cache import cache_paths
from .tune_rank import Cached

SPLITS = {
    "tune": {"scifact": [("train", "train")], "dbpedia-5k": [("dev", "test")]},
    "test": {"scifact": [("test", "test")], "dbpedia-5k": [("test", "test"), ("heldout", "test")]},
}


def index_size(cached: Cached) -> dict[str, float]:
    documents = len(set(cached.docs.tolist()))
    return {"chunks": len(cached.docs), "chunks_per_document": round(len(cached.docs) / documents, 2)}


def labelled(argument: str) -> tuple[str, Path]:
    label, _, folder = argument.rpartition("=")
    if not label:
        raise argparse.ArgumentTypeError(f"{argument!r}: give LABEL=FOLDER (the label names the index in the report)")
    return label, Path(folder)


def score(roots: list[tuple[str, Path]], split: str) -> dict[str, Any]:
    variant = shipped_variant()
    report: dict[str, Any] = {"variant": variant.changed(), "split": split, "caches": [label for label, _ in roots]}
    for dataset, parts in SPLITS[split].items():
        present = [(label, root) for label, root in roots if cache_paths(dataset, root)[0].is_file()]
        if not present:
            continue
        caches = {label: Cached(dataset, root) for label, root in present}
        for judged, cache_split in parts:
            qrels = load(DATASETS[dataset], judged).qrels
            rows: dict[str, Any] = {}
            per_query: dict[str, dict[str, float]] = {}
            for name, cached in caches.items():
                run = cached.run(variant, cache_split)
                per_query[name] = run.per_query(qrels)
                recall = mean(run.per_query(qrels, "recall@100"))
                rows[name] = {"ndcg@10": round(mean(per_query[name]), 4), "recall@100": round(recall, 4)}
                rows[name] |= index_size(cached)
            first = present[0][0]
            for name in rows:
                if name != first:
                    rows[name]["vs_first"] = bootstrap(per_query[first], per_query[name])
            report[f"{dataset} {judged} ({len(qrels)})"] = rows
    return report


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.tune_chunking", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--split", choices=sorted(SPLITS), default="tune")
    parser.add_argument("caches", type=labelled, nargs="+", help="LABEL=FOLDER of each tune cache, the baseline first")
    parser.add_argument("--out", type=Path, help=f"default: {RESULTS}/tune_chunking_<split>.json")
    args = parser.parse_args(argv)
    report = score(args.caches, args.split)
    (args.out or RESULTS / f"tune_chunking_{args.split}.json").write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
