"""PDF fidelity: table-cell recall, OCR character accuracy and pages/s for each PDF pipeline.

    python -m bench.pdf_fidelity [--repeats 3]        (also a section of `make bench`)

The documents are generated (bench/pdf_fixtures.py) with their expected text. Pipelines, measured in the
same run on the same files:
- ``text-only``: the model-free native pipeline as it was before issue 16 (no OCR, no table finder);
  the baseline.
- ``embedded``: the default without models: native text, RapidOCR on pages without text, tables by rule.
- ``standard``: docling's layout + TableFormer models, when DOCLING_ARTIFACTS_PATH holds them (the
  container image); reported as unavailable otherwise.
"""

from __future__ import annotations

import argparse
import itertools
import os
import re
import statistics
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .office_scans import office_fixtures
from .pdf_fixtures import Fixture, fixtures
from .results_io import write_json

if TYPE_CHECKING:  # docling loads only when the section runs, not when the report is written
    from docling_service.converter import Converter, ConverterOptions

_SPACES = re.compile(r"\s+")


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance (insertions, deletions, substitutions), two rows at a time."""
    previous = list(range(len(b) + 1))
    for i, char_a in enumerate(a, start=1):
        current = [i]
        for j, char_b in enumerate(b, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (char_a != char_b)))
        previous = current
    return previous[-1]


def _norm(text: str) -> str:
    return _SPACES.sub(" ", text).strip().lower()


def char_accuracy(expected: str, got: str, *, ignore_case: bool = True) -> float:
    """1 - character error rate, floored at 0 (whitespace runs count as one space; case ignored unless
    ``ignore_case`` is false, when "zürich" for "Zürich" is an error)."""
    if ignore_case:
        expected, got = _norm(expected), _norm(got)
    else:
        expected, got = _SPACES.sub(" ", expected).strip(), _SPACES.sub(" ", got).strip()
    return max(0.0, 1 - edit_distance(expected, got) / max(1, len(expected)))


def glued_words(expected: str, got: str) -> int:
    """Words of ``got`` that are two neighbouring expected words run together ("Section1:", "Thefigures")."""
    words = _norm(expected).split()
    pairs = {first + second for first, second in itertools.pairwise(words)}
    return sum(word in pairs for word in _norm(got).split())


def markdown_rows(markdown: str) -> list[list[str]]:
    """The cells of every Markdown table row (delimiter rows left out)."""
    rows = []
    for line in markdown.splitlines():
        line = line.strip()
        if line.startswith("|") and line.endswith("|") and not set(line) <= set("|-: "):
            rows.append([cell.strip() for cell in re.split(r"(?<!\\)\|", line[1:-1])])
    return rows


def cell_recall(expected: tuple[tuple[str, ...], ...], markdown: str) -> tuple[int, int]:
    """(cells found, cells expected): a cell counts when a table row with its row's first cell holds it there."""
    rows = markdown_rows(markdown)
    found = 0
    for row in expected:
        match = next((got for got in rows if got and got[0] == row[0]), None)
        found += sum(
            1 for index, cell in enumerate(row) if match is not None and index < len(match) and match[index] == cell
        )
    return found, sum(len(row) for row in expected)


def _text(markdown: str) -> str:
    return "\n".join(line for line in markdown.splitlines() if not line.startswith("#") or line.lstrip("# "))


def _convert(converter: Converter, fixture: Fixture) -> tuple[str, list[int], float]:
    from servicekit import ServiceError

    started = time.perf_counter()
    try:
        result = converter.convert(fixture.data, fixture.name)
        markdown, ocr_pages = result.markdown, result.ocr_pages
    except ServiceError:  # e.g. NO_TEXT: a scan without OCR
        markdown, ocr_pages = "", []
    return markdown, ocr_pages, time.perf_counter() - started


def all_fixtures(quick: bool = False) -> list[Fixture]:
    """The fidelity fixtures and the office-quality scanned reports (skew, blur, JPEG; bench/office_scans.py);
    ``quick``: one 2-page office scan of the three (CI's smoke run checks the figures exist, not their value)."""
    office = office_fixtures()
    return fixtures() + (office[1:2] if quick else office)


def _office(accuracy: dict[str, float]) -> float | None:
    values = [value for name, value in accuracy.items() if name.startswith("report_")]
    return round(statistics.fmean(values), 4) if values else None


def measure_pipeline(converter: Converter, repeats: int, quick: bool = False) -> dict[str, Any]:
    cells = [0, 0]
    accuracy: dict[str, float] = {}
    glued: dict[str, int] = {}
    text_recall: dict[str, float] = {}
    seconds: dict[str, list[float]] = {"born-digital": [], "scan": [], "office-scan": []}
    pages = {"born-digital": 0, "scan": 0, "office-scan": 0}
    for fixture in all_fixtures(quick):
        runs = [_convert(converter, fixture) for _ in range(repeats)]
        markdown = runs[0][0]
        seconds[fixture.kind].append(statistics.median(run[2] for run in runs))
        pages[fixture.kind] += fixture.pages
        for table in fixture.tables:
            found, total = cell_recall(table, markdown)
            cells[0] += found
            cells[1] += total
        if fixture.kind in ("scan", "office-scan"):
            accuracy[fixture.name] = round(char_accuracy("\n".join(fixture.lines), _text(markdown)), 4)
            glued[fixture.name] = glued_words("\n".join(fixture.lines), _text(markdown))
        elif fixture.lines:
            flat = _norm(markdown)
            text_recall[fixture.name] = sum(_norm(line) in flat for line in fixture.lines) / len(fixture.lines)
    return {
        "table_cell_recall": round(cells[0] / cells[1], 4) if cells[1] else None,
        "table_cells": {"found": cells[0], "expected": cells[1]},
        "ocr_char_accuracy": accuracy,
        "ocr_char_accuracy_mean": round(statistics.fmean(accuracy.values()), 4) if accuracy else None,
        "office_scan_char_accuracy_mean": _office(accuracy),
        "ocr_glued_words": glued,
        "text_line_recall": text_recall,
        "pages_per_s": {kind: round(pages[kind] / sum(seconds[kind]), 2) for kind in seconds if sum(seconds[kind])},
        "median_s_per_file": {kind: round(statistics.median(values), 3) for kind, values in seconds.items()},
    }


BEFORE = "embedded (OCR before issue 21)"
SMALL = "embedded, PP-OCRv6 small (the default before tiny)"


def _pipelines() -> dict[str, ConverterOptions | str]:
    from docling_service.converter import ConverterOptions
    from docling_service.ocr import OcrOptions

    artifacts = os.environ.get("DOCLING_ARTIFACTS_PATH")
    ocr = OcrOptions(page_threads=os.cpu_count() or 1)
    return {
        "text-only": ConverterOptions(do_ocr=False, tables=False),
        # Issue 21's starting point: one page at a time, whole-page detection, the line classifier on.
        BEFORE: ConverterOptions(
            ocr=OcrOptions(
                page_threads=1, det_side=0, use_cls=True, rec_batch=6, mem_arena=False, model="small", despeckle=False
            ),
            tables=True,
        ),
        # The default's settings with the model the rapidocr wheel ships and no median filter (the default before).
        SMALL: ConverterOptions(ocr=replace(ocr, model="small", despeckle=False)),
        "embedded": ConverterOptions(ocr=ocr),
        "standard": ConverterOptions(artifacts_path=Path(artifacts), ocr=ocr)
        if artifacts
        else "no models here; the default docling image has them (DOCLING_ARTIFACTS_PATH)",
    }


def measure(repeats: int = 3, quick: bool = False) -> dict[str, Any]:
    """Every pipeline on the generated fixtures; warm-up conversions first (model loading is not timed).
    ``quick`` (CI's smoke run): one office scan, and neither the OCR settings from before issue 21 (minutes of
    OCR) nor the small model."""
    out: dict[str, Any] = {
        "fixtures": [{"name": f.name, "kind": f.kind, "pages": f.pages} for f in all_fixtures(quick)],
        "repeats": repeats,
        "pipelines": {},
    }
    for name, options in _pipelines().items():
        if quick and name in (BEFORE, SMALL):
            continue
        if isinstance(options, str):
            out["pipelines"][name] = {"unavailable": options}
            continue
        from docling_service.converter import Converter

        converter = Converter(options)
        converter.start()
        if name == "standard" and converter.pdf_pipeline != "standard":
            out["pipelines"][name] = {"unavailable": "; ".join(converter.startup_warnings)}
            continue
        for fixture in (fixtures()[0], fixtures()[-1]):
            _convert(converter, fixture)  # warm-up: the PDF parser's first document, the OCR models
        out["pipelines"][name] = measure_pipeline(converter, repeats, quick)
    return out


def report_lines(pdf: dict[str, Any]) -> list[str]:
    """The PDF fidelity section of the benchmark report (Markdown)."""
    names = ", ".join(f"`{f['name']}`" for f in pdf["fixtures"])
    lines = ["", f"**PDF fidelity** (generated fixtures: {names}; median of {pdf['repeats']} conversion(s)):", ""]
    lines += [
        "| pipeline | table-cell recall | OCR char accuracy | born-digital pages/s | scanned pages/s "
        "| office scans: char accuracy | office scans: pages/s |"
    ]
    lines += ["|---|---|---|---|---|---|---|"]
    for name, row in pdf["pipelines"].items():
        if "unavailable" in row:
            lines.append(f"| {name} | n/a | n/a | n/a | n/a: {row['unavailable'][:120]} | n/a | n/a |")
            continue
        speed = row["pages_per_s"]
        # A pipeline that reads nothing from a scan (refused: no text) has no scan speed worth showing.
        scans = f"{speed.get('scan', 0):.2f}" if row["ocr_char_accuracy_mean"] else "refused (no text)"
        office = row.get("office_scan_char_accuracy_mean")
        office_speed = f"{speed.get('office-scan', 0):.2f}" if office else "refused (no text)"
        lines.append(
            f"| {name} | {_pct(row['table_cell_recall'])} | {_pct(row['ocr_char_accuracy_mean'])} | "
            f"{speed.get('born-digital', 0):.1f} | {scans} | {_pct(office)} | {office_speed} |"
        )
    return lines


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="conversions per file (the median is timed)")
    parser.add_argument("--out", type=Path, help="write the JSON here as well")
    args = parser.parse_args(argv)
    result = measure(args.repeats)
    if args.out:
        write_json(args.out, result)
    print("\n".join(report_lines(result)))


if __name__ == "__main__":
    main()
