"""What reading OCR lines column by column costs a scan's conversion: the same converter, the column cut on and off
(docling_service.reading_order.column_order replaced by the order RapidOCR gave), alternated.

    python -m bench.experiments.ocr_order_ab --pdf SCAN.pdf --rounds 6 --out bench/experiments/results/ocr_order_ab.json

Take reported figures on a quiet machine (python -m bench.quiet -- ...; docs/evidence.md, "What is not done").
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..results_io import public


def _as_read(boxes: Sequence[Any]) -> list[int]:
    return list(range(len(boxes)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pdf", type=Path, required=True, help="a PDF without a text layer (a scan)")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    import docling_service.ocr as ocr
    from docling_service.converter import Converter, ConverterOptions

    cut = ocr.column_order
    data = args.pdf.read_bytes()
    converter = Converter(ConverterOptions())
    converter.start()
    converter.convert(data, "warm.pdf")
    seconds: dict[str, list[float]] = {"columns": [], "as_read": []}
    for round_ in range(args.rounds):
        for mode in ("columns", "as_read") if round_ % 2 == 0 else ("as_read", "columns"):
            ocr.column_order = cut if mode == "columns" else _as_read
            started = time.perf_counter()
            converter.convert(data, "scan.pdf")
            seconds[mode].append(round(time.perf_counter() - started, 3))
    ocr.column_order = cut
    report = {"pdf": str(args.pdf), "load_average": os.getloadavg()[0], "seconds": seconds,
              "median": {mode: statistics.median(values) for mode, values in seconds.items()}}  # fmt: skip
    text = json.dumps(public(report), indent=1)
    if args.out:
        args.out.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
