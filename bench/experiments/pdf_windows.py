"""Big PDFs in page windows vs whole: peak memory (RSS) and pages/s of the native PDF conversion.

    python -m bench.experiments.pdf_windows [--pages 10 100 500] [--runs 3] [--window 10]
    python -m bench.experiments.pdf_windows --cancel 7 [--pages 500]   # a cancel halfway: seconds to the worker's end

Each run converts one generated born-digital PDF (bench/pdf_scale_docs.py) in a fresh process, as a docling
worker does (the converter built first), and reports the process's peak RSS above its RSS once the
converter is loaded, and pages/s. Windowed and whole runs alternate, so both see the same machine load.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time


def _rss_mb() -> float:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def _child(pages: int, window: int) -> None:
    from docling_service.converter import Converter, ConverterOptions

    from bench.pdf_scale_docs import report_pdf

    data, _ = report_pdf(pages)
    converter = Converter(ConverterOptions(page_window=window))
    converter.start()
    converter.convert(report_pdf(2)[0], "warm.pdf")  # first-call costs out of the measure
    base = _rss_mb()
    started = time.perf_counter()
    result = converter.convert(data, "report.pdf")
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    assert result.page_count == pages
    print(json.dumps({"seconds": seconds, "peak_mb": peak, "base_mb": base}))


def _run(pages: int, window: int) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-m", "bench.experiments.pdf_windows", "--child", str(pages), str(window)],
        capture_output=True, text=True, check=True, env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])


async def _cancel_latency(runs: int, pages: int = 500) -> list[float]:
    """Cancel a ``pages``-page conversion (the service's default page window) halfway; seconds until the worker
    process, and the memory it held, is gone."""
    from pathlib import Path

    import anyio
    from docling_service.converter import ConverterOptions
    from docling_service.pool import PoolOptions, WorkerPool

    from bench.pdf_scale_docs import report_pdf

    data, _ = report_pdf(pages)
    pool = WorkerPool(PoolOptions(workers=1), ConverterOptions())
    await anyio.to_thread.run_sync(pool.start)
    seconds = []
    for _ in range(runs):
        pid, started = pool._idle[0].pid, anyio.Event()

        async def progress(done: int, _total: int, started: anyio.Event = started) -> None:
            if done >= pages // 2:
                started.set()

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(pool.convert, data, "long.pdf", progress)
            await started.wait()
            cancelled = time.perf_counter()
            tasks.cancel_scope.cancel()
        while Path(f"/proc/{pid}").exists():
            await anyio.sleep(0.002)
        seconds.append(time.perf_counter() - cancelled)
    pool.close()
    return seconds


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, nargs="+", default=[10, 100, 500])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--window", type=int, default=10)
    parser.add_argument("--cancel", type=int, metavar="RUNS", help="measure cancel -> worker gone instead")
    parser.add_argument("--child", type=int, nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(*args.child)
        return
    if args.cancel:
        import anyio

        gone = anyio.run(_cancel_latency, args.cancel, args.pages[-1])
        print(f"cancel -> worker gone: median {statistics.median(gone):.3f} s, p95 {_p95(gone):.3f} s, "
              f"max {max(gone):.3f} s over {len(gone)} runs; load average {os.getloadavg()}")  # fmt: skip
        return
    print(f"load average before: {os.getloadavg()}")
    for pages in args.pages:
        runs: dict[str, list[dict[str, float]]] = {"windowed": [], "whole": []}
        for _ in range(args.runs):
            runs["windowed"].append(_run(pages, args.window))
            runs["whole"].append(_run(pages, pages))
        for name, results in runs.items():
            rate = [pages / r["seconds"] for r in results]
            grown = [r["peak_mb"] - r["base_mb"] for r in results]
            print(
                f"{pages:4d} pages {name:8s}: pages/s median {statistics.median(rate):6.1f} p95-low {min(rate):6.1f}; "
                f"peak RSS above loaded median {statistics.median(grown):7.1f} MB p95 {_p95(grown):7.1f} MB "
                f"(peak {statistics.median([r['peak_mb'] for r in results]):.0f} MB)"
            )
        ratio = statistics.median(r["peak_mb"] - r["base_mb"] for r in runs["windowed"]) / max(
            1e-9, statistics.median(r["peak_mb"] - r["base_mb"] for r in runs["whole"])
        )
        print(f"{pages:4d} pages: windowed/whole peak growth ratio {ratio:.2f}")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
