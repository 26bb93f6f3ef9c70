"""One ranking across collections, on a whole benchmark: the corpus split round-robin into three collections and
searched together, against the same documents in one collection (issue 12, point 1), in every mode.

    python -m bench.experiments.cross_collection --dataset scifact  # -> bench/experiments/results/cross_collection.json

tests/bench/test_cross_collection.py checks the same on a 300-document subset in CI; this runs the full set
through the gateway's search API (top 100, as `make bench` asks), in the index bench.rankings built
(bench/results/tmp/<dataset>/, reused; the three parts are ingested beside it once).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from pathlib import Path
from typing import Any

from ingestion_contracts.gateway import SearchMode

from ..data import DATASETS, load
from ..metrics import evaluate
from ..pipeline import ingest, open_stack, ranked_documents
from ..rankings import TMP, build, collection_name
from ..results_io import write_json

OUT = Path(__file__).resolve().parent / "results" / "cross_collection.json"
MODES: tuple[SearchMode, ...] = ("hybrid", "semantic", "keyword")
DEPTH = 100


async def measure(dataset: str) -> dict[str, Any]:
    data = load(DATASETS[dataset])
    work = await build(dataset)  # the whole corpus in one collection
    whole = collection_name(dataset)
    parts = [f"{whole}_part_{letter}" for letter in "abc"]
    async with open_stack(work) as stack:
        present = {c.name for c in (await stack.backend.list_collections()).collections}
        for index, name in enumerate(parts):
            if name not in present:
                await ingest(stack, data.docs[index :: len(parts)], collection=name)
        report: dict[str, Any] = {"dataset": dataset, "queries": len(data.queries), "documents": len(data.docs)}
        for mode in MODES:
            for label, names in (("one", [whole]), ("three", parts)):
                runs = {q: await ranked_documents(stack, text, collection=names, mode=mode, depth=DEPTH)
                        for q, text in data.queries.items()}  # fmt: skip
                scores = evaluate(runs, data.qrels)
                report[f"{mode} {label}"] = {k: round(v, 4) for k, v in scores.items()}
            gap = report[f"{mode} three"]["ndcg@10"] - report[f"{mode} one"]["ndcg@10"]
            report[f"{mode} gap"] = round(gap, 4)
            print(f"{dataset} {mode}: one {report[f'{mode} one']['ndcg@10']:.4f}, three "
                  f"{report[f'{mode} three']['ndcg@10']:.4f}, gap {gap:+.4f}", flush=True)  # fmt: skip
    return report


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.experiments.cross_collection", description=__doc__)
    parser.add_argument("--dataset", action="append", choices=sorted(DATASETS), help="default: both")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    results = json.loads(OUT.read_text()) if OUT.is_file() else {}
    for dataset in args.dataset or sorted(DATASETS, reverse=True):
        results[dataset] = asyncio.run(measure(dataset))
        write_json(OUT, results, indent=2)
    print(f"wrote {OUT} ({TMP} keeps the indexes)")


if __name__ == "__main__":
    main()
