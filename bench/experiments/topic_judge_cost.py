"""What judging an answer by its meaning costs a search (issue 52, point 2): the gateway's search per mode, with the
meaning check (relevance.off_topic's LEXICAL_MEANING_FLOOR: a dense search of the hits' chunks, and in keyword mode the
query's embedding; then, where the closest hit holds one word of the query only, that word's embedding and its cosine
with the hit) and without it, on the index bench.rankings built.

    python -m bench.experiments.topic_judge_cost --dataset scifact --queries 100

Queries: the first ``queries`` test queries of the set (on topic) and bench.offtopic_sets' 40 held-out everyday
questions (off topic), top_k 10, through ``GatewayService._search_in`` (embedding, search, judgment: what
/v1/search runs past its HTTP layer) on Milvus Lite with the model the index was built with (fp32). The two variants
alternate query by query so that load on the machine touches them alike; "without" is the rules before the check (an
answer that reaches its floor on words is shown), "without_one_word" the check of the query's meaning alone (before
the one-word rule). Semantic mode: with and without the hybrid judgment of an answer under its floor (a hybrid
search of the same query). Reports median and p95 per mode and variant, and the share of answers that needed the
check.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..data import DATASETS, load
from ..offtopic_sets import offtopic_sets
from ..pipeline import environment
from ..rankings import TMP, collection_name, open_index
from ..results_io import write_json

if TYPE_CHECKING:
    from ingestion_contracts.gateway import SearchMode

MODES: tuple[Literal["keyword", "hybrid"], ...] = ("keyword", "hybrid")


def _summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {"p50_ms": round(statistics.median(ordered), 2), "p95_ms": round(ordered[int(len(ordered) * 0.95)], 2)}


def measure(dataset: str, count: int) -> dict[str, Any]:
    from vector_gateway.embedder import EmbedderHolder
    from vector_gateway.service import GatewayService
    from vector_gateway.settings import GatewaySettings

    work = TMP / dataset
    if not (work / "milvus.db").exists():
        raise SystemExit(f"No index in {work}: run `python -m bench.rankings --dataset {dataset}` first.")
    queries = list(load(DATASETS[dataset]).queries.values())[:count] + offtopic_sets("test")["everyday"]
    with environment(VECTOR_GATEWAY_EMBEDDING_PRECISION="fp32"):
        service = GatewayService(open_index(work), EmbedderHolder(GatewaySettings()))
        service.embedders.get()
    name = collection_name(dataset)
    judged = service._meaning
    asked: set[str] = set()  # the queries whose answer was checked (by the query's meaning, then maybe a word's)

    def counted(*args: Any) -> list[float] | None:
        asked.add(args[0])
        return judged(*args)

    def before(*_args: Any) -> None:  # the check's callable answering "cannot tell": the rules before it
        return None

    def query_only(*args: Any) -> list[float] | None:  # the query's meaning, no word's: before the one-word rule
        query, text = args[0], args[5]
        return judged(*args) if text == query else None

    report: dict[str, Any] = {"dataset": dataset, "queries": len(queries), "cores": os.cpu_count()}
    for mode in MODES:
        asked.clear()
        variants = {"without": before, "without_one_word": query_only, "with": counted}
        report[mode] = _alternate(service, "_meaning", variants, name, mode, queries)
        report[mode]["checked_share"] = round(len(asked) / len(set(queries)), 3)
        print(mode, report[mode], flush=True)
    report["semantic"] = _semantic(service, name, queries)
    print("semantic", report["semantic"], flush=True)
    service.store.close()
    return report


def _semantic(service: Any, name: str, queries: list[str]) -> dict[str, Any]:
    """Semantic mode with and without the hybrid judgment of an answer under its floor (_by_words_too: a hybrid
    search of the same query, judged)."""
    judged = service._by_words_too
    asked: set[str] = set()

    def counted(names: list[str], request: Any, *args: Any) -> Any:
        asked.add(request.query)
        return judged(names, request, *args)

    def before(*_args: Any) -> str:  # the rules before it: under the floor stays under it
        return "under_floor"

    out = _alternate(service, "_by_words_too", {"without": before, "with": counted}, name, "semantic", queries)
    out["checked_share"] = round(len(asked) / len(set(queries)), 3)
    return out


def _alternate(service: Any, attribute: str, variants: dict[str, Any], name: str, mode: SearchMode,
               queries: list[str]) -> dict[str, Any]:  # fmt: skip
    """Each query searched once per variant (``attribute`` of the service swapped for it), the variants alternating
    query by query; the first round warms every path, untimed. The service's own ``attribute`` is put back."""
    from ingestion_contracts.gateway import SearchRequest

    own = getattr(service, attribute)
    times: dict[str, list[float]] = {variant: [] for variant in variants}
    for round_ in range(2):
        for query in queries:
            request = SearchRequest(query=query, collections=[name], mode=mode, top_k=10)
            for variant, check in variants.items():
                setattr(service, attribute, check)
                started = time.perf_counter()
                service._search_in([name], request, None)
                if round_:
                    times[variant].append((time.perf_counter() - started) * 1000)
    setattr(service, attribute, own)
    return {variant: _summary(values) for variant, values in times.items()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.experiments.topic_judge_cost", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--dataset", default="scifact", choices=sorted(DATASETS))
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    report = measure(args.dataset, args.queries)
    print(json.dumps(report, indent=1))
    if args.out:
        write_json(args.out, report, indent=1)


if __name__ == "__main__":
    main()
