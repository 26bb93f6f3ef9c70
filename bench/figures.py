"""Figures whole (issue 47, point 4): the figure units of the native pipeline against boxes drawn by hand.

bench/figures.json holds 55 captioned figures of 9 real PDFs from Debian packages (pdfTeX, LuaTeX/ConTeXt, dvips
through Acrobat Distiller, troff through Apple's pstopdf, groff through Ghostscript): vector drawings (graphs, trees,
diagrams), vector charts, raster screenshots, framed screens and listings captioned as figures, each box drawn by hand
on the rendered page (44 were measured while the code was written, "tune"; 11 were labelled before the code was run on
them and measured once, "holdout"). Every PDF is converted whole by the docling service's converter (the embedded
default, the model-free native pipeline); a labelled figure is found when a figure unit of its page whose caption
begins as the label's ("Figure 4" matches "Figure 4: Drawing of fancy graph", not "Figure 41") has a box whose
intersection over union with the hand-drawn box is at least 0.8 (``MIN_IOU``). Reported per generator, per kind and
per set: the share found, the median IoU, and the figures whose caption has no unit at all.

    python -m bench.figures --out bench/results/figures.json
    python -m bench.figures --checkout OTHER_CHECKOUT --out bench/results/figures_before.json
    python -m bench.figures --checkout OTHER_CHECKOUT --rounds 3 --out bench/results/figures_cost.json

The packages (graphviz-doc, db5.3-doc, cvs, texlive-base) are read from /usr/share/doc when installed, else from
``--roots`` (``python -m bench.debian_docs --into DIR PACKAGE...``). ``--checkout`` measures another checkout's
converter (its services and libs on PYTHONPATH, in a child process): the code before a change, in the same sitting.
``--rounds N`` converts the PDFs N times with this checkout and ``--checkout`` in turn and reports, per page, the whole
conversion's and the units step's (tables' captions and figures: ``units.with_units``) median seconds of each.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from .debian_docs import converted, labelled_summary, locate, read_pdf

HERE = Path(__file__).resolve().parent
LABELS = HERE / "figures.json"
MIN_IOU = 0.8


def iou(a: list[float], b: list[float]) -> float:
    """Intersection over union of two boxes (x0, top, x1, bottom)."""
    width, height = min(a[2], b[2]) - max(a[0], b[0]), min(a[3], b[3]) - max(a[1], b[1])
    if width <= 0 or height <= 0:
        return 0.0
    inter = width * height
    return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter)


def captioned(caption: str, label: str) -> bool:
    """Whether a unit's caption begins as the label's: "Figure 4" then no further digit."""
    return re.match(re.escape(label) + r"(?![\d.]\d)", " ".join(caption.split())) is not None


def emit(paths: dict[str, str]) -> dict[str, Any]:
    """Each PDF converted by the docling service's converter: its figure units, pages and seconds (the child's job)."""
    import docling_service.native_pdf as native_pdf
    from docling_service.converter import Converter, ConverterOptions

    spent = [0.0]
    step = native_pdf.with_units

    def timed(*args: Any, **kwargs: Any) -> Any:  # the units step's seconds, the conversion unchanged
        began = time.perf_counter()
        try:
            return step(*args, **kwargs)
        finally:
            spent[0] += time.perf_counter() - began

    native_pdf.with_units = timed
    converter = Converter(ConverterOptions())
    converter.start()
    out: dict[str, Any] = {}
    for file, path in paths.items():
        spent[0] = 0.0
        began = time.perf_counter()
        result = converter.convert(read_pdf(Path(path)), Path(file).name.removesuffix(".gz"))
        figures = [
            {"page": u.page, "box": list(u.box), "caption": u.caption} for u in result.units if u.kind == "figure"
        ]
        out[file] = {"figures": figures, "pages": result.page_count or 0,
                     "convert_s": round(time.perf_counter() - began, 3), "units_s": round(spent[0], 4)}  # fmt: skip
    return out


def measure(labels: list[dict[str, Any]], done: dict[str, Any]) -> list[dict[str, Any]]:
    reports = []
    for label in labels:
        found = done.get(label["file"])
        if found is None:
            reports.append({"id": label["id"], "generator": label["generator"], "missing": label["package"]})
            continue
        on_page = [f for f in found["figures"] if f["page"] == label["page"]]
        named = [f for f in on_page if captioned(f["caption"], label["caption"])]
        best = max((iou(label["box"], f["box"]) for f in named), default=0.0)
        box = max(named, key=lambda f: iou(label["box"], f["box"]))["box"] if named else None
        reports.append({"id": label["id"], "generator": label["generator"], "kind": label["kind"],
                        "set": label["set"], "iou": round(best, 3), "found": best >= MIN_IOU,
                        "unit": bool(named), "box": box})  # fmt: skip
    return reports


def _totals(reports: list[dict[str, Any]]) -> dict[str, Any]:
    measured = [r for r in reports if "missing" not in r]
    found = sum(r["found"] for r in measured)
    return {
        "figures": len(measured), "found": found,
        "share": round(found / len(measured), 4) if measured else None,
        "median_iou": round(statistics.median(r["iou"] for r in measured), 3) if measured else None,
        "no_unit": sum(not r["unit"] for r in measured),
    }  # fmt: skip


def summary(reports: list[dict[str, Any]]) -> dict[str, Any]:
    return labelled_summary(reports, _totals)


def cost(paths: dict[str, str], checkout: Path, rounds: int) -> dict[str, Any]:
    """This checkout and ``checkout`` in turn, ``rounds`` times: median seconds per page of the whole conversion and
    of the units step, each side."""
    seconds: dict[str, dict[str, list[float]]] = {"this": defaultdict(list), "other": defaultdict(list)}
    sides = [("this", HERE.parent), ("other", checkout)]  # each in a child process of its own
    for turn in range(rounds):
        for side, where in sides if turn % 2 == 0 else sides[::-1]:  # which goes first alternates too
            done = converted("bench.figures", paths, where, emit)
            pages = sum(d["pages"] for d in done.values())
            seconds[side]["convert"].append(sum(d["convert_s"] for d in done.values()) / pages)
            seconds[side]["units"].append(sum(d["units_s"] for d in done.values()) / pages)
    return {side: {k: round(statistics.median(v) * 1000, 2) for k, v in per.items()} for side, per in seconds.items()}


def _print(result: dict[str, Any]) -> None:
    print(f"| generator | figures | found (IoU >= {MIN_IOU}) | median IoU | no unit |")
    print("|---|---|---|---|---|")
    summary = result["summary"]
    named = [*summary["by_generator"].items(), *(("kind: " + k, v) for k, v in summary["by_kind"].items()),
             *(("set: " + k, v) for k, v in summary["by_set"].items())]  # fmt: skip
    for name, totals in [*named, ("all", summary["all"])]:
        share = f"{totals['found']} ({totals['share']:.0%})" if totals["share"] is not None else "-"
        print(f"| {name} | {totals['figures']} | {share} | {totals['median_iou']} | {totals['no_unit']} |")
    if summary["missing"]:
        print("missing packages:", ", ".join(summary["missing"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--roots", type=Path, nargs="*", default=[], help="folders packages were unpacked into")
    parser.add_argument("--checkout", type=Path, help="measure this checkout's converter instead of this one's")
    parser.add_argument("--rounds", type=int, default=0, help="with --checkout: time both, alternating, N rounds")
    parser.add_argument("--set", choices=("tune", "holdout"), help="only the figures of this set")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--emit", type=Path, help=argparse.SUPPRESS)  # the child's request (with --checkout)
    args = parser.parse_args()
    if args.emit is not None:
        args.out.write_text(json.dumps(emit(json.loads(args.emit.read_text()))))
        return
    labels = [f for f in json.loads(LABELS.read_text(encoding="utf-8"))["figures"] if args.set in (None, f["set"])]
    paths = {f["file"]: str(path) for f in labels if (path := locate(f["file"], args.roots)) is not None}
    began = time.time()
    if args.rounds:
        if args.checkout is None:
            parser.error("--rounds needs --checkout: the other side of the comparison")
        load = [round(v, 2) for v in os.getloadavg()]
        timing = {"command": f"python -m bench.figures --checkout ... --rounds {args.rounds}", "load_before": load,
                  "ms_per_page": cost(paths, args.checkout, args.rounds),
                  "load_after": [round(v, 2) for v in os.getloadavg()]}  # fmt: skip
        print(json.dumps(timing))
        if args.out:
            args.out.write_text(json.dumps(timing, indent=1) + "\n")
        return
    reports = measure(labels, converted("bench.figures", paths, args.checkout, emit))
    result = {
        "command": "python -m bench.figures" + (" --checkout ..." if args.checkout else ""),
        "measured": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(began)),
        "load_average": [round(v, 2) for v in os.getloadavg()],
        "summary": summary(reports), "figures": reports,
    }  # fmt: skip
    _print(result)
    if args.out:
        args.out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
