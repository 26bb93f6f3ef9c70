"""A candidate second engine, LanceDB, on the same rows as bench.experiments.scale_profile (issue 31; a bench only).

LanceDB is not a product dependency: run this from a throwaway environment (the registry mirror has it):

    python3 -m venv ../lancevenv && ../lancevenv/bin/pip install lancedb numpy psutil
    ../lancevenv/bin/python -m bench.experiments.scale_lance --rows 100000 --work bench/results/tmp/scale_lance

Same text (SciFact abstracts, one chunk each, the corpus replicated), same random unit vectors, same queries
as bench.experiments.scale_profile. Measured: insert rate, index builds (Lance's own BM25 full-text index with English
stemming and stop words; IVF_HNSW_SQ for the vectors), then in a fresh process: open time, dense top-20,
full-text top-20, the fetch of ten hits by id, resident memory and disk. The gateway would fuse the two
rankings itself, as it does on Milvus (search.py). Results: bench/experiments/results/scale_lance.json.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any, cast

from ..results_io import write_json
from .scale_profile import QUERIES, WARMUP, child, corpus, disk, queries, rss, stats, unit_vectors

ROOT = Path(__file__).resolve().parents[2]
LANCE = "bench.experiments.scale_lance"
RESULTS = ROOT / "bench" / "experiments" / "results" / "scale_lance.json"
TABLE = "chunks"
BATCH = 10_000
LIMIT = 20


def build(folder: Path, rows: int, vector_index: bool) -> dict[str, Any]:
    import lancedb
    import pyarrow as pa

    shutil.rmtree(folder, ignore_errors=True)
    docs, db = corpus(), lancedb.connect(str(folder))
    table, written, replica, started = None, 0, 0, time.perf_counter()
    while written < rows:
        for start in range(0, len(docs), BATCH):
            part = docs[start : start + min(BATCH, rows - written)]
            vectors = unit_vectors(len(part), seed=replica * 1000 + start)
            batch = pa.table({
                "chunk_id": [f"{replica}:{d['id']}:0" for d in part],
                "doc_id": [f"{replica}:{d['id']}" for d in part],
                "version": ["v1"] * len(part),
                "title": [d["title"] for d in part],
                "text": [d["text"] for d in part],
                "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), vectors.shape[1]),
            })  # fmt: skip
            if table is None:
                table = db.create_table(TABLE, batch)
            else:
                table.add(batch)
            written += len(part)
            if written >= rows:
                break
        replica += 1
    assert table is not None
    out: dict[str, Any] = {"rows": table.count_rows(), "insert_s": round(time.perf_counter() - started, 1)}
    out["rows_per_s"] = round(rows / out["insert_s"])
    t0 = time.perf_counter()
    table.optimize()  # one fragment set, as a long-running writer would keep it
    out["optimize_s"] = round(time.perf_counter() - t0, 1)
    t0 = time.perf_counter()
    table.create_fts_index("text", language="English", stem=True, remove_stop_words=True, lower_case=True)
    out["fts_index_s"] = round(time.perf_counter() - t0, 1)
    t0 = time.perf_counter()
    table.create_scalar_index("chunk_id")
    out["id_index_s"] = round(time.perf_counter() - t0, 1)
    if vector_index:
        t0 = time.perf_counter()
        table.create_index(metric="cosine", index_type="IVF_HNSW_SQ", num_partitions=max(1, rows // 50_000))
        out["vector_index_s"] = round(time.perf_counter() - t0, 1)
    out["build_rss"] = rss()
    out["disk"] = disk(folder)
    return out


def measure(folder: Path) -> dict[str, Any]:
    import lancedb

    out: dict[str, Any] = {"start": rss()}
    t0 = time.perf_counter()
    table = lancedb.connect(str(folder)).open_table(TABLE)
    out["open_ms"] = round((time.perf_counter() - t0) * 1000)
    texts, vecs = queries(), unit_vectors(QUERIES + WARMUP, seed=99)
    samples: dict[str, list[float]] = {"dense": [], "fts": [], "fetch": [], "dense+fts+fetch": []}
    for i, (text, vec) in enumerate(zip(texts, vecs, strict=True)):
        t0 = time.perf_counter()
        dense = cast(Any, table.search(vec, vector_column_name="vector")).distance_type("cosine").limit(LIMIT)
        dense_hits = dense.select(["chunk_id", "doc_id", "version"]).to_list()
        t1 = time.perf_counter()
        fts = table.search(text, query_type="fts", fts_columns="text").limit(LIMIT)
        fts_hits = fts.select(["chunk_id", "doc_id", "version"]).to_list()
        t2 = time.perf_counter()
        ids = [h["chunk_id"] for h in (dense_hits[:5] + fts_hits[:5])]
        quoted = ", ".join("'" + x.replace("'", "''") + "'" for x in ids)
        table.search().where(f"chunk_id IN ({quoted})").select(["chunk_id", "text", "title"]).limit(10).to_list()
        t3 = time.perf_counter()
        if i == 0:
            out["first_query_ms"] = round((t3 - t0) * 1000)
            out["after_first_query"] = rss()
        if i >= WARMUP:
            for name, a, b in (("dense", t0, t1), ("fts", t1, t2), ("fetch", t2, t3), ("dense+fts+fetch", t0, t3)):
                samples[name].append((b - a) * 1000)
            if i == WARMUP:
                out["sample_hits"] = {"dense": len(dense_hits), "fts": len(fts_hits)}
    out.update({name: stats(v) for name, v in samples.items()})
    out["after_queries"] = rss()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--work", type=Path, default=Path("bench/results/tmp/scale_lance"))
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, folder = args.child[0], Path(args.child[1])
        value = build(folder, int(args.child[2]), args.child[3] == "1") if kind == "build" else measure(folder)
        print(json.dumps(value))
        return
    import lancedb
    import psutil

    results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    entry: dict[str, Any] = {"lancedb": lancedb.__version__, "cores": psutil.cpu_count(),
                             "load_avg_start": [round(x, 2) for x in psutil.getloadavg()],
                             "when_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime())}  # fmt: skip
    for label, vector_index in (("flat", False), ("ivf_hnsw_sq", True)):
        folder = args.work / f"{args.rows}-{label}"
        built = child("build", str(folder), str(args.rows), "1" if vector_index else "0", module=LANCE)
        entry[label] = {"build": built}
        entry[label]["search"] = child("measure", str(folder), module=LANCE)
        print(label, json.dumps(entry[label]), file=sys.stderr, flush=True)
    results[str(args.rows)] = entry
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    write_json(RESULTS, results, indent=1)
    print(json.dumps(entry, indent=1))


if __name__ == "__main__":
    main()
