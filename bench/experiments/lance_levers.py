"""The dense ranking of a million real-structured chunks on Lance: each index kind and search lever, its time and
its recall@10 against an exact scan (issue 39, docs/scale.md "Levers at 1M").

    python -m bench.experiments.lance_levers --lance bench/results/tmp/scale/lance/1000000/lance --work WORK --build
    python -m bench.quiet -- python -m bench.experiments.lance_levers --lance ... --work WORK   # the timed pass

The table is bench.scale's (``--corpus mixed``): SciFact's and dbpedia-5k's chunks with their real embeddings,
replicated with N(0, 0.01) noise up to a million. The queries are the two sets' 340 test queries embedded by the
gateway (bench.scale_corpus.query_vectors). The truth is an exact scan in numpy over every vector of the table.

``--build`` copies the table's ranking columns (chunk_id, doc_id, version, vector: what a hybrid search's dense
ranking reads) once per index kind into ``--work`` and builds that index (minutes each: beside other work is
fine); the timed pass then opens each and runs every query at every lever after a warm-up (run it on a quiet
machine: python -m bench.quiet). The source table keeps the index its upkeep built (IVF_FLAT, the engine's
until this bench).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from ..results_io import write_json
from ..scale_corpus import SETS, query_vectors
from .scale_profile import stats

OUT = Path(__file__).resolve().parent / "results" / "lance_levers.json"
TABLE = "scale"  # bench.scale's collection (its Lance table has the user's name)
DEEP = 20  # what a hybrid search asks each ranking for (fusion_candidates)
TOP = 10
COLUMNS = ["chunk_id", "doc_id", "version", "vector"]

# Index kinds: name -> (lancedb index class, its arguments); partitions of ~1,000 rows as the engine's IVF_FLAT,
# fewer for the HNSW kinds (each partition holds a graph; Lance's own default is ~sqrt(rows)).
KINDS: dict[str, tuple[str, dict[str, Any]]] = {
    "ivf_flat_1000": ("IvfFlat", {"num_partitions": 1000}),
    "ivf_flat_500": ("IvfFlat", {"num_partitions": 500}),
    "ivf_flat_250": ("IvfFlat", {"num_partitions": 250}),
    "ivf_hnsw_sq_256": ("IvfHnswSq", {"num_partitions": 256}),
    "ivf_hnsw_sq_64": ("IvfHnswSq", {"num_partitions": 64}),
    "ivf_pq_1000": ("IvfPq", {"num_partitions": 1000, "num_sub_vectors": 48}),
    "ivf_sq_1000": ("IvfSq", {"num_partitions": 1000}),
}
# Levers per kind: (label, nprobes, ef, refine_factor)
LEVERS: dict[str, list[tuple[str, int, int | None, int | None]]] = {
    "ivf_flat_1000": [(f"probes {p}", p, None, None) for p in (8, 16, 24, 32, 40, 48, 64)],
    "ivf_flat_500": [(f"probes {p}", p, None, None) for p in (8, 12, 16, 20, 24, 32)],
    "ivf_flat_250": [(f"probes {p}", p, None, None) for p in (4, 6, 8, 10, 12, 16)],
    "ivf_hnsw_sq_256": [(f"probes {p}, ef {e}", p, e, None) for p in (4, 8, 16) for e in (40, 100)]
    + [("probes 8, ef 100, refine 2", 8, 100, 2)],
    "ivf_hnsw_sq_64": [(f"probes {p}, ef {e}", p, e, None) for p in (2, 4, 8) for e in (40, 100)]
    + [("probes 4, ef 100, refine 2", 4, 100, 2)],
    "ivf_pq_1000": [(f"probes {p}, refine {r}", p, None, r) for p in (8, 16, 24) for r in (2, 5, 10)],
    "ivf_sq_1000": [(f"probes {p}, refine {r}", p, None, r) for p in (16, 24, 32, 48, 64, 80, 96) for r in (None, 2)],
    # the table itself, with the index the engine's upkeep made (bench.scale --phase reindex: IVF_SQ on all its rows)
    "store": [(f"probes {p}, refine {r}", p, None, r) for p in (24, 32, 48, 64, 96) for r in (None, 2)],
}
# The timed pass (on a quiet machine): the finalists only; every lever's recall is in the exploratory runs.
FINALISTS: dict[str, list[str]] = {
    "ivf_flat_1000": ["probes 24", "probes 32", "probes 40", "probes 48"],
    "ivf_sq_1000": [f"probes {p}, refine {r}" for p in (24, 48, 64, 80, 96) for r in (None, 2)],
    "store": [f"probes {p}, refine {r}" for p in (24, 32, 48, 64, 96) for r in (None, 2)],
}


def queries() -> tuple[list[str], np.ndarray]:
    texts, vectors = [], []
    for name in SETS:
        got = query_vectors(name)
        texts += [f"{name}: {t}" for t in got[0]]
        vectors.append(got[1])
    return texts, np.concatenate(vectors)


def source_table(folder: Path) -> Any:
    import lancedb

    return lancedb.connect(folder).open_table(TABLE)


def truth(table: Any, vectors: np.ndarray, cache: Path) -> np.ndarray:
    """The exact top-10 chunk ids per query (cosine: every vector is unit length), by numpy over every row."""
    if cache.is_file():
        with np.load(cache) as stored:
            if stored["queries"].shape == vectors.shape and np.allclose(stored["queries"], vectors):
                return stored["ids"]
    best_scores = np.full((len(vectors), TOP), -np.inf, dtype=np.float32)
    best_ids = np.empty((len(vectors), TOP), dtype=object)
    for batch in table.search().select(["chunk_id", "vector"]).limit(None).to_batches(100_000):
        ids = np.asarray(batch.column("chunk_id").to_pylist(), dtype=object)
        matrix = np.asarray(batch.column("vector").values.to_numpy(), dtype=np.float32).reshape(len(ids), -1)
        scores = vectors @ matrix.T
        merged_scores = np.concatenate([best_scores, scores], axis=1)
        merged_ids = np.concatenate([best_ids, np.broadcast_to(ids, scores.shape)], axis=1)
        order = np.argsort(-merged_scores, axis=1, kind="stable")[:, :TOP]
        best_scores = np.take_along_axis(merged_scores, order, axis=1)
        best_ids = np.take_along_axis(merged_ids, order, axis=1)
    np.savez(cache, ids=best_ids.astype(str), queries=vectors)
    return best_ids.astype(str)


def slim_copy(source: Any, target: Path, kind: str) -> float:
    """The ranking columns into a table of their own at ``target``, with the index ``kind``; seconds to index."""
    import lancedb
    import lancedb.index as indexes

    db = lancedb.connect(target)
    reader = source.search().select(COLUMNS).limit(None).to_batches(50_000)
    table = db.create_table("ranking", data=reader, mode="overwrite")
    name, options = KINDS[kind]
    started = time.perf_counter()
    table.create_index("vector", config=getattr(indexes, name)(distance_type="cosine", **options))
    return round(time.perf_counter() - started, 1)


def ranking(table: Any, vectors: np.ndarray, lever: tuple[str, int, int | None, int | None] | None
            ) -> tuple[list[float], list[list[str]]]:  # fmt: skip
    """ms of each dense ranking (DEEP rows, the engine's candidate fields) and its top-10 ids."""
    times, found = [], []
    for vector in vectors:
        query = table.search(vector.tolist(), vector_column_name="vector").distance_type("cosine")
        if lever is None:
            query = query.bypass_vector_index()
        else:
            _, probes, ef, refine = lever
            query = query.nprobes(probes)
            if ef:
                query = query.ef(ef)
            if refine:
                query = query.refine_factor(refine)
        started = time.perf_counter()
        rows = query.select(["chunk_id", "doc_id", "version", "_distance"]).limit(DEEP).to_arrow()
        times.append((time.perf_counter() - started) * 1000)
        found.append(rows.column("chunk_id").to_pylist()[:TOP])
    return times, found


def recall(found: list[list[str]], exact: np.ndarray) -> dict[str, float]:
    each = [len(set(a) & set(b)) / TOP for a, b in zip(found, exact.tolist(), strict=True)]
    return {"recall@10": round(float(np.mean(each)), 4), "worst_query": round(float(np.min(each)), 2)}


def main() -> None:
    import lancedb

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lance", type=Path, required=True, help="the Lance folder bench.scale built (1M chunks)")
    parser.add_argument("--work", type=Path, required=True, help="where each index kind's copy goes")
    parser.add_argument("--build", action="store_true", help="make the copies and their indexes (no timing)")
    parser.add_argument("--kinds", default=",".join(LEVERS), help="comma-separated, of " + ", ".join(LEVERS))
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--finalists", action="store_true", help="time the finalists' levers only (FINALISTS)")
    args = parser.parse_args()
    kinds = [k for k in args.kinds.split(",") if k]
    source = source_table(args.lance)
    texts, vectors = queries()
    args.work.mkdir(parents=True, exist_ok=True)
    exact = truth(source, vectors, args.work / "truth.npz")
    out: dict[str, Any] = json.loads(args.out.read_text()) if args.out.is_file() else {}
    out.update({"rows": source.count_rows(), "queries": len(texts), "deep": DEEP, "source": str(args.lance)})
    if args.build:
        for kind in (k for k in kinds if k != "store"):
            seconds = slim_copy(source, args.work / kind, kind)
            out.setdefault("kinds", {}).setdefault(kind, {})["build_s"] = seconds
            print(kind, "indexed in", seconds, "s", flush=True)
        write_json(args.out, out, indent=1)
        return
    for kind in kinds:
        table = source if kind == "store" else lancedb.connect(args.work / kind).open_table("ranking")
        entry = out.setdefault("kinds", {}).setdefault(kind, {})
        entry["index"] = ", ".join(i.name for i in source.list_indices() if i.columns == ["vector"]) if (
            kind == "store") else KINDS[kind][0] + " " + json.dumps(KINDS[kind][1])  # fmt: skip
        for lever in (x for x in LEVERS[kind] if not args.finalists or x[0] in FINALISTS.get(kind, [])):
            ranking(table, vectors[:20], lever)  # warm the index pages this lever reads
            times, found = ranking(table, vectors, lever)
            timed = "on a quiet machine" if args.finalists else "as run (exploratory: the ms are not figures)"
            entry[lever[0]] = {**stats(times), **recall(found, exact), "timed": timed}
            print(kind, lever[0], entry[lever[0]], flush=True)
        write_json(args.out, out, indent=1)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
