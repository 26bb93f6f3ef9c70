"""What an ingest leaves in Lance's caches, and what the store's quiet-time release gives back (issue 49, point 2).

The gateway's own LanceStore in a fresh folder, written as a folder sync writes it: ``--commits`` commits of
``--rows`` chunk rows each (384-dimension vectors, 150-word texts for BM25), the upkeep indexing and compacting in
the background, a keyword and a dense search after every tenth commit, then ``--searches`` more searches; all of it
work for the process's idle trimmer, as a sync job's is. After each 50 commits and after the searches: the caches'
size (lancedb.Session.size_bytes) and the process's resident memory, after Python's collection and glibc's trim;
then the same after ``release_caches()`` (what the idle trimmer runs once the server is quiet) and after a search
that connects again. Each commit and each optimisation adds its version's manifest, fragments and rebuilt BM25
index to the caches, and nothing evicts the superseded ones before the caches' bound (1,024 + 256 MB by default).
Results: bench/experiments/results/lance_caches.json.

    python -m bench.experiments.lance_caches [--commits 300] [--rows 40] [--cache-mb 1024]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from servicekit import configure_allocators, idle_trimmer
from servicekit.memory import collect_and_trim

from ..embedder_start import memory_mb
from ..results_io import write_json

OUT = Path("bench/experiments/results/lance_caches.json")
WORDS = [f"w{i}" for i in range(20_000)]
COLLECTION = "notes"


def resident_mb() -> float:
    collect_and_trim()
    return memory_mb("self", ("VmRSS",))["VmRSS"]


def rows(rng: np.random.Generator, start: int, count: int) -> list[dict[str, Any]]:
    vectors = rng.standard_normal((count, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return [{"chunk_id": f"c{i}", "doc_id": f"d{i // 3}", "text": "t", "search_text": " ".join(rng.choice(WORDS, 150)),
             "vector": vectors[i - start].tolist(), "tags": [], "metadata": {}, "heading_path": []}
            for i in range(start, start + count)]  # fmt: skip


def search(store: Any, rng: np.random.Generator) -> None:
    store.search(COLLECTION, mode="keyword", vector=None, text=" ".join(rng.choice(WORDS, 3)), limit=10, where=None)
    vector = rng.standard_normal(384).astype(np.float32)
    store.search(COLLECTION, mode="semantic", vector=(vector / np.linalg.norm(vector)).tolist(), text="", limit=10,
                 where=None)  # fmt: skip


def reading(store: Any, label: str, began: float) -> dict[str, Any]:
    row = {"at": label, "seconds": round(time.perf_counter() - began, 1),
           "caches_mb": round(store.cache_bytes / 2**20, 1), "resident_mb": resident_mb()}  # fmt: skip
    print(json.dumps(row), flush=True)
    return row


def run(args: argparse.Namespace) -> dict[str, Any]:
    configure_allocators()  # as the server does first thing
    from vector_gateway.lance import LanceStore

    rng = np.random.default_rng(0)
    readings: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="lance-caches-") as scratch:
        store = LanceStore(str(Path(scratch) / "lance"), cache_mb=args.cache_mb)
        store.create_collection(COLLECTION, 384, "bench")
        began = time.perf_counter()
        readings.append(reading(store, "empty", began))
        with idle_trimmer().busy():  # work, as a sync job's is: the idle trimmer waits for its end
            for commit in range(args.commits):
                store.upsert(COLLECTION, rows(rng, commit * args.rows, args.rows))
                store.flush(COLLECTION)  # what each write of the gateway does: the upkeep when due
                if commit % 10 == 9:
                    search(store, rng)
                if commit % 50 == 49:
                    readings.append(reading(store, f"{commit + 1} commits", began))
            for _ in range(args.searches):
                search(store, rng)
        readings.append(reading(store, f"after {args.searches} searches", began))
        released = store.release_caches()
        readings.append(reading(store, "released", began))
        search(store, rng)
        readings.append(reading(store, "one search later", began))
        count = store.count(COLLECTION)
        store.close()
    return {"experiment": "lance_caches", "commits": args.commits, "rows_per_commit": args.rows, "rows": count,
            "cache_mb": args.cache_mb, "released": released, "readings": readings}  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=300)
    parser.add_argument("--rows", type=int, default=40, help="chunk rows a commit (a folder sync's batch: ~40)")
    parser.add_argument("--searches", type=int, default=100)
    parser.add_argument("--cache-mb", type=int, default=1024, help="VECTOR_GATEWAY_LANCE_CACHE_MB")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    report = run(args)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_json(args.out, report, indent=1)


if __name__ == "__main__":
    main()
