"""Documents or passages: what the MCP ``search`` tool returns at top_k 10, as an agent calls it (issue 52, point 6).

    python -m bench.rankings --dataset scifact       # the index, once (reused)
    python -m bench.grouped                          # -> bench/results/grouped.json

The real server (``ingestion_mcp.cli.server_command`` over stdio, embedded services) on the index bench.rankings
built (SciFact,
one document per abstract). For each of the 300 test queries, hybrid:

- ``passages``: top_k 10 as the tool answers by default; how many documents the ten passages hold, and nDCG@10 of
  those documents in the order of their best passage (fewer than 10 when passages share a document);
- ``grouped``: top_k 10 with per_document 1 (ten documents, each by its best passage);
- ``benchmark``: top_k 100 folded into documents, what bench.run measures (the project's benchmark figure).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import stdio_client

from .data import DATASETS, corpus_id, load
from .metrics import evaluate, fold_to_documents
from .pdf_scale import ROOT, server
from .rankings import TMP
from .scale_mcp import BIG_BUDGET, OPEN_TIMEOUT_S, first_answer, search

RESULTS = Path(__file__).resolve().parent / "results"
WAYS = {"passages": {"top_k": 10}, "grouped": {"top_k": 10, "per_document": 1}, "benchmark": {"top_k": 100}}


async def measure(collection: str = "scifact") -> dict[str, Any]:
    data = load(DATASETS["scifact"])
    work = TMP / "scifact"
    docs = TMP / "grouped-docs"
    docs.mkdir(parents=True, exist_ok=True)
    launch = server(ROOT, docs, work)
    quiet = {"INGESTION_MCP_RESPONSE_TOKEN_BUDGET": BIG_BUDGET, "INGESTION_MCP_LOG_LEVEL": "WARNING"}
    env = {**(launch.env or {}), **quiet}
    launch = launch.model_copy(update={"env": env})
    runs: dict[str, dict[str, list[str]]] = {way: {} for way in WAYS}
    shown: dict[str, list[int]] = {way: [] for way in WAYS}
    with (TMP / "grouped.log").open("a") as errlog:
        async with Client(stdio_client(launch, errlog), read_timeout_seconds=OPEN_TIMEOUT_S) as client:
            await first_answer(client, next(iter(data.queries.values())), collection)
            for qid, text in data.queries.items():
                for way, arguments in WAYS.items():
                    answer = await search(client, text, collection, **arguments)
                    results = answer.get("results") or []
                    runs[way][qid] = fold_to_documents(corpus_id(hit["source"]) for hit in results)
                    shown[way].append(len(results))
    out: dict[str, Any] = {"queries": len(data.queries)}
    for way in WAYS:
        out[way] = evaluate(runs[way], data.qrels) | {
            "results_per_answer": round(statistics.mean(shown[way]), 2),
            "documents_in_top_10": round(statistics.mean(len(r[:10]) for r in runs[way].values()), 2),
        }
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.grouped", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--out", type=Path, default=RESULTS / "grouped.json")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    report = anyio.run(measure)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
