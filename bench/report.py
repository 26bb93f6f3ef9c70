"""Write a benchmark result as JSON, a Markdown table and a PNG chart."""

from __future__ import annotations

import json
import os
import platform
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ingestion_contracts.gateway import SearchMode

from . import pdf_fidelity
from .results_io import public

ANCHORS = {  # published nDCG@10 on BEIR SciFact (test)
    "BM25, BEIR paper": 0.665,
    "BM25, Anserini flat": 0.679,
    "all-MiniLM-L6-v2 dense": 0.645,
}
MODES: tuple[SearchMode, ...] = ("keyword", "semantic", "hybrid")


def machine() -> dict[str, Any]:
    import psutil
    import torch

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpu": cpu, "cores": os.cpu_count(), "memory_gb": round(psutil.virtual_memory().total / 2**30, 1),
        "python": platform.python_version(), "torch": torch.__version__,
        "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
    }  # fmt: skip


def markdown(result: dict[str, Any]) -> str:
    m, lines = result["machine"], []
    lines.append(f"Machine: {m['cpu']}, {m['cores']} cores, {m['memory_gb']} GB, "
                 f"embedding on {result.get('device', 'cpu')}; {m['date']}.")  # fmt: skip
    if quality := result.get("quality"):
        lines += quality_table(quality, ANCHORS)
    for other in (result.get("quality_sets") or {}).values():
        lines += quality_table(other, {})
    if throughput := result.get("throughput"):
        p, r = throughput["pipeline"], throughput["raw_encode"]
        lines += ["", f"**Ingest throughput** ({throughput['documents']} documents, {p['chunks']} chunks, "
                  f"chunk -> embed -> store): pipeline {p['chunks_per_s']:.1f} chunks/s vs raw `encode` "
                  f"{r['chunks_per_s']:.1f} chunks/s = **{throughput['ratio']:.2f}x** of the raw rate."]  # fmt: skip
        lines += engine_lines(throughput)
        if files := throughput.get("files"):
            lines.append(f"With docling converting Markdown files first: {files['chunks_per_s']:.1f} chunks/s "
                         f"({files['ratio']:.2f}x of raw encode).")  # fmt: skip
    if latency := result.get("latency"):
        lines += [
            "",
            f"**Search latency** (hybrid, top_k={latency['top_k']}, {latency['chunks']} chunks, "
            f"{latency['raw']['n']} queries):",
            "",
            "| path | p50 ms | p95 ms | p50 vs raw |",
            "|---|---|---|---|",
        ]
        for name, label in (("raw", "embed + pymilvus hybrid_search"), ("gateway_api", "gateway /v1/search"),
                            ("mcp", "MCP `search` tool")):  # fmt: skip
            row = latency[name]
            lines.append(f"| {label} | {row['p50_ms']:.1f} | {row['p95_ms']:.1f} | "
                         f"{row['p50_ms'] / latency['raw']['p50_ms']:.2f}x |")  # fmt: skip
        if stages := latency.get("gateway_stages_p50_ms"):
            lines.append("")  # a line right under a table would join it
            lines.append(f"Inside the gateway (p50): query embedding {stages['embedding']:.1f} ms, rankings + fusion + "
                         f"liveness + fetch {stages['search']:.1f} ms.")  # fmt: skip
        lines += query_embedding_lines(latency)
    if scale := result.get("scale"):
        lines += ["", "**Scale** (gateway process over loopback HTTP, hybrid top_k=10):", "",
                  "| chunks | p50 ms | p95 ms | gateway RSS MB |", "|---|---|---|---|"]  # fmt: skip
        for size in scale["sizes"].values():
            lines.append(f"| {size['chunks']:,} | {size['search']['p50_ms']:.1f} | {size['search']['p95_ms']:.1f} | "
                         f"{size['gateway_rss_mb']:.0f} |")  # fmt: skip
        lines.append("")
        lines.append(f"Idle resident memory: docling {scale.get('docling_rss_mb', 0):.0f} MB, "
                     f"chunker {scale.get('chunker_rss_mb', 0):.0f} MB.")  # fmt: skip
    if pdf := result.get("pdf_fidelity"):
        lines += pdf_fidelity.report_lines(pdf)
    return "\n".join(lines) + "\n"


DATASET_NAMES = {"scifact": "BEIR SciFact (test)", "dbpedia-5k": "DBpedia-Entity, 5,000-document sample"}


def quality_table(quality: dict[str, Any], anchors: dict[str, float]) -> list[str]:
    """One benchmark's table, named, with its relevance judgments and the documents it had to skip."""
    corpus, name = quality["corpus"], quality.get("dataset", "scifact")
    skipped = corpus.get("skipped") or []
    lines = ["", f"**Retrieval quality, {DATASET_NAMES.get(name, name)}**: {corpus['documents']} documents "
             f"({corpus['chunks']} chunks, preset `{corpus['chunking']}`), {quality['hybrid']['queries']} queries, "
             f"relevance {quality.get('relevance', 'binary')}; chunk hits folded to documents."]  # fmt: skip
    if skipped:
        lines[-1] += (f" {len(skipped)} documents skipped (e.g. `{skipped[0]['id']}`: {skipped[0]['reason']}); "
                      "their judgments count as misses.")  # fmt: skip
    binary = "ndcg@10_binary" in quality["hybrid"]
    lines += ["", "| mode | nDCG@10 | Recall@100 | MRR@10 |" + (" nDCG@10 binary |" if binary else ""),
              "|---|---|---|---|" + ("---|" if binary else "")]  # fmt: skip
    lines += [f"| {mode} | {quality[mode]['ndcg@10']:.3f} | {quality[mode]['recall@100']:.3f} | "
              f"{quality[mode]['mrr@10']:.3f} |" + (f" {quality[mode]['ndcg@10_binary']:.3f} |" if binary else "")
              for mode in MODES]  # fmt: skip
    lines += [f"| *{label}* (published) | {value:.3f} | | |" for label, value in anchors.items()]
    return lines


def engine_lines(throughput: dict[str, Any]) -> list[str]:
    """The embedding engine, its ONNX Runtime settings and the CPU, with its rate beside torch's (throughput.py)."""
    engine, alone, torch = throughput.get("engine"), throughput.get("raw_engine"), throughput["raw_encode"]
    if not engine:
        return []
    cpu = engine.get("cpu", {})
    settings = (f", ONNX Runtime {engine['onnxruntime']}: {engine['intra_op_threads']} intra-op threads, "
                f"{engine['inter_op_threads']} inter-op, spinning {'on' if engine['spinning'] else 'off'}, "
                f"graph optimisation {engine['graph_optimization']}" if "onnxruntime" in engine else "")  # fmt: skip
    lines = [f"Embedding engine: {engine['engine']} on {engine['device']}{settings}; CPU {cpu.get('Model name', '?')}, "
             f"{cpu.get('CPU(s)', '?')} CPUs ({cpu.get('simd', '')})."]  # fmt: skip
    if alone:
        lines.append(f"The engine alone on the same chunks: {alone['chunks_per_s']:.1f} chunks/s "
                     f"({alone['chunks_per_s'] / torch['chunks_per_s']:.2f}x torch `encode`).")  # fmt: skip
    return lines


def query_embedding_lines(latency: dict[str, Any]) -> list[str]:
    if not (embedding := latency.get("query_embedding")):
        return []
    engine, torch = embedding["gateway_engine"], embedding["torch"]
    return [f"One query embedded alone (p50 / p95): {embedding['engine']} {engine['p50_ms']:.1f} / "
            f"{engine['p95_ms']:.1f} ms, torch {torch['p50_ms']:.1f} / {torch['p95_ms']:.1f} ms."]  # fmt: skip


def chart(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    if quality := result.get("quality"):  # SciFact, beside its published anchors
        values = [quality[mode]["ndcg@10"] for mode in MODES]
        axes[0].bar(MODES, values, color=["#8da0cb", "#66c2a5", "#fc8d62"])
        for name, value in ANCHORS.items():
            axes[0].axhline(value, linestyle="--", linewidth=0.8, color="grey")
            axes[0].text(2.45, value, name, fontsize=7, va="bottom", ha="right", color="grey")
        for x, value in enumerate(values):
            axes[0].text(x, value + 0.005, f"{value:.3f}", ha="center", fontsize=9)
        axes[0].set_ylim(0.5, 0.8)
        axes[0].set_title("SciFact nDCG@10")
    if latency := result.get("latency"):
        names = ["raw", "gateway_api", "mcp"]
        labels = ["raw pymilvus", "gateway API", "MCP tool"]
        axes[1].bar([x - 0.2 for x in range(3)], [latency[n]["p50_ms"] for n in names], width=0.4, label="p50")
        axes[1].bar([x + 0.2 for x in range(3)], [latency[n]["p95_ms"] for n in names], width=0.4, label="p95")
        axes[1].set_xticks(range(3), labels)
        axes[1].set_ylabel("ms")
        axes[1].legend()
        axes[1].set_title("Hybrid search latency")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write(result: dict[str, Any], out_dir: Path, stem: str = "latest") -> dict[str, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"json": out_dir / f"{stem}.json", "markdown": out_dir / f"{stem}.md", "png": out_dir / f"{stem}.png"}
    paths["json"].write_text(json.dumps(public(result), indent=2) + "\n")
    paths["markdown"].write_text(markdown(result))
    chart(result, paths["png"])
    return paths
