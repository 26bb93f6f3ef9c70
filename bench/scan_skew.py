"""Skewed scans: do a slightly rotated page's line boxes still mark one printed line each, and what does deskew cost?

    apt-get install -y installation-guide-amd64                # Debian's installation guide (the real pages)
    python -m bench.scan_skew --out bench/results/scan_skew.json
    python -m bench.scan_skew --angles 1 --pages 1             # a quick look

Real pages (Debian's installation guide, two full-width prose pages; the memo fixture) are scanned as
bench.pdf_fixtures.scan_image does (150 dpi, blurred, speckled), turned by 0.5-3 degrees either way, and read
through the converter twice, deskew off (the code before, ``DOCLING_OCR_DESKEW=false``) and on, alternately.
Against the same page read unturned, each reading gives:

- the median height of its line boxes (the page's regions, in points) over the unturned page's, and how many
  boxes take in more than one printed line (a box holds a line when it holds a point of the line's middle: the
  unturned reading's line middles, turned as the page was);
- OCR similarity to the unturned reading (bench.pdf_fidelity.char_accuracy of the Markdown text).

The cost of deskewing (estimating the angle and turning the page straight, deskew.py) is timed on each turned
page alone: median and p95 in ms.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import statistics
import time
from pathlib import Path
from typing import Any

from docling_service.converter import Converter, ConverterOptions
from docling_service.deskew import skew_angle, straighten
from docling_service.options import OcrOptions
from PIL import Image

from .pdf_fidelity import _text, char_accuracy
from .pdf_fixtures import image_pdf, memo_pdf, scan_image
from .results_io import write_json

INSTALL_GUIDE = Path("/usr/share/doc/installation-guide-amd64/en/install.en.pdf.gz")
DPI = 150  # the scan's resolution, and the resolution image_pdf gives its page: points = pixels * 72 / DPI
ANGLES = (0.5, -0.5, 1.0, -1.0, 2.0, -2.0, 3.0, -3.0)
Box = tuple[float, float, float, float]


def pages() -> list[tuple[str, bytes, int]]:
    """(name, PDF, page number) of the pages scanned: full-width prose lines (the longest slant) and a memo."""
    found = [("memo", memo_pdf(), 1)]
    if INSTALL_GUIDE.exists():
        guide = gzip.decompress(INSTALL_GUIDE.read_bytes())
        found = [("install-guide p12", guide, 12), ("install-guide p25", guide, 25), *found]
    return found


def _boxes(result: Any) -> list[Box]:
    """The page's line boxes in scan pixels."""
    factor = DPI / 72
    return [(b[0] * factor, b[1] * factor, b[2] * factor, b[3] * factor) for b in (r.box for r in result.regions)]


def _middles(boxes: list[Box], size: tuple[int, int], angle: float, turned: tuple[int, int]) -> list[list[Any]]:
    """Points along each line's middle (every 4 px), on the page turned by ``angle`` (PIL's rotate, expanded)."""
    cos, sin = math.cos(math.radians(angle)), math.sin(math.radians(angle))
    lines = []
    for left, top, right, bottom in boxes:
        y = (top + bottom) / 2 - size[1] / 2
        points = []
        for step in range(int((right - left) / 4) + 1):
            x = left + 4 * step - size[0] / 2
            points.append((turned[0] / 2 + x * cos + y * sin, turned[1] / 2 - x * sin + y * cos))
        lines.append(points)
    return lines


def lines_held(box: Box, middles: list[list[Any]]) -> int:
    return sum(any(box[0] <= x <= box[2] and box[1] <= y <= box[3] for x, y in line) for line in middles)


def _convert(converter: Converter, image: Image.Image) -> Any:
    return converter.convert(image_pdf(image), "scan.pdf")


def _converters() -> dict[str, Converter]:
    out = {}
    for name, deskew in (("before", False), ("after", True)):
        out[name] = Converter(ConverterOptions(ocr=OcrOptions(page_threads=1, deskew=deskew)))
        out[name].start()
    return out


def measure_page(converters: dict[str, Converter], pdf: bytes, page: int, angles: list[float]) -> dict[str, Any]:
    straight = scan_image(pdf, dpi=DPI, page=page)
    truth = _convert(converters["before"], straight)
    truth_boxes, truth_text = _boxes(truth), _text(truth.markdown)
    truth_height = statistics.median(b[3] - b[1] for b in truth_boxes)
    rows: list[dict[str, Any]] = []
    costs: list[float] = []
    for angle in angles:
        image = scan_image(pdf, dpi=DPI, page=page, angle=angle)
        middles = _middles(truth_boxes, straight.size, angle, image.size)
        started = time.perf_counter()
        found = skew_angle(image)
        straighten(image, found)
        costs.append((time.perf_counter() - started) * 1000)
        row: dict[str, Any] = {"angle": angle, "estimated": -found}
        for name, converter in converters.items():
            result = _convert(converter, image)
            boxes = _boxes(result)
            row[name] = {
                "boxes": len(boxes),
                "height_ratio": round(statistics.median(b[3] - b[1] for b in boxes) / truth_height, 3),
                "multi_line_boxes": sum(lines_held(box, middles) > 1 for box in boxes),
                "similarity": round(char_accuracy(truth_text, _text(result.markdown)), 4),
            }
        rows.append(row)
        print(json.dumps(row), flush=True)
    unturned_multi = sum(lines_held(box, _middles(truth_boxes, straight.size, 0, straight.size)) > 1
                         for box in truth_boxes)  # fmt: skip
    return {"unturned_boxes": len(truth_boxes), "unturned_multi_line_boxes": unturned_multi, "angles": rows,
            "deskew_ms": costs}  # fmt: skip


def _summary(report: dict[str, Any]) -> dict[str, Any]:
    rows = [row for page in report["pages"].values() for row in page["angles"]]
    costs = sorted(ms for page in report["pages"].values() for ms in page["deskew_ms"])
    out: dict[str, Any] = {}
    for name in ("before", "after"):
        out[name] = {
            "worst_height_ratio": max(row[name]["height_ratio"] for row in rows),
            "median_height_ratio": statistics.median(row[name]["height_ratio"] for row in rows),
            "multi_line_boxes": sum(row[name]["multi_line_boxes"] for row in rows),
            "boxes": sum(row[name]["boxes"] for row in rows),
            "worst_similarity_drop": round(1 - min(row[name]["similarity"] for row in rows), 4),
        }
    out["deskew_ms"] = {"median": round(statistics.median(costs), 1),
                        "p95": round(costs[min(len(costs) - 1, round(0.95 * (len(costs) - 1)))], 1)}  # fmt: skip
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--angles", type=float, nargs="*", default=list(ANGLES))
    parser.add_argument("--pages", type=int, default=0, help="only the first N pages (0: all)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    converters = _converters()
    chosen = pages()[: args.pages or None]
    report: dict[str, Any] = {"dpi": DPI, "pages": {}}
    for name, pdf, page in chosen:
        print(name, flush=True)
        report["pages"][name] = measure_page(converters, pdf, page, args.angles)
    report["summary"] = _summary(report)
    print(json.dumps(report["summary"], indent=1))
    if args.out:
        write_json(args.out, report)


if __name__ == "__main__":
    main()
