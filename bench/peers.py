"""ingestion-mcp beside the lightest peer, chroma-mcp, on one corpus, through each server's own MCP tools (issue 49).

Each server is started as an agent app starts it (stdio, a fresh data folder, offline), and measured on the same
``--docs`` SciFact documents and 300 test queries: the handshake (process start to `initialize` answered), the
resident memory of its whole process tree (every process under the server, sampled every 0.2 s: at rest after the
start and a first search, its peak over the run, and after the ingest and ``--idle`` seconds of quiet), the ingest
(wall time, documents/s, and the CPU seconds the tree spent on it: documents per CPU-second compare the work each
server does per document whatever the load of the moment), search latency through MCP (p50/p95, top 10) and
nDCG@10 of the top 10 as returned.

The servers: ingestion-mcp with int8 embeddings (the default on a CPU with int8 dot products) and with fp32 (the
precision the peer runs), hybrid indexing (BM25 + dense) as always; chroma-mcp, dense only. ingestion-mcp ingests by
``sync_folder`` of one text file per document (``--path sync``) or ``ingest_batch`` of 100 texts (``--path
batch``); chroma-mcp by ``chroma_add_documents`` of 100 texts. The servers run one after another, in an order that
rotates each round (``--rounds``), and the load average is sampled throughout: the machine may be shared, and
ratios mean something only between runs of one sitting under like load. docs/startup.md gives the figures.

ingestion-mcp starts as a user's install does: the bundled model's ONNX export, its manifest and its int8 variant
(which the ingestion-mcp-minilm wheel ships) are made once before anything is timed (``model_cache``), so no run
pays a model export with torch loaded.

The peer is installed into an environment of its own, outside this project; its model comes from this project:
the runner places the gateway's fp32 ONNX export of the bundled all-MiniLM-L6-v2 and its tokenizer where chromadb
looks before it downloads (``~/.cache/chroma/onnx_models/all-MiniLM-L6-v2/onnx`` under a fresh HOME per run), so it
runs offline on the same weights. To install it (chroma-mcp 0.2.6 pins mcp 1.6.0, which needs a pydantic before
2.11)::

    python3.11 -m venv ~/peers/chroma-mcp
    ~/peers/chroma-mcp/bin/pip install chroma-mcp==0.2.6 "pydantic<2.11"

    python -m bench.peers --peer ~/peers/chroma-mcp/bin/chroma-mcp [--dataset scifact|dbpedia-5k] [--docs 5183]
                          [--rounds 1] [--queries 300]
                          [--servers int8,fp32,chroma] [--path sync|batch] [--idle 60] [--out bench/results/peers.json]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import psutil
from mcp import ClientSession
from mcp.client.stdio import stdio_client

from .data import DATASETS, Doc, load, query_order
from .embedder_start import memory_mb
from .metrics import ndcg_at_k
from .pdf_scale import MB, TreeSampler
from .peers_servers import Chroma, Ours, Server, fp32_export, model_cache

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "results" / "peers.json"
SETTLE_S = 5.0


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def resident_parts(pid: int) -> dict[str, float]:
    """A process's resident memory by kind (Linux /proc/PID/status, MB): anonymous (heaps, arenas, caches the process
    made), file-backed (mapped libraries and files, which the kernel can drop and read again) and shared memory."""
    kinds = {"RssAnon": "anon", "RssFile": "file", "RssShmem": "shmem"}
    try:
        return {kinds[key]: mb for key, mb in memory_mb(pid, tuple(kinds)).items()}
    except OSError:  # gone, or not Linux
        return {}


def tree_mb() -> float:
    return round(sum(rss for _, rss in TreeSampler.tree().values()) / MB, 1)


class LoadSampler(TreeSampler):
    """The tree's peak RSS (TreeSampler) and the machine's 1-minute load average, sampled alongside."""

    def __init__(self) -> None:
        super().__init__()
        self.loads: list[float] = []

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            now = self.tree()
            self.tree_peak = max(self.tree_peak, sum(rss for _, rss in now.values()))
            if len(self.loads) < 100_000:
                self.loads.append(os.getloadavg()[0])


def tree_cpu_s() -> float:
    """CPU seconds the servers under this process have used, with their reaped children (the docling workers that
    exited) and their live ones: the work an ingest cost, whatever else the machine was running."""
    total = 0.0
    for process in psutil.Process().children(recursive=True):
        try:
            times = process.cpu_times()
        except psutil.Error:
            continue
        total += times.user + times.system + times.children_user + times.children_system
    return total


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(share * len(ordered)))], 1)


async def searches(server: Server, session: ClientSession, queries: dict[str, str], qrels: Any) -> dict[str, Any]:
    times, scores = [], []
    for query_id, text in queries.items():
        began = time.perf_counter()
        ranked = await server.ranked(session, text)
        times.append((time.perf_counter() - began) * 1000)
        scores.append(ndcg_at_k(ranked, qrels[query_id]))
    return {"p50_ms": percentile(times, 0.5), "p95_ms": percentile(times, 0.95),
            "ndcg@10": round(statistics.fmean(scores), 4), "queries": len(scores)}  # fmt: skip


async def measure(server: Server, docs: list[Doc], folder: Path, queries: dict[str, str], qrels: Any,
                  idle_s: float) -> dict[str, Any]:  # fmt: skip
    """One server from its start to its exit: every figure of the table."""
    sampler = LoadSampler()
    with tempfile.TemporaryDirectory(prefix=f"peers-{server.name}-") as scratch, sampler.sampling():
        began = time.perf_counter()
        async with stdio_client(server.params(Path(scratch))) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            handshake = time.perf_counter() - began
            await server.warm(session)
            first_s = time.perf_counter() - began
            await anyio.sleep(SETTLE_S)
            rest = tree_mb()
            ingest_began, cpu_before = time.perf_counter(), tree_cpu_s()
            ingested = await server.ingest(session, docs, folder)
            ingest_s, ingest_cpu = time.perf_counter() - ingest_began, tree_cpu_s() - cpu_before
            found = await searches(server, session, queries, qrels)
            await anyio.sleep(idle_s)
            after_idle = tree_mb()
            processes = [(name, rss, resident_parts(pid)) for pid, (name, rss) in TreeSampler.tree().items()]
    loads = sampler.loads or [os.getloadavg()[0]]
    return {
        "server": server.name, "handshake_s": round(handshake, 2), "first_call_s": round(first_s, 2),
        "ingest_s": round(ingest_s, 1), "docs_per_s": round(len(docs) / ingest_s, 2),
        "ingest_cpu_s": round(ingest_cpu, 1), "docs_per_cpu_s": round(len(docs) / ingest_cpu, 2),
        "ingested": ingested.get("succeeded", ingested.get("counts")), "rest_mb": rest,
        "peak_mb": round(sampler.tree_peak / MB, 1), f"after_{idle_s:.0f}s_idle_mb": after_idle,
        "after_idle_processes_mb": sorted(
            (name, round(rss / MB, 1), parts) for name, rss, parts in processes), **found,
        "load_median": round(statistics.median(loads), 2), "load_range": [round(min(loads), 2), round(max(loads), 2)],
    }  # fmt: skip


def file_stem(doc_id: str) -> str:
    """The file name (without .txt) a document is written under: its id where that is a plain name (SciFact's numbers),
    else a digest of it (dbpedia-5k's ids are "<dbpedia:Name>", with characters a file name should not carry)."""
    if re.fullmatch(r"[A-Za-z0-9_-]{1,64}", doc_id):
        return doc_id
    return "d" + hashlib.sha1(doc_id.encode("utf-8")).hexdigest()[:16]


def make_servers(names: list[str], peer: list[str] | None, path: str, stems: dict[str, str]) -> list[Server]:
    made: list[Server] = []
    cache = model_cache()
    for name in names:
        if name in ("int8", "fp32"):
            made.append(Ours(f"ingestion-mcp {name}", [], precision=name, path=path, model_cache=cache, stems=stems))
        elif name == "chroma":
            if not peer:
                raise SystemExit("--peer: the chroma-mcp command (see this module's docstring to install it)")
            made.append(Chroma("chroma-mcp", peer, model_dir=fp32_export(cache)))
        else:
            raise SystemExit(f"unknown server {name!r}: int8, fp32 or chroma")
    return made


async def run(args: argparse.Namespace) -> dict[str, Any]:
    dataset = load(DATASETS[args.dataset])
    if args.docs < len(dataset.docs):  # the queries' relevant documents and others drawn to make up the number
        needed = len(set().union(*(set(r) for r in list(dataset.subset(args.queries, 0).qrels.values()))))
        dataset = dataset.subset(args.queries, max(0, args.docs - needed))
    docs, qrels = dataset.docs, dataset.qrels
    queries = {q: dataset.queries[q] for q in sorted(qrels, key=query_order)[: args.queries]}
    stems = {doc.doc_id: file_stem(doc.doc_id) for doc in docs}
    servers = make_servers(args.servers.split(","), args.peer.split() if args.peer else None, args.path, stems)
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="peers-docs-") as scratch:
        folder = Path(scratch)
        for doc in docs:
            (folder / f"{stems[doc.doc_id]}.txt").write_text(f"{doc.title}\n\n{doc.text}\n", encoding="utf-8")
        for server in servers:
            if isinstance(server, Ours):
                server.docs = folder
        for round_ in range(args.rounds):
            order = servers[round_ % len(servers) :] + servers[: round_ % len(servers)]
            for server in order:
                log(f"round {round_ + 1}: {server.name}")
                result = await measure(server, docs, folder, queries, qrels, args.idle)
                log(json.dumps(result))
                runs.append({"round": round_ + 1, **result})
    return {"benchmark": "peers", "dataset": args.dataset, "docs": len(docs), "queries": len(queries),
            "path": args.path, "cpus": os.cpu_count(), "runs": runs}  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.peers", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--peer", help="the chroma-mcp command (its venv's bin/chroma-mcp)")
    parser.add_argument("--servers", default="int8,fp32,chroma", help="which to run, in this order in round 1")
    parser.add_argument("--dataset", choices=sorted(DATASETS), default="scifact", help="the corpus and its queries")
    parser.add_argument("--docs", type=int, default=5183, help="documents (SciFact's 5,183: all; dbpedia-5k's 5,000)")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--path", choices=["sync", "batch"], default="sync", help="how ingestion-mcp ingests")
    parser.add_argument("--idle", type=float, default=60.0, help="seconds of quiet after the searches")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    report = anyio.run(run, args)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
