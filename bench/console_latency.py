"""Operator console latency: each page's GET, timed over loopback HTTP against the real app on a big collection.

A collection of about ``--chunks`` chunks is built through the real pipeline on the embedded default
(generated documents, chunked and embedded as ingest_text does), then the server's real HTTP app
(serving.http_app: the console beside /mcp) runs under uvicorn on a loopback port, on its own event loop in a
thread, and httpx GETs every console page ``--repeat`` times, the pages interleaved so load on the machine
hits them alike. Prints and writes median and p95 per page (target: p95 under 300 ms) to
bench/results/console_latency.json.

    python -m bench.console_latency [--chunks 10000] [--repeat 30]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
from anyio.from_thread import BlockingPortal, start_blocking_portal

from scripts.serve_app import serving

from .data import Doc
from .latency import summary
from .pipeline import Stack, ingest, open_stack
from .results_io import write_json

ROOT = Path(__file__).resolve().parent
COLLECTION = "console_bench"
TARGET_P95_MS = 300.0
WARMUP = 3


def vocabulary(rng: random.Random, size: int = 3000) -> list[str]:
    """Pronounceable made-up words: a keyword index with a realistic spread of rare and common terms."""
    syllables = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]
    return ["".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))) for _ in range(size)]


def documents(count: int, seed: int = 23) -> list[Doc]:
    """``count`` documents of a few headed sections each (about ten chunks a document)."""
    rng = random.Random(seed)
    words = vocabulary(rng)
    weights = [1 / (rank + 1) for rank in range(len(words))]  # Zipf-like: some words everywhere, most rare

    def sentence() -> str:
        return " ".join(rng.choices(words, weights, k=rng.randint(8, 20))).capitalize() + "."

    docs = []
    for number in range(count):
        sections = [f"## Section {s + 1}\n\n" + " ".join(sentence() for _ in range(30)) for s in range(4)]
        docs.append(Doc(f"doc-{number:05d}", f"Report {number}: {words[number % len(words)]}",
                        f"# Report {number}\n\n" + "\n\n".join(sections), prefix="console:"))  # fmt: skip
    return docs


async def build(stack: Stack, target_chunks: int) -> dict[str, Any]:
    """Ingest generated documents in rounds until the collection holds ``target_chunks``.

    A collection already that big in ``--work-dir`` (a previous run's) is timed as it is: comparing two
    versions of the console on the same data costs one build, not two."""
    started, chunks, docs_done, first = time.perf_counter(), 0, 0, 0
    existing = {info.name: info for info in (await stack.backend.list_collections()).collections}
    if COLLECTION in existing and existing[COLLECTION].chunk_count >= target_chunks:
        found = existing[COLLECTION]
        return {"chunks": found.chunk_count, "documents": found.document_count, "build_s": 0.0, "reused": True}
    per_round = 100
    while chunks < target_chunks:
        docs = documents(first + per_round)[first:]
        outcome = await ingest(stack, docs, collection=COLLECTION)
        chunks, docs_done, first = chunks + outcome["chunks"], docs_done + outcome["documents"], first + per_round
        print(f"  {chunks} chunks in {docs_done} documents ({time.perf_counter() - started:.0f} s)", file=sys.stderr)
        if first == per_round and outcome["chunks"]:  # size the remaining rounds from the first one
            per_round = max(1, min(500, round(per_round * 1000 / outcome["chunks"])))
    return {"chunks": chunks, "documents": docs_done, "build_s": round(time.perf_counter() - started, 1)}


@contextlib.asynccontextmanager
async def served(stack: Stack, target_chunks: int, into: dict[str, Any]) -> AsyncIterator[str]:
    """The real HTTP app (the console and /mcp) under uvicorn on a loopback port, over the built collection."""
    from ingestion_mcp.state import AppState

    into.update(await build(stack, target_chunks))
    state = AppState.create(stack.settings, stack.backend)
    try:
        async with serving(state) as base:
            yield base
    finally:
        await state.jobs.aclose()


@contextlib.contextmanager
def console(work_dir: Path, target_chunks: int) -> Iterator[tuple[str, dict[str, Any]]]:
    built: dict[str, Any] = {}
    portal: BlockingPortal
    with start_blocking_portal() as portal, contextlib.ExitStack() as stack:
        services = stack.enter_context(portal.wrap_async_context_manager(open_stack(work_dir)))
        base = stack.enter_context(portal.wrap_async_context_manager(served(services, target_chunks, built)))
        yield base, built


def pages(http: httpx.Client, base: str) -> dict[str, str]:
    """Every console page with real arguments: a document of the collection, a finished job."""
    listing = http.get(f"{base}/collections/{COLLECTION}").text
    marker = 'data-doc-id="'
    doc_id = listing.split(marker, 1)[1].split('"', 1)[0] if marker in listing else "missing"
    query = quote("section report of the harbour")
    return {
        "collections": "/",
        "collection": f"/collections/{COLLECTION}",
        "collection_filtered": f"/collections/{COLLECTION}?q=Report+42",
        "collection_page_5": f"/collections/{COLLECTION}?page=5",
        "document": f"/collections/{COLLECTION}/documents/{doc_id}",
        "jobs": "/jobs",
        "search_form": "/search",
        "search_compare": f"/search?q={query}&collection={COLLECTION}&mode=compare",
        "search_hybrid": f"/search?q={query}&collection={COLLECTION}&mode=hybrid",
        "ingest": "/ingest",
    }


def time_pages(base: str, repeat: int) -> dict[str, Any]:
    results: dict[str, Any] = {}
    with httpx.Client(base_url=base, timeout=60) as http:
        targets = pages(http, base)
        samples: dict[str, list[float]] = {name: [] for name in targets}
        statuses: dict[str, set[int]] = {name: set() for name in targets}
        for round_number in range(WARMUP + repeat):
            for name, path in targets.items():
                started = time.perf_counter()
                try:
                    status = http.get(path).status_code
                except httpx.TransportError:  # a dropped connection is a result too, not the end of the run
                    status = 0
                elapsed = (time.perf_counter() - started) * 1000
                statuses[name].add(status)
                if round_number >= WARMUP:
                    samples[name].append(elapsed)
        for name, path in targets.items():
            figures = summary(samples[name])
            results[name] = {"path": path, **figures, "status": sorted(statuses[name]),
                             "under_target": figures["p95_ms"] < TARGET_P95_MS}  # fmt: skip
    return results


def table(result: dict[str, Any]) -> str:
    lines = [f"{'page':<22}{'median ms':>11}{'p95 ms':>9}  status  path"]
    for name, page in result["pages"].items():
        mark = "" if page["under_target"] else "  (over target)"
        lines.append(f"{name:<22}{page['p50_ms']:>11.1f}{page['p95_ms']:>9.1f}  {page['status']!s:<6}  "
                     f"{page['path']}{mark}")  # fmt: skip
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="bench.console_latency", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--chunks", type=int, default=10_000, help="chunks in the collection (default 10000)")
    parser.add_argument("--repeat", type=int, default=30, help="timed GETs per page (after 3 warm-up ones)")
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "console_latency.json")
    parser.add_argument("--work-dir", type=Path, help="the embedded data folder (default: a fresh temp dir)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    import tempfile

    args = parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    with tempfile.TemporaryDirectory(prefix="console-bench-") as scratch:
        work_dir = args.work_dir or Path(scratch)
        print(f"building ~{args.chunks} chunks in {work_dir}", file=sys.stderr)
        with console(work_dir, args.chunks) as (base, built):
            timed = time_pages(base, args.repeat)
    result = {"benchmark": "console_latency", "target_p95_ms": TARGET_P95_MS, "collection": built,
              "repeat": args.repeat, "cpus": os.cpu_count(), "load_average_after": os.getloadavg(), "pages": timed,
              "all_under_target": all(page["under_target"] for page in timed.values())}  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_json(args.out, result)
    print(table(result))
    print(f"{built['chunks']} chunks, {built['documents']} documents; wrote {args.out}")


if __name__ == "__main__":
    main()
