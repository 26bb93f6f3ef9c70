"""Big PDFs end to end: pages/s, memory of every process, memory given back, progress, through the MCP tool.

Generated reports of 10, 100 and 500 born-digital pages (prose, headings, tables, two-column pages) and of
10 and 50 scanned pages (the same pages rasterised at 150 dpi, blurred and speckled, no text layer) are
each ingested with ``ingest_document`` through a real MCP client (stdio) into one real server process on
the embedded default (docling workers, chunker, gateway, Milvus Lite). The bench samples the RSS of the
server's whole process tree every 0.2 s and reports per file: seconds, pages/s (whole ingest and the
conversion stage alone), peak RSS of each process and of the tree, the tree's RSS after the job (memory
given back?), seconds to the first progress message and the longest gap between two, and chunks. The idle
tree (before the first ingest) is measured too, and a 100-page report with a photograph on every page sized to
``--heavy`` MiB (default 99: over 100 MB, just under the 100 MiB upload limit) shows what a big upload costs in memory.
``--baseline DIR`` runs the same files on another checkout (e.g. ``git worktree add --detach ../base <ref>``)
in the same run, for ratios.

    python -m bench.pdf_scale [--born 10,100,500] [--scanned 10,50] [--heavy 99] [--baseline DIR]
                              [--plot docs/pdf_scale.png]
"""

from __future__ import annotations

import argparse
import io
import itertools
import os
import random
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import psutil
import pypdfium2 as pdfium
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from PIL import Image, ImageFilter

from .pdf_scale_docs import report_pdf
from .results_io import write_json

ROOT = Path(__file__).resolve().parents[1]
SRC_DIRS = ("services/ingestion_mcp/src", "services/vector_gateway/src", "services/chunker/src",
            "services/docling/src", "libs/contracts/src", "libs/servicekit/src")  # fmt: skip
SERVICE_URLS = ("DOCLING_SERVICE_URL", "CHUNKER_SERVICE_URL", "VECTOR_GATEWAY_URL", "VECTOR_GATEWAY_MILVUS_URI")
SAMPLE_S = 0.2
SETTLE_S = 5.0  # after a job: time for workers to give memory back (or be recycled) before "after" is read
MB = 1024 * 1024
HEAVY_PAGES = 100


def scanned_pdf(born: bytes, *, dpi: int = 150, seed: int = 11) -> bytes:
    """Every page of ``born`` as a scanner writes it: grey, blurred, speckled, slightly turned; no text layer."""
    rng = random.Random(seed)
    document = pdfium.PdfDocument(born)
    try:
        pages = []
        for index in range(len(document)):
            image = document[index].render(scale=dpi / 72, grayscale=True).to_pil().convert("L")
            image = image.filter(ImageFilter.GaussianBlur(0.6)).rotate(rng.uniform(-0.4, 0.4), fillcolor=255)
            pixels = image.load()
            for _ in range(image.width * image.height // 500):
                pixels[rng.randrange(image.width), rng.randrange(image.height)] = rng.choice((40, 200))
            pages.append(image)
    finally:
        document.close()
    buffer = io.BytesIO()
    pages[0].save(buffer, format="PDF", resolution=dpi, save_all=True, append_images=pages[1:])
    return buffer.getvalue()


def photo_pdf(born: bytes, target_mb: float, *, seed: int = 5) -> bytes:
    """``born`` with a photograph on every page (a JPEG of noise: it does not compress), sized so that the file
    comes to about ``target_mb``: what a report full of pictures weighs, for the memory of a 100 MB upload."""
    rng = random.Random(seed)
    document = pdfium.PdfDocument(born)
    try:
        per_page = max(target_mb * MB - len(born), 0) / len(document)
        side = max(int((per_page / len(_noise_jpeg(rng, 256)) * 256 * 256) ** 0.5), 16)
        for index in range(len(document)):
            encoded = _noise_jpeg(rng, side)
            page = document[index]
            image = pdfium.PdfImage.new(document)
            image.load_jpeg(io.BytesIO(encoded), inline=True)
            width, height = page.get_size()
            image.set_matrix(pdfium.PdfMatrix().scale(width / 4, width / 4).translate(width * 0.7, height * 0.02))
            page.insert_obj(image)
            page.gen_content()
        out = io.BytesIO()
        document.save(out)
        return out.getvalue()
    finally:
        document.close()


def _noise_jpeg(rng: random.Random, side: int) -> bytes:
    encoded = io.BytesIO()
    Image.frombytes("RGB", (side, side), rng.randbytes(side * side * 3)).save(encoded, format="JPEG", quality=90)
    return encoded.getvalue()


class TreeSampler:
    """Peak RSS of each process under this one (the MCP server, its docling workers, Milvus Lite) and of all."""

    def __init__(self) -> None:
        self.peaks: dict[int, tuple[str, int]] = {}
        self.tree_peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @staticmethod
    def tree() -> dict[int, tuple[str, int]]:
        found = {}
        for process in psutil.Process().children(recursive=True):
            try:
                found[process.pid] = (label(process.cmdline()), process.memory_info().rss)
            except psutil.Error:  # gone between the listing and the read
                continue
        return found

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_S):
            now = self.tree()
            self.tree_peak = max(self.tree_peak, sum(rss for _, rss in now.values()))
            for pid, (name, rss) in now.items():
                if rss > self.peaks.get(pid, (name, 0))[1]:
                    self.peaks[pid] = (name, rss)

    @contextmanager
    def sampling(self) -> Iterator[TreeSampler]:
        self._thread.start()
        try:
            yield self
        finally:
            self._stop.set()
            self._thread.join()


def label(cmdline: list[str]) -> str:
    text = " ".join(cmdline)
    for needle, name in (("milvus", "milvus-lite"), ("ingestion_mcp.cli.server_command", "mcp server"),
                         ("multiprocessing", "docling worker")):  # fmt: skip
        if needle in text:
            return name
    return os.path.basename(cmdline[0]) if cmdline else "?"


def tree_mb() -> dict[str, float]:
    """The tree's resident memory summed (counts pages forked workers share once per process) and its
    proportional set size (each shared page split among its sharers: what the tree really costs)."""
    rss = pss = 0
    for process in psutil.Process().children(recursive=True):
        try:
            full = process.memory_full_info()
        except psutil.Error:
            continue
        rss, pss = rss + full.rss, pss + full.pss
    return {"rss": round(rss / MB, 1), "pss": round(pss / MB, 1)}


def server(code: Path, docs: Path, data: Path) -> StdioServerParameters:
    env = {**os.environ, "INGESTION_MCP_ALLOWED_ROOTS": str(docs), "INGESTION_MCP_DATA_DIR": str(data),
           "HF_HUB_OFFLINE": "1", "PYTHONPATH": os.pathsep.join(str(code / d) for d in SRC_DIRS)}  # fmt: skip
    for name in SERVICE_URLS:
        env.pop(name, None)
    return StdioServerParameters(
        command=sys.executable, args=["-m", "ingestion_mcp.cli.server_command"], env=env, cwd=str(docs)
    )


async def ingest(client: Client, path: Path, pages: int) -> dict[str, Any]:
    """One ingest_document call (and the job polled when it outlasts the call), timed, with its progress."""
    marks: list[tuple[float, str]] = []
    started = time.perf_counter()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        marks.append((time.perf_counter() - started, message or ""))

    with TreeSampler().sampling() as sampler:
        arguments = {"file_path": str(path), "collection": "scale", "response_format": "detailed", "force": True}
        answer = await client.call_tool("ingest_document", arguments, progress_callback=on_progress)
        result, status = answer.structured_content or {}, ""
        if job_id := result.get("job_id"):  # outlasted the call: the job goes on, polled as an agent would
            result, status = await polled(client, job_id, marks, started)
        seconds = time.perf_counter() - started
    await anyio.sleep(SETTLE_S)
    return figures(result, marks, seconds, pages, sampler) | {"status": status or result.get("status") or "failed"}


async def polled(client: Client, job_id: str, marks: list[tuple[float, str]], started: float) -> tuple[dict, str]:
    """The job's result and status once it ended; each new step it showed meanwhile is a progress mark."""
    while True:
        await anyio.sleep(0.5)
        job = ((await client.call_tool("get_job_status", {"job_id": job_id})).structured_content or {}).get("job")
        job = job or {}
        seen = f"{job.get('current_step', '')} {job.get('progress', '')}"  # a step, or progress within it
        if not marks or marks[-1][1] != seen:
            marks.append((time.perf_counter() - started, seen))
        if job.get("status") != "running":
            result = dict(job.get("result") or {"error": job.get("error")})
            # The job's summary leaves the stage timings out; its "converting" step is the parsing stage.
            if converting := (job.get("step_ms") or {}).get("converting"):
                result.setdefault("stages", {"parsing_ms": converting})
            return result, job.get("status", "")


def figures(
    result: dict[str, Any], marks: list[tuple[float, str]], seconds: float, pages: int, sampler: TreeSampler
) -> dict[str, Any]:
    converting = (result.get("stages") or {}).get("parsing_ms", 0) / 1000
    gaps = [b[0] - a[0] for a, b in itertools.pairwise(marks)]
    paged = [at for at, message in marks if "page" in message]  # "converting page 37/500"
    peaks = [{"process": name, "pid": pid, "mb": round(rss / MB, 1)} for pid, (name, rss) in sampler.peaks.items()]
    return {
        "seconds": round(seconds, 2),
        "pages_per_s": round(pages / seconds, 3),
        "converting_s": round(converting, 2),
        "conversion_pages_per_s": round(pages / converting, 2) if converting else None,
        "first_progress_s": round(marks[0][0], 2) if marks else None,
        "longest_progress_gap_s": round(max(gaps), 2) if gaps else None,
        "progress_messages": len(marks),
        "page_messages": len(paged),
        "first_page_progress_s": round(paged[0], 2) if paged else None,
        "longest_conversion_gap_s": round(max(b - a for a, b in itertools.pairwise(paged)), 2) if paged[1:] else None,
        "peak_tree_mb": round(sampler.tree_peak / MB, 1),
        "peak_mb": sorted(peaks, key=lambda p: -p["mb"]),
        "after_tree_mb": tree_mb(),
        "chunks": result.get("chunks", result.get("chunks_created")),
        "stages_ms": result.get("stages") or {},
        "error": result.get("error"),
    }


def files(docs: Path, born: list[int], scanned: list[int], heavy_mb: float = 0) -> list[dict[str, Any]]:
    made = []
    if heavy_mb:  # 100 born-digital pages with a photograph each, about heavy_mb in all
        data = photo_pdf(report_pdf(HEAVY_PAGES, seed=HEAVY_PAGES)[0], heavy_mb)
        path = docs / f"photos-{HEAVY_PAGES}.pdf"
        path.write_bytes(data)
        made.append({"kind": "photos", "pages": HEAVY_PAGES, "path": path, "mb": round(len(data) / MB, 2)})
    for kind, sizes in (("born-digital", born), ("scanned", scanned)):
        for pages in sizes:
            pdf, _ = report_pdf(pages, seed=pages)
            data = pdf if kind == "born-digital" else scanned_pdf(pdf)
            path = docs / f"{kind}-{pages}.pdf"
            path.write_bytes(data)
            made.append({"kind": kind, "pages": pages, "path": path, "mb": round(len(data) / MB, 2)})
    return made


async def run_code(code: Path, made: list[dict[str, Any]], docs: Path, retire_wait_s: float = 0) -> dict[str, Any]:
    """Every file through one server; ``retire_wait_s`` > 0: after them, the tree once idle docling workers
    have exited (DOCLING_WORKER_IDLE_S, default 300 s): what a server that sits idle holds."""
    with tempfile.TemporaryDirectory(prefix="pdf-scale-data-") as data:
        async with Client(stdio_client(server(code, docs, Path(data))), read_timeout_seconds=3600) as client:
            await client.call_tool("get_collections", {})  # the services are up and the model is loaded
            await anyio.sleep(SETTLE_S)
            idle = tree_mb()
            results = []
            for item in made:
                print(f"  {code.name}: {item['kind']} {item['pages']} pages ...", file=sys.stderr)
                measured = await ingest(client, item["path"], item["pages"])
                results.append({"kind": item["kind"], "pages": item["pages"], "file_mb": item["mb"], **measured})
                print(f"    {measured['seconds']} s, peak tree {measured['peak_tree_mb']} MB", file=sys.stderr)
            retired = None
            if retire_wait_s > 0:
                print(f"  {code.name}: idle for {retire_wait_s:.0f} s ...", file=sys.stderr)
                await anyio.sleep(retire_wait_s)
                retired = tree_mb()
    return {"code": str(code), "idle_tree_mb": idle, "idle_tree_after_retire_mb": retired, "files": results}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="bench.pdf_scale", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--born", default="10,100,500", help="born-digital page counts")
    parser.add_argument("--scanned", default="10,50", help="scanned page counts")
    parser.add_argument(
        "--heavy",
        type=float,
        default=99.0,
        help=f"MB of a {HEAVY_PAGES}-page PDF with a photograph a page (0: none; uploads: <= 100 MiB)",
    )
    parser.add_argument(
        "--retire-wait",
        type=float,
        default=315.0,
        help="seconds to sit idle after the files before the tree is read again (idle docling workers exit after "
        "DOCLING_WORKER_IDLE_S, 300 by default); 0: skip",
    )
    parser.add_argument("--baseline", type=Path, help="another checkout to run the same files on, for ratios")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "pdf_scale.json")
    parser.add_argument("--plot", type=Path, default=ROOT / "docs" / "pdf_scale.png")
    return parser.parse_args(argv)


def sizes(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part.strip()]


def main(argv: list[str] | None = None) -> None:
    from .pdf_scale_report import plot, ratios, table

    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="pdf-scale-docs-") as scratch:
        docs = Path(scratch)
        made = files(docs, sizes(args.born), sizes(args.scanned), args.heavy)
        result: dict[str, Any] = {"benchmark": "pdf_scale", "cpus": os.cpu_count(),
                                  "current": anyio.run(run_code, ROOT, made, docs, args.retire_wait)}  # fmt: skip
        if args.baseline:
            result["baseline"] = anyio.run(run_code, args.baseline.resolve(), made, docs, args.retire_wait)
            result["ratios"] = ratios(result["current"], result["baseline"])
    result["load_average_after"] = os.getloadavg()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_json(args.out, result)
    plot(result, args.plot)
    print(table(result))
    print(f"wrote {args.out} and {args.plot}")


if __name__ == "__main__":
    main()
