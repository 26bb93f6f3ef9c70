"""What the exact-phrase lookup costs a search: median and p95 of the gateway's search per mode, with and without.

    python -m bench.experiments.exact_phrase_cost --dataset scifact --queries 100

The first ``queries`` queries of a set built by bench.experiments.bm25_languages (all of SciFact's are 4+ words:
phrases),
top_k 10, through vector_gateway.search on Milvus Lite, each query's vector embedded once beforehand (not timed);
the two variants alternate query by query so that load on the machine touches both alike.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

from ..data import DATASETS, load
from ..rankings import TMP, collection_name
from ..results_io import write_json
from .exact_phrase import MODES, gateway_search


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.experiments.exact_phrase_cost", description=__doc__)
    parser.add_argument("--dataset", default="scifact", choices=sorted(DATASETS))
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    queries = list(load(DATASETS[args.dataset]).queries.values())[: args.queries]
    run, close = gateway_search(TMP / args.dataset / "milvus.db", [f"{collection_name(args.dataset)}_snowball_multi"])
    report: dict[str, dict[str, float]] = {}
    try:
        for query in queries:  # vectors embedded (cached) and every code path warmed, not timed
            run(query, "hybrid", 10, True)
        for mode in MODES:
            times: dict[bool, list[float]] = {False: [], True: []}
            for query in queries:
                for lifted in (False, True):
                    started = time.perf_counter()
                    run(query, mode, 10, lifted)
                    times[lifted].append((time.perf_counter() - started) * 1000)
            for lifted, values in times.items():
                ordered = sorted(values)
                p95 = ordered[int(len(ordered) * 0.95)]
                label = f"{mode} {'with' if lifted else 'without'} lookup"
                report[label] = {"p50_ms": round(statistics.median(ordered), 1), "p95_ms": round(p95, 1)}
            print(mode, {k: v for k, v in report.items() if k.startswith(mode)}, flush=True)
    finally:
        close()
    print(json.dumps(report, indent=1))
    if args.out:
        write_json(args.out, report, indent=1)


if __name__ == "__main__":
    main()
