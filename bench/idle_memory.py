"""Idle in a few hundred MB (issue 49, point 2): the resident memory of the embedded server's whole process tree
(the server and every process under it, each sampled) at rest after its start, after an ingest, and while a
300-page PDF goes in.

One real server over stdio (``ingestion-mcp``, the embedded default, a fresh data folder) is driven through MCP:

- ``rest``: started, one search (the model and the index load), ``--settle`` seconds of quiet;
- ``sync``: ``sync_folder`` of a folder of real small files copied from the system's documentation (README, text,
  Markdown and HTML files of /usr/share/doc, and ``--pdfs`` small PDFs from it, which go through docling), then the
  tree sampled every second for ``--idle`` seconds: when it came back to 600 MB or less, and where it was at the end;
- ``big_pdf``: ``ingest_document`` of ``--pdf`` (gnuplot-doc's 311-page manual), its peak, then ``--idle`` seconds.

Each reading lists every process of the tree. ``--breakdown`` adds where the memory of the server at rest goes: a
fresh interpreter imports what the server imports, stage by stage, and opens the model and the index, reading its
own resident size after each (the stages share libraries, so each counts what it adds to those before it).

    python -m bench.idle_memory [--files 60] [--pdfs 3] [--pdf PATH] [--idle 60] [--breakdown]
                                [--out bench/results/idle_memory.json]

docs/memory.md gives the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from .pdf_scale import MB, TreeSampler

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "results" / "idle_memory.json"
DOCS = Path("/usr/share/doc")
GNUPLOT = DOCS / "gnuplot" / "gnuplot.pdf"
TEXT_NAMES = ("README", "README.md", "README.txt", "NEWS.md", "CHANGES.md")
GOAL_MB = 600.0


def real_folder(target: Path, files: int, pdfs: int) -> dict[str, int]:
    """Up to ``files`` small text, Markdown and HTML files and ``pdfs`` small PDFs of the system's documentation."""
    texts = sorted(p for p in DOCS.glob("*/*") if p.is_file() and (p.name in TEXT_NAMES or p.suffix in (".md", ".html"))
                   and 500 < p.stat().st_size < 60_000)  # fmt: skip
    small_pdfs = sorted(p for p in DOCS.rglob("*.pdf") if 20_000 < p.stat().st_size < 400_000)
    chosen = texts[:files] + small_pdfs[:pdfs]
    for number, path in enumerate(chosen):
        shutil.copyfile(path, target / f"{number:03d}-{path.parent.name}-{path.name}")
    return {"files": len(chosen), "pdfs": min(pdfs, len(small_pdfs)), "bytes": sum(p.stat().st_size for p in chosen)}


def reading() -> dict[str, Any]:
    """The tree's RSS in MiB with each process's."""
    each = {f"{name} {pid}": round(rss / MB, 1) for pid, (name, rss) in TreeSampler.tree().items()}
    return {"tree_mb": round(sum(each.values()), 1), "processes": each}


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    answer = await client.call_tool(tool, arguments)
    result = answer.structured_content or {}
    while job_id := result.get("job_id"):  # it outlived the call: polled as an agent would
        await anyio.sleep(0.5)
        job = ((await client.call_tool("get_job_status", {"job_id": job_id})).structured_content or {}).get("job")
        if (job or {}).get("status") != "running":
            result = dict((job or {}).get("result") or {"error": (job or {}).get("error")})
    if answer.is_error:
        raise RuntimeError(f"{tool} failed: {answer.content}")
    return result


async def idle_series(seconds: float) -> dict[str, Any]:
    """The tree every second for ``seconds``: when it was first at or under GOAL_MB, and the last reading."""
    series, under = [], None
    for second in range(int(seconds) + 1):
        now = reading()["tree_mb"]
        series.append(now)
        if under is None and now <= GOAL_MB:
            under = second
        if second < seconds:
            await anyio.sleep(1.0)
    return {"series_mb": series, f"first_at_or_under_{GOAL_MB:.0f}_mb_s": under, "end": reading()}


async def drive(args: argparse.Namespace, scratch: Path) -> dict[str, Any]:
    folder = scratch / "docs"
    folder.mkdir()
    made = real_folder(folder, args.files, args.pdfs)
    env = {**os.environ, "INGESTION_MCP_DATA_DIR": str(scratch / "data"), "HF_HUB_OFFLINE": "1",
           "INGESTION_MCP_ALLOWED_ROOTS": f"{folder},{args.pdf.parent}"}  # fmt: skip
    params = StdioServerParameters(command=sys.executable, args=["-m", "ingestion_mcp.cli.server_command"], env=env)
    result: dict[str, Any] = {"folder": made}
    with (scratch / "server.log").open("w") as errlog:
        return await _phases(args, folder, params, errlog, result)


async def _phases(args: argparse.Namespace, folder: Path, params: StdioServerParameters, errlog: Any,
                  result: dict[str, Any]) -> dict[str, Any]:  # fmt: skip
    async with Client(stdio_client(params, errlog), read_timeout_seconds=3600) as client:
        await call(client, "search", query="what is installed here")
        await anyio.sleep(args.settle)
        result["rest"] = reading()
        with TreeSampler().sampling() as sampler:
            began = time.perf_counter()
            synced = await call(client, "sync_folder", folder=str(folder), collection="memory")
            result["sync"] = {"seconds": round(time.perf_counter() - began, 1), "counts": synced.get("counts"),
                              "peak_tree_mb": round(sampler.tree_peak / MB, 1)}  # fmt: skip
        result["sync"]["after"] = await idle_series(args.idle)
        if args.pdf.is_file():
            with TreeSampler().sampling() as sampler:
                began = time.perf_counter()
                done = await call(client, "ingest_document", file_path=str(args.pdf), collection="memory")
                peaks = {f"{name} {pid}": round(rss / MB, 1) for pid, (name, rss) in sampler.peaks.items()}
                result["big_pdf"] = {"file": args.pdf.name, "seconds": round(time.perf_counter() - began, 1),
                                     "status": done.get("status"), "peak_tree_mb": round(sampler.tree_peak / MB, 1),
                                     "peaks": peaks}  # fmt: skip
            result["big_pdf"]["after"] = await idle_series(args.idle)
    return result


BREAKDOWN = """
import gc, sys
def rss():
    return next(int(l.split()[1]) / 1024 for l in open("/proc/self/status") if l.startswith("VmRSS"))
marks = [("python", rss())]
def mark(name):
    gc.collect(); marks.append((name, rss()))
from servicekit import configure_allocators; configure_allocators()
import ingestion_mcp.settings; mark("settings (pydantic, pydantic-settings)")
import ingestion_mcp.serving; mark("the MCP SDK, the tools and their models, the server")
import vector_gateway.main; mark("the gateway's app (FastAPI, its routes and models)")
from vector_gateway.lance import lean_import; lean_import.lancedb(); mark("lancedb and pyarrow")
from vector_gateway.embedder import create_embedder
from vector_gateway.settings import GatewaySettings
model = create_embedder(GatewaySettings()); model.embed_query("x")
mark(f"the model ({model.model_name}), ONNX Runtime")
from vector_gateway.lance import LanceStore
store = LanceStore(sys.argv[1]); store.list_collections(); mark("the index open")
print(__import__("json").dumps([(n, round(v, 1)) for n, v in marks]))
"""


def breakdown(index: Path) -> list[dict[str, Any]]:
    done = subprocess.run([sys.executable, "-c", BREAKDOWN, str(index)], capture_output=True, text=True, check=True,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})  # fmt: skip
    marks = json.loads(done.stdout.strip().splitlines()[-1])
    return [{"stage": name, "rss_mb": value, "adds_mb": round(value - (marks[i - 1][1] if i else 0), 1)}
            for i, (name, value) in enumerate(marks)]  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.idle_memory", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--files", type=int, default=60, help="small text, Markdown and HTML files")
    parser.add_argument("--pdfs", type=int, default=3, help="small PDFs among them")
    parser.add_argument("--pdf", type=Path, default=GNUPLOT, help="the big PDF (default: gnuplot-doc's manual)")
    parser.add_argument("--idle", type=float, default=60.0)
    parser.add_argument("--settle", type=float, default=10.0)
    parser.add_argument("--breakdown", action="store_true", help="where the memory of a server at rest goes")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="idle-memory-") as scratch:
        report: dict[str, Any] = {"benchmark": "idle_memory", "cpus": os.cpu_count(), "load_before": os.getloadavg()[0]}
        report.update(anyio.run(drive, args, Path(scratch)))
        if args.breakdown:
            report["breakdown"] = breakdown(Path(scratch) / "data" / "lance")
    report["load_after"] = os.getloadavg()[0]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
