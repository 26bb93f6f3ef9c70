"""The real MCP server (``ingestion_mcp.cli.server_command`` over stdio, embedded services) on an index
bench.scale built: seconds until the first search answers, hybrid ``search`` tool latency, resident memory of
every process.

Memory is read with pdf_scale's TreeSampler (every 0.2 s, each process under the bench: the MCP server, its
children and, for milvus-server, the ``milvus-lite server`` process), peak over the whole session and after
the searches.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import psutil
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from .data import corpus_id
from .latency import summary
from .metrics import fold_to_documents
from .pdf_scale import MB, ROOT, TreeSampler, server

OPEN_TIMEOUT_S = 1800.0  # Milvus Lite rebuilds its BM25 postings on the first search: minutes at 1M chunks
QUALITY_DEPTH = 100  # chunks per query, folded to documents (bench.pipeline's SEARCH_DEPTH)
DETAILED = 10  # detailed calls after the timed ones, for the gateway's share of a call
BIG_BUDGET = "25000"  # tokens (the setting's ceiling): 100 concise results must not be trimmed for the metrics


def params(folder: Path, env: Mapping[str, str]) -> StdioServerParameters:
    """The server as an agent app launches it, on ``folder``/data, with the engine's environment."""
    data, docs = folder / "data", folder / "docs"
    data.mkdir(parents=True, exist_ok=True)
    docs.mkdir(parents=True, exist_ok=True)
    launched = server(ROOT, docs, data)
    extra = {"INGESTION_MCP_RESPONSE_TOKEN_BUDGET": BIG_BUDGET, "INGESTION_MCP_LOG_LEVEL": "WARNING", **env}
    return launched.model_copy(update={"env": {**(launched.env or {}), **extra}})


async def search(client: Client, query: str, collection: str, top_k: int = 10, **extra: Any) -> dict[str, Any]:
    answer = await client.call_tool("search", {"query": query, "collection": collection, "top_k": top_k, **extra})
    if answer.is_error or answer.structured_content is None:
        raise RuntimeError(f"search failed: {answer.content}")
    return answer.structured_content


async def first_answer(client: Client, query: str, collection: str) -> tuple[int, list[str]]:
    """Search until one answers (the model and the index may still be loading); (tries, errors seen)."""
    errors: list[str] = []
    with anyio.fail_after(OPEN_TIMEOUT_S):
        while True:
            try:
                await search(client, query, collection)
                return len(errors) + 1, errors[:3]
            except RuntimeError as exc:
                errors.append(str(exc)[:300])
                await anyio.sleep(0.5)


LABELS = (("ingestion_mcp.cli.server_command", "mcp server"), ("milvus-lite server", "milvus-lite server"),
          ("forkserver", "docling forkserver"), ("resource_tracker", "resource tracker"))  # fmt: skip


def label(command: str) -> str:
    """What a process of the server's tree is (pdf_scale's label() takes a forkserver whose sys.path names a
    milvus folder for Milvus)."""
    return next((name for needle, name in LABELS if needle in command), command.split(" ")[0].rsplit("/")[-1])


class Sampler(TreeSampler):
    """TreeSampler that also keeps each process's command line (which child is which)."""

    def __init__(self) -> None:
        super().__init__()
        self.commands: dict[int, str] = {}
        self.parents: dict[int, int] = {}

    def tree(self) -> dict[int, tuple[str, int]]:  # type: ignore[override]  # the base's is static; same call
        for process in psutil.Process().children(recursive=True):
            if process.pid not in self.commands:
                with contextlib.suppress(psutil.Error):
                    self.commands[process.pid] = " ".join(process.cmdline())[:160]
                    self.parents[process.pid] = process.ppid()
        return TreeSampler.tree()

    def label(self, pid: int, fallback: str) -> str:
        """A docling worker is forked by the forkserver: the same command line as its parent's."""
        command = self.commands.get(pid, fallback)
        if "forkserver" in command and self.commands.get(self.parents.get(pid, -1)) == command:
            return "docling worker"
        return label(command)


def processes(sampler: Sampler, after: dict[int, tuple[str, int]]) -> list[dict[str, Any]]:
    rows = [{"process": sampler.label(pid, name), "pid": pid, "peak_mb": round(rss / MB, 1),
             "after_mb": round(after[pid][1] / MB, 1) if pid in after else None,
             "command": sampler.commands.get(pid, "")}
            for pid, (name, rss) in sampler.peaks.items()]  # fmt: skip
    return sorted(rows, key=lambda r: -r["peak_mb"])


async def timed_searches(client: Client, queries: list[str], collection: str) -> dict[str, Any]:
    """Wall ms per tool call (as the agent waits); then a few detailed calls for the gateway's own share
    (query embedding + search as the tool reports it: the rest is MCP, JSON and the HTTP hop)."""
    samples, empty = [], 0
    for query in queries:
        began = time.perf_counter()
        answer = await search(client, query, collection)
        samples.append((time.perf_counter() - began) * 1000)
        empty += not answer.get("results")
    inside = [(await search(client, q, collection, response_format="detailed")).get("search_time_ms") or 0.0
              for q in queries[:DETAILED]]  # fmt: skip
    return {"search": summary(samples), "empty_answers": empty, "gateway_search_ms": summary(inside)}


async def measure(
    launch: StdioServerParameters, collection: str, queries: list[str], warmup: int, started: float, log: Path
) -> dict[str, Any]:
    """``started``: perf_counter() when the engine's processes began (before the MCP server, for milvus-server
    before its ``milvus-lite server``): open = from then until the first search answers."""
    sampler = Sampler()
    with sampler.sampling(), log.open("a") as errlog:
        spawned = time.perf_counter()
        async with Client(stdio_client(launch, errlog), read_timeout_seconds=OPEN_TIMEOUT_S) as client:
            connected = time.perf_counter()  # the MCP handshake done: the server process is up
            tries, errors = await first_answer(client, queries[0], collection)
            opened = time.perf_counter()
            for query in queries[1 : warmup + 1]:
                await search(client, query, collection)
            timed = await timed_searches(client, queries[warmup + 1 :], collection)
            after = TreeSampler.tree()
    each = processes(sampler, after)
    return {
        "open_s": round(opened - started, 2),
        "open_from_mcp_start_s": round(opened - spawned, 2),
        "mcp_handshake_s": round(connected - spawned, 2),
        "first_search_tries": tries,
        "first_search_errors": errors,
        **timed,
        "rss_peak_tree_mb": round(sampler.tree_peak / MB, 1),
        "rss_after_tree_mb": round(sum(rss for _, rss in after.values()) / MB, 1),
        "rss_peak_server_mb": max((p["peak_mb"] for p in each if p["process"] == "mcp server"), default=None),
        "processes": each,
    }


async def ranked(launch: StdioServerParameters, collection: str, queries: Mapping[str, str], log: Path) -> dict:
    """Each query's corpus ids, ranked by their best chunk, from the hybrid search tool (100 chunks deep)."""
    runs: dict[str, list[str]] = {}
    with log.open("a") as errlog:
        async with Client(stdio_client(launch, errlog), read_timeout_seconds=OPEN_TIMEOUT_S) as client:
            await first_answer(client, next(iter(queries.values())), collection)
            for qid, text in queries.items():
                answer = await search(client, text, collection, top_k=QUALITY_DEPTH)
                runs[qid] = fold_to_documents(corpus_id(hit["source"]) for hit in answer.get("results") or [])
    return runs
