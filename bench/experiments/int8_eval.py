"""bench.experiments.int8's full evaluation (nDCG@10 dense and hybrid on both corpora) and its report (JSON + Markdown
table)."""

from __future__ import annotations

import json
import platform
import time
from pathlib import Path
from typing import Any

import numpy as np
from vector_gateway.fusion import Fusion

from ..data import Dataset
from ..metrics import evaluate, fold_to_documents
from ..rankings import TMP

# What a scheme must reach to be kept (bench.experiments.int8 screens and reports against it), and the ranking depth.
# Issue 39: a scheme within 0.005 nDCG@10 of fp32 on both sets becomes the default where it is >= 1.3x faster.
BAR = {"ratio": 1.3, "ndcg_loss": 0.005}
DEPTH = 100


def passage(doc: Any) -> str:
    return f"{doc.title}\n{doc.text}" if doc.title else doc.text


def vectors(engine: Any, texts: list[str]) -> np.ndarray:
    return np.asarray(engine.embed_documents(texts), dtype=np.float32)


def cosines(a: np.ndarray, b: np.ndarray) -> dict[str, float]:
    c = np.sum(a * b, axis=1)
    return {"mean": round(float(c.mean()), 5), "min": round(float(c.min()), 5)}


def embedded(name: str, key: str, engine: Any, data: Dataset, work: Path) -> tuple[np.ndarray, np.ndarray]:
    """(document vectors, query vectors) of ``data``, cached under ``work`` by scheme and model digest."""
    path = work / "vectors" / f"{name}-{key}-{data.name}-{len(data.docs)}d{len(data.queries)}q.npz"
    if path.is_file():
        cached = np.load(path)
        return cached["docs"], cached["queries"]
    start = time.perf_counter()
    docs = vectors(engine, [passage(d) for d in data.docs])
    queries = np.asarray([engine.embed_query(q) for q in data.queries.values()], dtype=np.float32)
    print(f"  {name} {data.name}: {len(docs)} documents in {time.perf_counter() - start:.0f} s", flush=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, docs=docs, queries=queries)
    return docs, queries


def bm25_lists(data: Dataset) -> dict[str, list[tuple[str, float]]]:
    """The kept BM25 chunk lists (bench.rankings), folded to documents: each document once, at its best chunk."""
    path = TMP / f"lists-{data.name}.json"
    if not path.is_file():
        raise SystemExit(f"{path} is missing: run `python -m bench.rankings --dataset {data.name}` first")
    out = {}
    present = {d.doc_id for d in data.docs}  # a subset (--queries) keeps its own documents only
    for qid, lists in json.loads(path.read_text()).items():
        best: dict[str, float] = {}
        for doc, _, score in lists["bm25"]:
            if doc in present:
                best.setdefault(doc, score)
        out[qid] = list(best.items())
    return out


def retrieval(docs: np.ndarray, queries: np.ndarray, data: Dataset, bm25: dict[str, list]) -> dict[str, Any]:
    ids = [d.doc_id for d in data.docs]
    scores = queries @ docs.T  # exact cosine search: every vector is L2-normalised
    top = np.argsort(-scores, axis=1, kind="stable")[:, :DEPTH]
    dense_runs, hybrid_runs = {}, {}
    for row, (qid, query) in enumerate(data.queries.items()):
        dense = [(ids[i], float(scores[row, i])) for i in top[row]]
        dense_runs[qid] = [doc for doc, _ in dense]
        fused = Fusion().for_query(query).fuse(dense, bm25.get(qid, []))
        hybrid_runs[qid] = fold_to_documents(doc for doc, _ in fused)
    dense_scores, hybrid_scores = evaluate(dense_runs, data.qrels), evaluate(hybrid_runs, data.qrels)
    return {"dense": dense_scores, "hybrid": hybrid_scores, "top10": top[:, :10]}


def full_evaluation(engines: dict[str, Any], keys: dict[str, str], data: dict[str, Dataset], work: Path) -> dict:
    """nDCG@10 (dense, hybrid) per engine and dataset, cosine to fp32 over the whole corpus, top-10 overlap."""
    out: dict[str, dict[str, Any]] = {name: {} for name in engines}
    for dataset in data.values():
        bm25 = bm25_lists(dataset)
        base: tuple[np.ndarray, np.ndarray] | None = None
        base_top: np.ndarray | None = None
        for name, engine in engines.items():
            docs, queries = embedded(name, keys[name], engine, dataset, work)
            got = retrieval(docs, queries, dataset, bm25)
            top = got.pop("top10")
            if base is None:
                base, base_top = (docs, queries), top
            assert base_top is not None
            overlap = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(top, base_top, strict=True)])
            out[name][dataset.name] = {**got, "cosine_docs": cosines(docs, base[0]),
                                       "cosine_queries": cosines(queries, base[1]),
                                       "top10_overlap": round(float(overlap), 4)}  # fmt: skip
            print(f"  {name} {dataset.name}: dense {got['dense']['ndcg@10']} hybrid {got['hybrid']['ndcg@10']}")
    return out


def verdict(name: str, screen: dict[str, Any], full: dict[str, Any]) -> str:
    if "error" in screen[name]:
        return "could not be made"
    if name == "fp32":
        return "reference"
    if "ratio" not in screen[name]:
        return "not timed"
    if name not in full or "fp32" not in full:
        slow = f"too slow (< {BAR['ratio']}x); " if screen[name]["ratio"] < BAR["ratio"] else ""
        return f"{slow}not evaluated in full"
    modes = ("dense", "hybrid")
    losses = [full["fp32"][d][m]["ndcg@10"] - full[name][d][m]["ndcg@10"] for d in full[name] for m in modes]
    worst = max(losses)
    quality = f"quality holds (worst nDCG@10 loss {worst:+.4f})" if worst <= BAR["ndcg_loss"] else (
        f"quality fails (nDCG@10 loss {worst:.4f} > {BAR['ndcg_loss']})")  # fmt: skip
    speed = "fast enough" if screen[name]["ratio"] >= BAR["ratio"] else f"too slow (< {BAR['ratio']}x)"
    return f"{quality}; {speed}"


def table(screen: dict[str, Any], full: dict[str, Any]) -> str:
    head = ("| scheme | seq/s | x fp32 | cosine mean / min (screen) | SciFact dense / hybrid "
            "| dbpedia-5k dense / hybrid | top-10 overlap (SciFact / dbpedia) | verdict |")  # fmt: skip
    lines = [head, "|---|---|---|---|---|---|---|---|"]
    for name, row in screen.items():
        if "error" in row:
            lines.append(f"| {name} | - | - | - | - | - | - | could not be made: {row['error'][:80]} |")
            continue
        cosine = f"{row['cosine']['mean']:.4f} / {row['cosine']['min']:.4f}"
        timed = "ratio" in row
        cells = [f"{row['seq_per_s']:.1f}" if timed else "-", f"{row['ratio']:.2f}" if timed else "-", cosine]
        for dataset in ("scifact", "dbpedia-5k"):
            got = full.get(name, {}).get(dataset)
            cells.append(f"{got['dense']['ndcg@10']:.4f} / {got['hybrid']['ndcg@10']:.4f}" if got else "-")
        overlaps = [full.get(name, {}).get(d, {}).get("top10_overlap") for d in ("scifact", "dbpedia-5k")]
        cells.append(" / ".join(f"{o:.3f}" for o in overlaps) if None not in overlaps else "-")
        lines.append(f"| {name} | {' | '.join(cells)} | {verdict(name, screen, full)} |")
    return "\n".join(lines)


def cpu() -> dict[str, Any]:
    """The CPU's name and the instructions int8 speed depends on (VNNI: int8 dot products; AMX: int8 tiles)."""
    info = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").is_file() else ""
    name = next((line.split(":", 1)[1].strip() for line in info.splitlines() if line.startswith("model name")), "")
    flags = next((line.split(":", 1)[1].split() for line in info.splitlines() if line.startswith("flags")), [])
    wanted = ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "amx_int8")
    return {"model": name or platform.processor(), "int8_features": [f for f in wanted if f in flags]}


def report(ref: Any, screen: dict, worst: list, full: dict, sample: dict, results: Path) -> None:
    previous = results / "int8.json"
    if previous.is_file():  # schemes scored in an earlier run keep their scores (their vectors are cached anyway)
        full = {**json.loads(previous.read_text()).get("full", {}), **full}
    body = {
        "machine": {"cpus": __import__("os").cpu_count(), "python": platform.python_version(),
                    "onnxruntime": __import__("onnxruntime").__version__, "cpu": cpu()},
        "fp32_model": str(ref.fp32),
        "samples": {"speed": f"{len(sample['speed'])} SciFact passages at 256 tokens",
                    "screen": f"{len(sample['screen'])} passages (192 SciFact + 96 dbpedia-5k)",
                    "calibration": f"{len(sample['calibration'])} corpus passages (static schemes)"},
        "bar": BAR, "screen": screen, "sensitivity": worst, "full": full,
        "verdicts": {name: verdict(name, screen, full) for name in screen},
    }  # fmt: skip
    (results / "int8.json").write_text(json.dumps(body, indent=1) + "\n")
    text = table(screen, full)
    (results / "int8.md").write_text(text + "\n")
    print(text)
