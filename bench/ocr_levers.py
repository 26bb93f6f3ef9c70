"""What each OCR lever buys on office-quality scans: pages/s and character accuracy against today's settings.

    python -m bench.ocr_levers [--repeats 3] [--out bench/results/ocr_levers.json]

Every configuration reads the same scanned reports (bench/office_scans.py: 150 and 300 dpi, 0.4 degree
skew, blur, JPEG quality 70) through the native pipeline's OCR path (render, RapidOCR, paragraph merger).
Runs are interleaved (one pass over all configurations per repeat), so a busy machine slows all of them
alike; each speed is reported as the median over the repeats and as a ratio to ``today`` in the same run.
CPU seconds per page are reported too: they do not depend on what else the machine runs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from docling_service.markdown import render
from docling_service.ocr import OcrEngine, OcrOptions
from docling_service.pdf_lines import merge_lines
from docling_service.scans import ocr_pdf_pages

from .office_scans import office_report
from .pdf_fidelity import _text, char_accuracy
from .results_io import write_json

TODAY = OcrOptions(
    page_threads=1,
    onnx_threads=1,
    render_dpi=200,
    det_side=0,
    crop_side=2000,
    rec_batch=6,
    use_cls=True,
    mem_arena=False,
    model="small",
    despeckle=False,
)


def configurations() -> dict[str, OcrOptions]:
    """Today's settings, each lever alone, and the new default (``OcrOptions()``)."""
    return {
        "today": TODAY,
        "2 pages at once (2 threads)": replace(TODAY, page_threads=2),
        "ONNX intra-op threads 2": replace(TODAY, onnx_threads=2),
        "detect at 960 px (limit_type max)": replace(TODAY, det_side=960),
        "detect at 960 px, crops at full 200 dpi": replace(TODAY, det_side=960, crop_side=2400),
        "rec_batch_num 1": replace(TODAY, rec_batch=1),
        "no direction classifier (use_cls false)": replace(TODAY, use_cls=False),
        "ONNX Runtime CPU memory arena on": replace(TODAY, mem_arena=True),
        "render 300 dpi, crops at 300 dpi": replace(TODAY, render_dpi=300, crop_side=3600),
        "2 pages at once, detect at 960 px, no classifier": OcrOptions(
            rec_batch=6, mem_arena=False, model="small", despeckle=False
        ),
        "default before PP-OCRv6 tiny (small model, no median filter)": OcrOptions(model="small", despeckle=False),
        "new default": OcrOptions(),
    }


def documents(pages: int) -> list[tuple[bytes, str]]:
    """The scanned reports (PDF bytes, expected text): one at 150 dpi and one at 300 dpi."""
    out = []
    for dpi, seed in ((150, 5), (300, 6)):
        data, lines = office_report(pages, dpi, seed=seed)
        out.append((data, "\n".join(lines)))
    return out


def read(engine: OcrEngine, data: bytes, pages: int) -> str:
    lines = ocr_pdf_pages(data, list(range(1, pages + 1)), engine)
    return _text(render(merge_lines(list(lines))).markdown)


def _one_pass(engine: OcrEngine, docs: list[tuple[bytes, str]], pages: int) -> tuple[float, float, list[float]]:
    """(wall s, CPU s, accuracies) for reading every document once."""
    wall, cpu = time.perf_counter(), time.process_time()
    texts = [read(engine, data, pages) for data, _ in docs]
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return wall, cpu, [char_accuracy(expected, got) for (_, expected), got in zip(docs, texts, strict=True)]


def measure(repeats: int = 3, pages: int = 2, only: list[str] | None = None) -> dict[str, Any]:
    docs = documents(pages)
    total = pages * len(docs)
    chosen = {name: options for name, options in configurations().items() if not only or name in only}
    engines = {name: OcrEngine(options) for name, options in {"today": TODAY, **chosen}.items()}
    for engine in engines.values():
        read(engine, docs[0][0], 1)  # warm-up: model loading is not timed
    runs: dict[str, list[tuple[float, float, list[float]]]] = {name: [] for name in engines}
    for _ in range(repeats):
        for name, engine in engines.items():  # interleaved: every configuration once per pass
            runs[name].append(_one_pass(engine, docs, pages))
    base = statistics.median(run[0] for run in runs["today"])
    rows = {}
    for name, measured in runs.items():
        walls = sorted(run[0] for run in measured)
        wall = statistics.median(walls)
        rows[name] = {
            "options": asdict(engines[name].options),
            "pages_per_s": round(total / wall, 3),
            "pages_per_s_p95_run": round(total / walls[-1], 3),  # the slowest run (p95 of <= 20 runs)
            "speed_vs_today": round(base / wall, 2),
            "cpu_s_per_page": round(statistics.median(run[1] for run in measured) / total, 2),
            "char_accuracy_150dpi": round(measured[0][2][0], 4),
            "char_accuracy_300dpi": round(measured[0][2][1], 4),
        }
    return {"pages": total, "repeats": repeats, "load_average": os.getloadavg(), "configurations": rows}


def peak_rss_mb(name: str, pages: int = 10) -> float:
    """Peak RSS of a fresh process converting a ``pages``-page 150 dpi scan with one configuration."""
    code = (
        "import resource, sys; from bench.ocr_levers import _convert_once; "
        "_convert_once(sys.argv[1], int(sys.argv[2])); "
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
    )
    out = subprocess.run([sys.executable, "-c", code, name, str(pages)], capture_output=True, text=True, check=True)
    return round(int(out.stdout.split()[-1]) / 1024, 1)


def _convert_once(name: str, pages: int) -> None:
    from docling_service.converter import Converter, ConverterOptions

    converter = Converter(ConverterOptions(ocr=configurations()[name]))
    converter.start()
    converter.convert(office_report(pages, 150)[0], "report.pdf")


def report_lines(result: dict[str, Any]) -> list[str]:
    lines = [
        f"OCR levers: {result['pages']} scanned pages per pass, median of {result['repeats']} interleaved passes, "
        f"load average {', '.join(f'{x:.2f}' for x in result['load_average'])}",
        "",
        "| configuration | pages/s | slowest run | vs today | CPU s/page | accuracy 150 dpi | accuracy 300 dpi |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, row in result["configurations"].items():
        lines.append(
            f"| {name} | {row['pages_per_s']:.2f} | {row['pages_per_s_p95_run']:.2f} | {row['speed_vs_today']:.2f}x | "
            f"{row['cpu_s_per_page']:.2f} | {row['char_accuracy_150dpi']:.1%} | {row['char_accuracy_300dpi']:.1%} |"
        )
    if "peak_rss_mb" in result:
        lines += ["", "Peak RSS converting a 10-page scan: " + json.dumps(result["peak_rss_mb"])]
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--pages", type=int, default=2, help="pages per scanned report (two reports)")
    parser.add_argument("--rss", action="store_true", help="also the peak RSS of today's and the new default")
    parser.add_argument("--only", nargs="+", help="configurations to measure (today is always measured)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    result = measure(args.repeats, args.pages, args.only)
    if args.rss:
        result["peak_rss_mb"] = {name: peak_rss_mb(name) for name in ("today", "new default")}
    if args.out:
        write_json(args.out, result)
    print("\n".join(report_lines(result)))


if __name__ == "__main__":
    main()
