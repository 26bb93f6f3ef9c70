"""Where Milvus Lite spends search time and memory at 100k+ chunks (issue 31, first step).

    python -m bench.experiments.scale_profile --rows 100000 --work WORK     # build (child), profile (child)
    python -m bench.experiments.scale_profile --rows 100000 --work WORK --skip-build   # reuse the database

The rows go through the gateway's own DocumentWriter and MilvusStore (our schema, our analysis, HNSW, a flush
after every write, a registry row per document), with SciFact abstracts as chunk text (one chunk per abstract,
the corpus replicated under new sources) and random unit vectors: embedding 100k chunks on these cores would
take hours and changes nothing in the store's cost. Each phase runs in its own process (one process per Lite
database; a fresh process measures a real reopen).

The profile phase times every call one hybrid search makes (dense ranking, BM25 ranking, registry lookup,
fields fetch; search.py), then the same calls inside Milvus Lite's engine (it is pure Python: faiss for the
dense index, Python dicts for BM25), with a cProfile of the engine's own thread, resident memory at each
step of opening the index, and a few settings (HNSW ef, output fields, candidates, a FLAT index, re-written
documents: tombstones in the query path). Results: bench/experiments/results/scale_profile.json.
"""

# ruff: noqa: B023 (every lambda here is timed at once, inside its own loop iteration)
from __future__ import annotations

import argparse
import cProfile
import functools
import io
import json
import pstats
import random
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import psutil

from ..results_io import write_json

ROOT = Path(__file__).resolve().parents[2]
SCIFACT = ROOT.parent / "shared" / "bench" / "scifact"
COLLECTION = "scale"
DIM = 384
QUERIES = 40
VARIANT_QUERIES = 15
REWRITE_MAX = 1000
WARMUP = 5
BATCH_DOCS = 1000
RESULTS = ROOT / "bench" / "experiments" / "results" / "scale_profile.json"


# -- data -----------------------------------------------------------------------------------------
def corpus() -> list[dict[str, str]]:
    with (SCIFACT / "corpus.jsonl").open() as fh:
        docs = [json.loads(line) for line in fh]
    return [{"id": d["_id"], "title": d["title"] or d["_id"], "text": d["text"]} for d in docs if d["text"].strip()]


def queries() -> list[str]:
    with (SCIFACT / "queries.jsonl").open() as fh:
        texts = [json.loads(line)["text"] for line in fh]
    random.Random(31).shuffle(texts)
    return texts[: QUERIES + WARMUP]


def unit_vectors(n: int, seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def rss() -> dict[str, float]:
    """Resident MB of this process, split into anonymous (heap: Python objects, faiss) and file-backed pages."""
    fields = {}
    for line in Path("/proc/self/smaps_rollup").read_text().splitlines()[1:]:
        key, value = line.split(":", 1)
        fields[key] = int(value.split()[0]) / 1024
    return {"rss_mb": round(fields["Rss"], 1), "anon_mb": round(fields["Anonymous"], 1),
            "file_mb": round(fields["Rss"] - fields["Anonymous"], 1)}  # fmt: skip


def disk(folder: Path) -> dict[str, Any]:
    by_kind: dict[str, int] = defaultdict(int)
    for path in folder.rglob("*"):
        if path.is_file():
            by_kind[path.suffix or path.name] += path.stat().st_size
    return {"total_mb": round(sum(by_kind.values()) / 1048576, 1),
            "by_suffix_mb": {k: round(v / 1048576, 1) for k, v in sorted(by_kind.items(), key=lambda kv: -kv[1])},
            "data_files": len(list(folder.rglob("data_*.parquet"))),
            "delta_files": len(list(folder.rglob("delta_*.parquet")))}  # fmt: skip


def stats(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"p50_ms": round(float(np.median(ordered)), 2), "p95_ms": round(p95, 2),
            "mean_ms": round(float(np.mean(ordered)), 2), "n": len(ordered)}  # fmt: skip


# -- build (a child process) ----------------------------------------------------------------------
def _requests(docs: list[dict[str, str]], replica: int) -> list[Any]:
    from ingestion_contracts.gateway import ChunkIn, UpsertDocumentRequest

    return [UpsertDocumentRequest(source=f"scale:{replica}:{d['id']}", title=d["title"][:1000],
                                  content_hash=f"{replica:08x}{int(d['id']):056x}",
                                  chunks=[ChunkIn(index=0, text=d["text"], token_count=len(d["text"]) // 5)])
            for d in docs]  # fmt: skip


def build(db: str, rows: int) -> dict[str, Any]:
    """``rows`` one-chunk documents through the gateway's DocumentWriter (registry, leases, flush per batch)."""
    from vector_gateway.milvus import MilvusStore
    from vector_gateway.upsert import DocumentWriter, plan

    from ..scale import Precomputed

    docs, store = corpus(), MilvusStore(db)
    store.create_collection(COLLECTION, DIM, "precomputed")
    started, written, replica, batches = time.perf_counter(), 0, 0, []
    while written < rows:
        for start in range(0, len(docs), BATCH_DOCS):
            part = docs[start : start + min(BATCH_DOCS, rows - written)]
            vectors = unit_vectors(len(part), seed=replica * 1000 + start).tolist()
            t0 = time.perf_counter()
            DocumentWriter(store, Precomputed(vectors, DIM), lambda *_: None).write(
                COLLECTION, plan(COLLECTION, _requests(part, replica))
            )
            batches.append(time.perf_counter() - t0)
            written += len(part)
            if written >= rows:
                break
        replica += 1
    seconds = time.perf_counter() - started
    out = {"rows": store.count(COLLECTION), "insert_s": round(seconds, 1), "rows_per_s": round(written / seconds),
           "batch_s_first_last": [round(batches[0], 2), round(batches[-1], 2)], **rss()}  # fmt: skip
    store.close()
    out["disk"] = disk(Path(db).parent)
    return out


def write_bulk(store: Any, rows: int) -> tuple[int, float]:
    """``rows`` chunk rows and their registry rows, as the DocumentWriter stores them, into a new COLLECTION of
    ``store`` (any DocumentIndex), 20,000 documents per batch and one flush each; (rows written, seconds)."""
    from vector_gateway.records import REGISTRY
    from vector_gateway.upsert import _chunk_rows, _registry_row, now_iso, plan
    from vector_gateway.versions import version_for

    docs = corpus()
    store.create_collection(COLLECTION, DIM, "precomputed")
    analysis = store.analysis_of(COLLECTION)
    started, written, replica = time.perf_counter(), 0, 0
    while written < rows:
        for start in range(0, len(docs), 20_000):
            part = docs[start : start + min(20_000, rows - written)]
            planned = plan(COLLECTION, _requests(part, replica))
            vectors = unit_vectors(len(part), seed=replica * 1000 + start).tolist()
            chunks, registry, stamp = [], [], now_iso()
            for doc, vector in zip(planned, vectors, strict=True):
                doc.version, doc.status = version_for(1), "indexed"
                chunks += _chunk_rows(doc, [vector], analysis)
                registry.append(_registry_row(COLLECTION, doc, stamp))
            store.insert(COLLECTION, chunks)
            store.registry_upsert(registry)
            store.flush(COLLECTION, REGISTRY)
            written += len(part)
            if written >= rows:
                break
        replica += 1
    return written, time.perf_counter() - started


def bulk_build(db: str, rows: int) -> dict[str, Any]:
    """The same chunk and registry rows as the DocumentWriter stores, inserted in large batches with one flush
    per 20k rows: no leases, no per-write registry lookup (what makes the writer slow down as the index grows)."""
    from vector_gateway.milvus import MilvusStore

    store = MilvusStore(db)
    written, seconds = write_bulk(store, rows)
    out = {"rows": store.count(COLLECTION), "insert_s": round(seconds, 1), "rows_per_s": round(written / seconds),
           "path": "bulk: gateway rows, store.insert + registry_upsert, flush per batch", **rss()}  # fmt: skip
    store.close()
    out["disk"] = disk(Path(db).parent)
    return out


# -- engine instrumentation -----------------------------------------------------------------------
class EngineClock:
    """Wall time spent in Milvus Lite's own functions (whatever thread runs them), and a cProfile of them."""

    TARGETS = (
        ("milvus_lite.engine.collection", "Collection", "search"),
        ("milvus_lite.engine.collection", "Collection", "query"),
        ("milvus_lite.engine.collection", "Collection", "_search_sparse"),
        ("milvus_lite.index.sparse_inverted", "SparseInvertedIndex", "search"),
        ("milvus_lite.index.faiss_hnsw", "FaissHnswIndex", "search"),
        ("milvus_lite.index.faiss_ivf_flat", "FaissIvfFlatIndex", "search"),
        ("milvus_lite.index.brute_force", "BruteForceIndex", "search"),
        ("milvus_lite.search.indexed_filter", None, "evaluate_segment_filter"),
        ("milvus_lite.storage.segment", "Segment", "row_to_dict"),
    )

    def __init__(self) -> None:
        self.totals: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self.profile: cProfile.Profile | None = None
        self._depth = 0

    def install(self) -> None:
        import importlib

        for module_name, cls_name, fn_name in self.TARGETS:
            module = importlib.import_module(module_name)
            owner = getattr(module, cls_name) if cls_name else module
            original = getattr(owner, fn_name)
            setattr(owner, fn_name, self._wrap(f"{cls_name or module_name.rsplit('.', 1)[1]}.{fn_name}", original))
        # executor_indexed is imported by name into collection.py: patch it there
        from milvus_lite.engine import collection  # type: ignore[import-untyped]  # milvus-lite ships no type hints

        collection.execute_search_with_index = self._wrap(
            "execute_search_with_index", collection.execute_search_with_index
        )

    def _wrap(self, label: str, original: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(original)
        def timed(*args: Any, **kwargs: Any) -> Any:
            profile = self.profile if self._depth == 0 else None
            self._depth += 1
            if profile is not None:
                profile.enable()
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.totals[label] += time.perf_counter() - started
                self.calls[label] += 1
                if profile is not None:
                    profile.disable()
                self._depth -= 1

        return timed

    def reset(self, profile: bool = False) -> None:
        self.totals.clear()
        self.calls.clear()
        self.profile = cProfile.Profile() if profile else None

    def per_call(self, per: int) -> dict[str, dict[str, float]]:
        return {k: {"ms_per_search": round(v * 1000 / per, 2), "calls": self.calls[k]} for k, v in self.totals.items()}

    def top(self, n: int = 25) -> list[str]:
        if self.profile is None:
            return []
        out = io.StringIO()
        pstats.Stats(self.profile, stream=out).sort_stats("tottime").print_stats(n)
        lines = [ln for ln in out.getvalue().splitlines() if ln.strip()]
        start = next(i for i, ln in enumerate(lines) if ln.lstrip().startswith("ncalls"))
        return [
            ln.replace(str(ROOT / ".venv/lib/python3.11/site-packages/"), "") for ln in lines[start : start + n + 1]
        ]


# -- profile (a child process) --------------------------------------------------------------------
def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    value = fn()
    return (time.perf_counter() - started) * 1000, value


def profile(db: str, variants: bool) -> dict[str, Any]:
    clock = EngineClock()
    clock.install()
    from vector_gateway import lexical
    from vector_gateway.milvus import MilvusStore
    from vector_gateway.search import CANDIDATE_FIELDS, Query, live_versions, search
    from vector_gateway.settings import GatewaySettings

    fusion = GatewaySettings().hybrid_fusion
    texts, vecs = queries(), unit_vectors(QUERIES + WARMUP, seed=99).tolist()
    out: dict[str, Any] = {"open": {"start": rss()}}
    store = MilvusStore(db)
    t, _ = _timed(lambda: store.client)
    out["open"]["connect_ms"], out["open"]["after_connect"] = round(t), rss()
    t, _ = _timed(lambda: store.ensure_loaded(COLLECTION))
    out["open"]["load_ms"], out["open"]["after_load"] = round(t), rss()
    analysis = store.analysis_of(COLLECTION)
    t, _ = _timed(lambda: store.search(COLLECTION, mode="semantic", vector=vecs[0], text="", limit=20, where=None,
                                       fields=CANDIDATE_FIELDS))  # fmt: skip
    out["open"]["first_dense_ms"], out["open"]["after_first_dense"] = round(t), rss()
    first = lexical.analyze_query(texts[0], analysis)
    t, _ = _timed(lambda: store.search(COLLECTION, mode="keyword", vector=None, text=first, limit=20, where=None,
                                       fields=CANDIDATE_FIELDS))  # fmt: skip
    out["open"]["first_bm25_ms"], out["open"]["after_first_bm25"] = round(t), rss()
    t, _ = _timed(lambda: store.count(COLLECTION))
    out["open"]["count_ms"], out["rows"] = round(t), store.count(COLLECTION)

    def stages(label: str, engine_profile: bool = False, **kw: Any) -> dict[str, Any]:
        """Every call of one hybrid search, one by one, then the whole search.py path, per query."""
        limit, fields, ef = kw.get("limit", 20), kw.get("fields", CANDIDATE_FIELDS), kw.get("ef")
        n = kw.get("queries", QUERIES)
        samples: dict[str, list[float]] = defaultdict(list)
        clock.reset()
        for i, (text, vec) in enumerate(zip(texts[: n + WARMUP], vecs[: n + WARMUP], strict=True)):
            if i == WARMUP:
                clock.reset(profile=engine_profile)
            analysed = lexical.analyze_query(text, analysis) or text
            if ef is None:
                dense = lambda: store.search(COLLECTION, mode="semantic", vector=vec, text="", limit=limit,  # noqa: E731
                                             where=None, fields=fields)  # fmt: skip
            else:
                dense = lambda: store.client.search(  # noqa: E731
                    store_name,
                    data=[vec],
                    anns_field="vector",
                    search_params={"metric_type": "COSINE", "params": {"ef": ef}},
                    limit=limit,
                    output_fields=fields,
                )
            t_dense, hits = _timed(dense)
            t_bm25, _ = _timed(lambda: store.search(COLLECTION, mode="keyword", vector=None, text=analysed,
                                                          limit=limit, where=None, fields=fields))  # fmt: skip
            top = hits[:10] if ef is None else [(0, {**h["entity"], "chunk_id": h["chunk_id"]}) for h in hits[0][:10]]
            t_registry, _ = _timed(lambda: live_versions(store, COLLECTION, {e["doc_id"] for _, e in top}))
            t_fetch, _ = _timed(lambda: store.fetch(COLLECTION, [e["chunk_id"] for _, e in top]))
            before, before_calls = dict(clock.totals), dict(clock.calls)
            t_total, found = _timed(lambda: search(store, [COLLECTION], Query("hybrid", vec, text, 10, None),
                                                   fusion=fusion, candidates=limit))  # fmt: skip
            for k in list(clock.totals):  # keep the engine clock to the stage calls only
                clock.totals[k], clock.calls[k] = before.get(k, 0.0), before_calls.get(k, 0)
            if i >= WARMUP:
                for name, value in (("dense", t_dense), ("bm25", t_bm25), ("registry", t_registry),
                                    ("fetch", t_fetch), ("hybrid_search_py", t_total)):  # fmt: skip
                    samples[name].append(value)
                samples["hits"].append(len(found))
        result: dict[str, Any] = {name: stats(v) for name, v in samples.items() if name != "hits"}
        result["mean_hits"] = round(float(np.mean(samples["hits"])), 1)
        result["engine_ms_per_query"] = clock.per_call(n)
        if engine_profile:
            result["engine_cprofile_top"] = clock.top()
        p50s = ", ".join(f"{k} {v['p50_ms']}" for k, v in result.items() if isinstance(v, dict) and "p50_ms" in v)
        print(f"[{label}] {p50s}", file=sys.stderr, flush=True)
        return result

    from vector_gateway.milvus.store import milvus_name

    store_name = milvus_name(COLLECTION)
    out["baseline"] = stages("baseline")
    # cProfile slows Python-heavy code: its own pass, read for shares, not for milliseconds
    out["engine_cprofile"] = stages("cprofile", engine_profile=True)
    out["memory_after_queries"] = rss()
    side = Path(db).parent / f"profile-{int(time.time())}.json"  # kept even when a later phase is cut short
    side.write_text(json.dumps(out))
    if variants:
        out["variants"] = run_variants(store, store_name, stages)
        side.write_text(json.dumps(out))
    store.close()
    return out


def run_variants(store: Any, name: str, stages: Callable[..., dict[str, Any]]) -> dict[str, Any]:
    from vector_gateway.records import CHUNK_OUTPUT_FIELDS

    found: dict[str, Any] = {}
    # Fewer queries per variant: at 100k rows on 2 shared cores a pass takes minutes.
    found["hnsw_ef_16"] = stages("ef 16", ef=16, queries=VARIANT_QUERIES)
    found["limit_100"] = stages("limit 100", limit=100, queries=VARIANT_QUERIES)
    found["all_output_fields"] = stages("all fields", fields=CHUNK_OUTPUT_FIELDS, queries=VARIANT_QUERIES)
    client = store.client
    flat: dict[str, Any] = {}
    for index_type, params in (("FLAT", flat),):
        client.release_collection(name)
        client.drop_index(name, "vector")
        prepared = client.prepare_index_params()
        prepared.add_index("vector", index_type=index_type, metric_type="COSINE", params=params)
        t, _ = _timed(lambda: client.create_index(name, prepared))
        client.load_collection(name)
        store.dense_index = index_type
        found[f"index_{index_type}"] = {"create_index_ms": round(t), **rss(),
                                        **stages(f"index {index_type}", queries=VARIANT_QUERIES)}  # fmt: skip
    return found


def rewrite(db: str, fraction: float) -> dict[str, Any]:
    """Re-write ``fraction`` of one replica (at most REWRITE_MAX documents) with new content: their old rows
    become tombstones until compaction."""
    from vector_gateway.milvus import MilvusStore
    from vector_gateway.upsert import DocumentWriter, plan

    from ..scale import Precomputed

    docs, store = corpus(), MilvusStore(db)
    part = docs[: min(REWRITE_MAX, int(len(docs) * fraction))]
    changed = [{**d, "text": d["text"] + " (revised)"} for d in part]
    writer = DocumentWriter(store, Precomputed(unit_vectors(len(part), 7).tolist(), DIM), lambda *_: None)
    t, _ = _timed(lambda: writer.write(COLLECTION, plan(COLLECTION, _requests(changed, 0))))
    out: dict[str, Any] = {"rewritten_docs": len(part), "rewrite_ms": round(t), "rows": store.count(COLLECTION)}
    store.close()
    out["disk"] = disk(Path(db).parent)
    return out


# -- driver ----------------------------------------------------------------------------------------
def child(*args: str, module: str = "bench.experiments.scale_profile") -> dict[str, Any]:
    """Run one step in a fresh process (its memory figures are its own) and read its last JSON line."""
    done = subprocess.run([sys.executable, "-m", module, "--child", *args], cwd=ROOT,
                          capture_output=True, text=True, check=False)  # fmt: skip
    sys.stderr.write(done.stderr[-3000:])
    if done.returncode != 0:
        raise RuntimeError(f"child {args} failed")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--work", type=Path, default=Path("bench/results/tmp/scale_profile"))
    parser.add_argument("--skip-build", action="store_true")
    parser.add_argument("--no-variants", action="store_true")
    parser.add_argument("--bulk", action="store_true", help="insert the gateway's rows in bulk (not the writer)")
    parser.add_argument("--rewrite", type=float, default=0.0, help="then re-write this fraction of one replica")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, db = args.child[0], args.child[1]
        value = {"build": lambda: build(db, int(args.child[2])), "bulk": lambda: bulk_build(db, int(args.child[2])),
                 "profile": lambda: profile(db, args.child[2] == "1"),
                 "rewrite": lambda: rewrite(db, float(args.child[2]))}[kind]()  # fmt: skip
        print(json.dumps(value))
        return
    db = str(args.work / str(args.rows) / "milvus.db")
    Path(db).parent.mkdir(parents=True, exist_ok=True)
    results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    entry: dict[str, Any] = results.get(str(args.rows), {}) if args.skip_build else {}
    entry["machine"] = {"cores": psutil.cpu_count(), "load_avg_start": [round(x, 2) for x in psutil.getloadavg()],
                        "when_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime())}  # fmt: skip
    if not args.skip_build:
        entry["build"] = child("bulk" if args.bulk else "build", db, str(args.rows))
    entry["profile"] = child("profile", db, "0" if args.no_variants else "1")
    if args.rewrite:
        entry["rewrite"] = child("rewrite", db, str(args.rewrite))
        entry["profile_after_rewrite"] = child("profile", db, "0")
    results[str(args.rows)] = entry
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    write_json(RESULTS, results, indent=1)
    print(json.dumps(entry, indent=1))


if __name__ == "__main__":
    main()
