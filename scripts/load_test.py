"""Loopback load test: N MCP clients mix ingests and searches against the three real service processes.

    .venv/bin/python scripts/load_test.py --clients 8 --duration 120 [--topology queue|embedded]

`queue` (what `make load` runs) is the deployment's shape: Redis, two MCP replicas over streamable HTTP
and a queue worker behind a round-robin balancer, each client its own MCP connection (protocols
alternate). `embedded` is one in-process MCP server on the same services.

Every client ingests new documents, re-ingests its own (a replace) and searches, for a bounded time.
At the end the gateway's documents are checked against what was acknowledged: none lost, none
duplicated, no chunk rows beyond the live versions. Figures go to bench/results/load_test.json.
Exit status 1 on any error or mismatch.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import random
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))  # scripts.service_stack: the helpers the servers share
from load_topology import http_client_factory, queue_topology
from service_stack import ServiceStack, call, collection_state, mcp_client

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "bench" / "results" / "load_test.json"
WORDS = [
    "harbour",
    "lantern",
    "orchard",
    "glacier",
    "turbine",
    "ledger",
    "canyon",
    "meadow",
    "quarry",
    "summit",
    "beacon",
    "archive",
]


@dataclass
class Tally:
    ingest_ms: list[float] = field(default_factory=list)
    search_ms: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    acknowledged: dict[str, str] = field(default_factory=dict)  # source -> status of its last ingest


def document_text(client_id: int, doc: int, version: int, rng: random.Random) -> str:
    words = " ".join(rng.choice(WORDS) for _ in range(40))
    return f"# Report {client_id}-{doc}\n\nRevision {version} of report {client_id}-{doc}. {words}. " * 3


async def finished(client: Any, answer: dict[str, Any]) -> dict[str, Any]:
    """An ingest that outlived the sync wait answered with a job: follow it to its end."""
    while True:
        job = (await call(client, "get_job_status", job_id=answer["job_id"]))["job"]
        if job["status"] != "running":
            if job["status"] == "completed":
                return job["result"] | {"is_error": False}
            return {"is_error": True, "error": job.get("error") or job["status"]}
        await asyncio.sleep(0.2)


async def one_client(client: Any, client_id: int, collection: str, deadline: float, tally: Tally) -> None:
    rng = random.Random(client_id)
    mine: list[str] = []
    version = 0
    while time.monotonic() < deadline:
        started = time.perf_counter()
        if rng.random() < 0.4:
            if mine and rng.random() < 0.3:
                name = rng.choice(mine)
            else:
                name = f"c{client_id}-d{len(mine)}"
                mine.append(name)
            version += 1
            text = document_text(client_id, mine.index(name), version, rng)
            answer = await call(client, "ingest_text", text=text, name=name, collection=collection)
            if answer.get("job_id") and not answer["is_error"]:
                answer = await finished(client, answer)
            tally.ingest_ms.append((time.perf_counter() - started) * 1000)
            if answer["is_error"]:
                tally.errors.append(f"ingest {name}: {answer.get('error')}")
            else:
                tally.acknowledged[name] = answer["status"]
        else:
            query = " ".join(rng.sample(WORDS, 2))
            answer = await call(client, "search", query=query, collection=collection, top_k=5)
            tally.search_ms.append((time.perf_counter() - started) * 1000)
            if answer["is_error"]:
                tally.errors.append(f"search {query!r}: {answer.get('error')}")


def percentiles(values: list[float]) -> dict[str, float | None]:
    if len(values) < 2:
        return {"p50_ms": values[0] if values else None, "p95_ms": values[0] if values else None}
    cuts = statistics.quantiles(values, n=100)
    return {"p50_ms": round(cuts[49], 1), "p95_ms": round(cuts[94], 1)}


def verify(stack: ServiceStack, collection: str, tally: Tally) -> dict[str, Any]:
    state = collection_state(stack, collection)
    stored = set(state["sources"])
    acknowledged = set(tally.acknowledged)
    return {
        "documents_acknowledged": len(acknowledged),
        "documents_stored": state["documents"],
        "lost": sorted(acknowledged - stored),
        "unexpected": sorted(stored - acknowledged),
        "duplicated": state["documents"] - len(stored),
        "chunk_rows": state["chunk_rows"],
        "stray_chunk_rows": state["chunk_rows"] - sum(state["sources"].values()),
        "unreadable_chunks": state["unreadable_chunks"],
    }


async def run_load(stack: ServiceStack, *, clients: int, duration_s: float, connect: Any = None) -> dict[str, Any]:
    """Run the mix against ``stack`` and return the report (``ok`` says whether it held).

    ``connect(user)``: an async context manager giving user ``user`` its own MCP client (the queue
    topology); by default every user shares one in-process MCP server on ``stack``."""
    collection = "load_" + uuid.uuid4().hex[:8]
    tally = Tally()
    started = time.monotonic()
    async with contextlib.AsyncExitStack() as opened:
        if connect is None:
            shared = await opened.enter_async_context(
                mcp_client(stack, max_concurrent_jobs=min(16, max(clients, 1)), sync_wait_s=55)
            )
            users = [shared] * clients
        else:
            users = [await opened.enter_async_context(connect(i)) for i in range(clients)]
        # One document first: a search of a collection that does not exist yet is an error, rightly.
        seed = await call(users[0], "ingest_text", text=document_text(-1, 0, 0, random.Random(0)), name="seed",
                          collection=collection)  # fmt: skip
        tally.acknowledged["seed"] = seed["status"]
        deadline = time.monotonic() + duration_s
        await asyncio.gather(*(one_client(users[i], i, collection, deadline, tally) for i in range(clients)))
    elapsed = time.monotonic() - started
    checks = await asyncio.to_thread(verify, stack, collection, tally)
    report = {
        "topology": "embedded" if connect is None else "queue",
        "clients": clients,
        "duration_s": round(elapsed, 1),
        "requests": len(tally.ingest_ms) + len(tally.search_ms),
        "ingests": len(tally.ingest_ms),
        "searches": len(tally.search_ms),
        "errors": len(tally.errors),
        "error_samples": tally.errors[:10],
        "ingest": percentiles(tally.ingest_ms),
        "search": percentiles(tally.search_ms),
        **checks,
    }
    wrong = ("lost", "unexpected", "duplicated", "unreadable_chunks", "stray_chunk_rows")
    report["ok"] = not (report["errors"] or any(checks[k] for k in wrong)) and (
        checks["documents_stored"] == checks["documents_acknowledged"]
    )
    return report


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=8, help="concurrent MCP clients (default 8)")
    parser.add_argument("--duration", type=float, default=120.0, help="seconds of load (default 120)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"JSON report (default {DEFAULT_OUT})")
    parser.add_argument(
        "--topology",
        choices=["queue", "embedded"],
        default="queue",
        help="queue: Redis + 2 replicas + worker behind a balancer (default); embedded: one server",
    )
    parser.add_argument("--replicas", type=int, default=2, help="MCP replicas of the queue topology (default 2)")
    parser.add_argument("--workers", type=int, default=1, help="queue workers of the queue topology (default 1)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.disable(logging.INFO)  # the in-process MCP server logs every request at INFO
    workdir = Path(tempfile.mkdtemp(prefix="load-test-"))
    with ServiceStack(workdir, auth_token=uuid.uuid4().hex) as stack:
        if args.topology == "embedded":
            report = asyncio.run(run_load(stack, clients=args.clients, duration_s=args.duration))
        else:
            with queue_topology(stack, replicas=args.replicas, workers=args.workers) as url:
                connect = http_client_factory(url, stack.headers())
                report = asyncio.run(run_load(stack, clients=args.clients, duration_s=args.duration, connect=connect))
            report |= {"replicas": args.replicas, "workers": args.workers}
    if report["ok"]:
        shutil.rmtree(workdir, ignore_errors=True)
    else:
        report["service_logs"] = str(workdir)  # kept for the post-mortem
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
