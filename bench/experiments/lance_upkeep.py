"""What rows outside a Lance table's indexes cost a search, and what indexing them costs (issue 31, lance/upkeep.py).

On a copy of a Lance folder built by bench.experiments.scale_store (its chunk table fully indexed), for each N in
``--add``: the BM25 and dense rankings of the gateway's store (top 100, the depth a hybrid search asks for)
with every row indexed, then with N more rows written and not indexed (Lance searches them flat), then
the upkeep's optimisation of the table (seconds), then the rankings again. The source folder is not
touched; each N starts from a fresh copy. Results: bench/experiments/results/lance_upkeep.json.

    python -m bench.experiments.scale_store --rows 100000   # the folders, if not built yet
    python -m bench.experiments.lance_upkeep --lance bench/results/tmp/scale_store/100000 --add 200,1000
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

from .scale_profile import COLLECTION, queries, stats, unit_vectors

OUT = Path("bench/experiments/results/lance_upkeep.json")
RUNS = 30


def rankings(store: Any) -> dict[str, dict[str, float]]:
    from vector_gateway import lexical

    texts, vectors = queries(), unit_vectors(RUNS, seed=7).tolist()

    def timed(call: Callable[[int], object]) -> dict[str, float]:
        call(0)  # warm
        samples = []
        for i in range(RUNS):
            started = time.perf_counter()
            call(i)
            samples.append((time.perf_counter() - started) * 1000)
        return stats(samples)

    fields = ["doc_id", "version"]
    analysed = [lexical.analyze(text, "snowball_en") for text in texts]
    return {
        "bm25": timed(lambda i: store.search(COLLECTION, mode="keyword", vector=None, limit=100, where=None,
                                             text=analysed[i % len(analysed)], fields=fields)),
        "dense": timed(lambda i: store.search(COLLECTION, mode="semantic", vector=vectors[i], text="", limit=100,
                                              where=None, fields=fields)),
    }  # fmt: skip


def unindexed(store: Any) -> int:
    from vector_gateway.lance.upkeep import unindexed_rows

    return unindexed_rows(store._table(COLLECTION))


def one(source: Path, work: Path, add: int) -> dict[str, Any]:
    from vector_gateway.lance import LanceStore

    copy = work / f"copy-{add}"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(source, copy)
    store = LanceStore(str(copy), maintain=False)  # the bench decides when the upkeep runs
    out: dict[str, Any] = {"rows": store.count(COLLECTION), "added": add, "indexed": rankings(store)}
    rows = store.query(COLLECTION, None, ["*"], limit=add)
    for i, row in enumerate(rows):
        row["chunk_id"] = f"upkeep-bench-{i}"
    for start in range(0, len(rows), 100):  # as a server writes them: a document's chunks at a time
        store.insert(COLLECTION, rows[start : start + 100])
    out["unindexed_rows"] = unindexed(store)
    out["with_unindexed"] = rankings(store)
    started = time.perf_counter()
    store.optimize(COLLECTION, keep=timedelta(0))
    out["optimize_s"] = round(time.perf_counter() - started, 2)
    out["after_optimize"] = rankings(store)
    out["unindexed_after"] = unindexed(store)
    store.close()
    shutil.rmtree(copy, ignore_errors=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lance", type=Path, required=True, help="a folder bench.experiments.scale_store built")
    parser.add_argument("--add", default="200,1000", help="rows written after the indexes, comma-separated")
    parser.add_argument("--work", type=Path, default=Path("bench/results/tmp/lance_upkeep"))
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    found = [one(args.lance.resolve(), args.work, int(n)) for n in args.add.split(",")]
    for run in found:
        print(f"{run['rows']:>9,} rows + {run['added']:>5} unindexed: bm25 p50 {run['indexed']['bm25']['p50_ms']}"
              f" -> {run['with_unindexed']['bm25']['p50_ms']} -> {run['after_optimize']['bm25']['p50_ms']} ms,"
              f" dense {run['indexed']['dense']['p50_ms']} -> {run['with_unindexed']['dense']['p50_ms']}"
              f" -> {run['after_optimize']['dense']['p50_ms']} ms; optimize {run['optimize_s']} s")  # fmt: skip
    previous = json.loads(args.out.read_text()) if args.out.is_file() else {}
    runs = previous.get("runs", {})
    runs[str(found[0]["rows"]) if found else "none"] = found
    args.out.write_text(json.dumps({
        "benchmark": "lance_upkeep", "when_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "command": f"python -m bench.experiments.lance_upkeep --lance {args.lance} --add {args.add}", "runs": runs,
    }, indent=1) + "\n")  # fmt: skip


if __name__ == "__main__":
    main()
