"""Deep HTML with and without the nesting pre-check, in the same process and run (issue 21).

    python -m bench.experiments.html_nesting --runs 5 --old-depths 2000,20000,60000

"new" is Converter.convert as configured by default (refused by the pre-check); "old" is the same converter
with the limits out of reach, so docling's HTML reader gets the file as it did before the check.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from docling_service.converter import Converter, ConverterOptions
from docling_service.html_nesting import HtmlLimits
from servicekit import ServiceError


def deep_page(levels: int) -> bytes:
    return b"<html><body>" + b"<div>" * levels + b"deep" + b"</div>" * levels + b"</body></html>"


def timed(converter: Converter, data: bytes) -> tuple[float, str]:
    started = time.perf_counter()
    try:
        converter.convert(data, "deep.html")
        outcome = "converted"
    except ServiceError as exc:
        outcome = exc.code
    return time.perf_counter() - started, outcome


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--old-depths", default="2000,20000")  # 60,000 ran past 25 min old
    args = parser.parse_args()
    new = Converter(ConverterOptions(do_ocr=False))
    old = Converter(ConverterOptions(do_ocr=False, html=HtmlLimits(max_depth=10**9, max_depth_total=10**15)))
    new.start()
    old.start()
    print(f"load average before: {os.getloadavg()}")
    for levels in (int(depth) for depth in args.old_depths.split(",")):
        data = deep_page(levels)
        runs = sorted(timed(new, data)[0] for _ in range(args.runs))
        p95 = runs[min(len(runs) - 1, round(0.95 * (len(runs) - 1)))]
        old_s, old_outcome = timed(old, data)
        median, new_outcome = statistics.median(runs), timed(new, data)[1]
        print(
            f"{levels:>6} levels ({len(data) // 1024} KB): new {new_outcome} median {median:.2f} s "
            f"p95 {p95:.2f} s ({args.runs} runs); old {old_outcome} {old_s:.1f} s (1 run); "
            f"ratio {old_s / median:.0f}x; load {os.getloadavg()[0]:.1f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
