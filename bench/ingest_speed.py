"""Ingest speed and index size of one real PDF through the whole embedded pipeline (docling, chunker, gateway).

    python bench/ingest_speed.py --pdf /usr/share/doc/live-manual/pdf/live-manual.portrait.en.a4.pdf.gz --runs 3

Each run ingests the file again with force=true into the same collection (a fresh data folder per engine), and
reports the stages the pipeline times (reading, parsing, chunking, embedding, storing) and the whole ingest;
after the first run, the bytes the index takes on disk. Self-contained (it imports the services' packages only,
not bench/), so the same file measures another checkout's code with that checkout's venv:
`cd OTHER_CHECKOUT && .venv/bin/python THIS_CHECKOUT/bench/ingest_speed.py ...` (bench/experiments/ingest_ab.py
alternates two that way). The result names the PDF's file and the commit measured, never a folder of the
machine. Take reported figures on a quiet machine: `python -m bench.quiet -- python bench/ingest_speed.py ...`
(docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

STAGES = ("reading_ms", "parsing_ms", "chunking_ms", "embedding_ms", "storing_ms")


def _folder_bytes(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def _plain_pdf(path: Path, work: Path) -> Path:
    if path.suffix != ".gz":
        return path
    target = work / path.stem
    target.write_bytes(gzip.decompress(path.read_bytes()))
    return target


async def _measure(pdf: Path, runs: int, engine: str, data_dir: Path) -> dict[str, Any]:
    os.environ["VECTOR_GATEWAY_INDEX_ENGINE"] = engine
    from ingestion_mcp.embedded.services import embedded_backend
    from ingestion_mcp.errors import UpstreamError
    from ingestion_mcp.ingest.pipeline import Ingestor
    from ingestion_mcp.settings import McpSettings

    settings = McpSettings(data_dir=data_dir, allowed_roots=[pdf.parent], request_timeout_s=3600)
    results: list[dict[str, Any]] = []
    async with embedded_backend(settings) as backend:
        while True:  # the model loads in the background
            try:
                await backend.embed(["ready?"])
                break
            except UpstreamError as exc:
                if "loading" not in str(exc):
                    raise
                await asyncio.sleep(0.5)
        ingestor = Ingestor(backend, settings)
        index_bytes = None
        for run in range(runs):
            started = time.perf_counter()
            outcome = await ingestor.ingest_file(str(pdf), collection="speed", force=run > 0)
            total_ms = (time.perf_counter() - started) * 1000
            results.append({"total_ms": round(total_ms, 1), "chunks": outcome.chunks,
                            **{stage: outcome.stages.get(stage, 0.0) for stage in STAGES}})  # fmt: skip
            print(f"  {engine} run {run + 1}: {total_ms / 1000:.1f} s, {outcome.chunks} chunks, "
                  f"{json.dumps({k: outcome.stages.get(k) for k in STAGES})}", file=sys.stderr)  # fmt: skip
            if run == 0:
                index_bytes = _folder_bytes(data_dir / ("lance" if engine == "lance" else "milvus.db"))
    return {"engine": engine, "runs": results, "index_bytes_after_first": index_bytes}


def _summary(runs: list[dict[str, Any]]) -> dict[str, float]:
    return {key: round(statistics.median(run[key] for run in runs), 1) for key in ("total_ms", *STAGES)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pdf", type=Path, required=True)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--engines", nargs="+", default=["milvus", "lance"], choices=["milvus", "lance"])
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    for name in ("DOCLING_SERVICE_URL", "CHUNKER_SERVICE_URL", "VECTOR_GATEWAY_URL", "VECTOR_GATEWAY_MILVUS_URI",
                 "VECTOR_GATEWAY_LANCE_URI"):  # fmt: skip
        os.environ.pop(name, None)
    checkout = Path(str(__import__("ingestion_mcp").__file__)).resolve().parents[4]
    commit = subprocess.run(["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, check=False).stdout.strip()  # fmt: skip
    report: dict[str, Any] = {"pdf": args.pdf.name, "commit": commit,
                              "load_average_start": os.getloadavg()[0], "engines": []}  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="ingest-speed-") as work:
        pdf = _plain_pdf(args.pdf, Path(work))
        for engine in args.engines:
            measured = asyncio.run(_measure(pdf, args.runs, engine, Path(work) / engine))
            measured["median"] = _summary(measured["runs"])
            report["engines"].append(measured)
    report["load_average_end"] = os.getloadavg()[0]
    text = json.dumps(report, indent=2)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
