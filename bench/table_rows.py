"""Tables as printed (issue 47, point 1): the native pipeline's Markdown tables against rows written down by hand.

bench/table_rows.json holds 54 tables of 17 real PDFs from Debian packages (LaTeX and Texinfo through pdfTeX, XeTeX and
xdvipdfmx, DBLaTeX, DocBook through Apache FOP; ruled, booktabs and unruled), each row written down from the page. Every
PDF is converted whole by the docling service's converter (the embedded default, the model-free native pipeline), and
each labelled table is compared with the best-matching Markdown table of its page (44 tables of 13 PDFs were read
while the code was written, "tune"; 10 of 4 more PDFs were labelled after it and measured unchanged, "holdout"):

- ``row_exact``: share of the labelled rows that come out as one Markdown row, every cell equal and no cell more;
- ``cell_exact``: share of the labelled cells equal to the cell in the same column of the row aligned with theirs
  (rows aligned in order, as many cells matched as possible);
- ``caption``: for a labelled caption, whether the table's unit carries it.

Cells are compared after NFKC, with quotes and dashes unified and white space kept only between two letters or
digits ("n, ne" equals "n,ne"; "label text" does not equal "labeltext"). Results per table, per generator and in all.

    python -m bench.debian_docs --into DIR texlive-publishers-doc texlive-lang-german texlive-latex-recommended-doc
    python -m bench.table_rows --roots DIR --out bench/results/table_rows.json
    python -m bench.table_rows --roots DIR --checkout OTHER_CHECKOUT --out bench/results/table_rows_before.json

The other packages (graphviz-doc, xorg-docs, installation-guide-amd64, zlib1g-dev, db5.3-doc, gnuplot-doc, r-doc-pdf)
are read from /usr/share/doc when installed, else from ``--roots``. ``--checkout`` measures another checkout's converter
(its services and libs on PYTHONPATH, in a child process): the code before a change, in the same sitting.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import time
import unicodedata
from pathlib import Path
from typing import Any

from .debian_docs import converted, labelled_summary, locate, read_pdf

HERE = Path(__file__).resolve().parent
LABELS = HERE / "table_rows.json"
# Typographic quotes, primes and dashes as their ASCII forms (written as escapes: they look alike).
_QUOTES = str.maketrans(dict.fromkeys("\u201c\u201d\u201e\u201f\u00ab\u00bb\u2033", '"')
                        | dict.fromkeys("\u2018\u2019\u201a\u201b\u00b4`\u2032", "'"))  # fmt: skip
_DASHES = str.maketrans(dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212", "-"))
_PIPE_SPLIT = re.compile(r"(?<!\\)\|")


def normal(cell: str) -> str:
    """A cell as compared: NFKC, quotes and dashes unified, white space only between two letters or digits."""
    text = unicodedata.normalize("NFKC", cell).translate(_QUOTES).translate(_DASHES).replace("\u00ad", "")
    words = text.split()
    out = ""
    for word in words:
        if out and out[-1].isalnum() and word[0].isalnum():
            out += " "
        out += word
    return out


def markdown_rows(text: str) -> list[list[str]]:
    """The rows of a GitHub pipe table (its delimiter row left out), cells unescaped."""
    rows = []
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("|") or re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", line):
            continue
        cells = _PIPE_SPLIT.split(line.strip("|"))
        rows.append([cell.strip().replace("\\|", "|").replace("\\\\", "\\") for cell in cells])
    return rows


def _trimmed(row: list[str]) -> list[str]:
    row = list(row)
    while row and not row[-1]:
        row.pop()
    return row


def score(label: list[list[str]], found: list[list[str]]) -> tuple[int, int]:
    """(rows exact, cells exact) of ``label`` against ``found``, rows aligned in order to match the most cells."""
    want = [[normal(c) for c in row] for row in label]
    have = [[normal(c) for c in row] for row in found]

    def equal(i: int, j: int) -> int:
        return sum(1 for k, cell in enumerate(want[i]) if cell == (have[j][k] if k < len(have[j]) else ""))

    n, m = len(want), len(have)
    best = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            best[i][j] = max(best[i - 1][j], best[i][j - 1], best[i - 1][j - 1] + equal(i - 1, j - 1))
    rows = cells = 0
    i, j = n, m
    while i > 0 and j > 0:  # walk the alignment back
        if best[i][j] == best[i - 1][j - 1] + equal(i - 1, j - 1) and equal(i - 1, j - 1) > 0:
            cells += equal(i - 1, j - 1)
            rows += _trimmed(want[i - 1]) == _trimmed(have[j - 1])
            i, j = i - 1, j - 1
        elif best[i][j] == best[i - 1][j]:
            i -= 1
        else:
            j -= 1
    return rows, cells


def emit(paths: dict[str, str]) -> dict[str, Any]:
    """Each PDF converted by the docling service's converter: its table blocks and units (the child's job)."""
    from docling_service.converter import Converter, ConverterOptions

    converter = Converter(ConverterOptions())
    converter.start()
    out: dict[str, Any] = {}
    for file, path in paths.items():
        began = time.perf_counter()
        result = converter.convert(read_pdf(Path(path)), Path(file).name.removesuffix(".gz"))
        tables = [{"page": b.page, "rows": markdown_rows(b.text), "start": b.start, "end": b.end}
                  for b in result.blocks if b.kind == "table"]  # fmt: skip
        units = [{"kind": u.kind, "page": u.page, "start": u.start, "end": u.end, "caption": u.caption}
                 for u in result.units if u.kind == "table"]  # fmt: skip
        out[file] = {"tables": tables, "units": units, "convert_s": round(time.perf_counter() - began, 2)}
    return out


def _converted(paths: dict[str, str], checkout: Path | None) -> dict[str, Any]:
    return converted("bench.table_rows", paths, checkout, emit)


def _caption_ok(label: dict[str, Any], table: dict[str, Any] | None, units: list[dict[str, Any]]) -> bool | None:
    if not label["caption"]:
        return None
    if table is None:
        return False
    held = [u for u in units if u["start"] <= table["start"] and table["end"] <= u["end"]]
    return any(normal(label["caption"]) in normal(u["caption"]) for u in held)


def measure(labels: list[dict[str, Any]], converted: dict[str, Any]) -> list[dict[str, Any]]:
    reports = []
    for label in labels:
        done = converted.get(label["file"])
        if done is None:
            reports.append({"id": label["id"], "generator": label["generator"], "missing": label["package"]})
            continue
        on_page = [t for t in done["tables"] if t["page"] == label["page"]]
        scored = [(score(label["rows"], t["rows"]), t) for t in on_page]
        (rows, cells), table = max(scored, key=lambda item: (item[0][1], item[0][0]), default=((0, 0), None))
        reports.append({
            "id": label["id"], "generator": label["generator"], "kind": label["kind"], "page": label["page"],
            "set": label["set"],
            "rows": len(label["rows"]), "row_exact": rows,
            "cells": sum(len(row) for row in label["rows"]), "cell_exact": cells,
            "found_rows": len(table["rows"]) if table else 0, "caption": _caption_ok(label, table, done["units"]),
        })  # fmt: skip
    return reports


def _totals(reports: list[dict[str, Any]]) -> dict[str, Any]:
    measured = [r for r in reports if "missing" not in r]
    rows, cells = sum(r["rows"] for r in measured), sum(r["cells"] for r in measured)
    captions = [r["caption"] for r in measured if r["caption"] is not None]
    return {
        "tables": len(measured), "rows": rows, "cells": cells,
        "row_exact": round(sum(r["row_exact"] for r in measured) / rows, 4) if rows else None,
        "cell_exact": round(sum(r["cell_exact"] for r in measured) / cells, 4) if cells else None,
        "tables_all_rows_exact": sum(r["row_exact"] == r["rows"] for r in measured),
        "captions_kept": f"{sum(captions)}/{len(captions)}",
    }  # fmt: skip


def summary(reports: list[dict[str, Any]]) -> dict[str, Any]:
    return labelled_summary(reports, _totals)


def _print(result: dict[str, Any]) -> None:
    print("| generator | tables | rows | row-exact | cell-exact | captions kept |")
    print("|---|---|---|---|---|---|")
    summary = result["summary"]
    named = [*summary["by_generator"].items(), *(("set: " + k, v) for k, v in summary["by_set"].items())]
    for name, totals in [*named, ("all", summary["all"])]:
        row_exact = f"{totals['row_exact']:.1%}" if totals["row_exact"] is not None else "-"
        cell_exact = f"{totals['cell_exact']:.1%}" if totals["cell_exact"] is not None else "-"
        kept = totals["captions_kept"]
        print(f"| {name} | {totals['tables']} | {totals['rows']} | {row_exact} | {cell_exact} | {kept} |")
    if result["summary"]["missing"]:
        print("missing packages:", ", ".join(result["summary"]["missing"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--roots", type=Path, nargs="*", default=[], help="folders packages were unpacked into")
    parser.add_argument("--checkout", type=Path, help="measure this checkout's converter instead of this one's")
    parser.add_argument("--only", nargs="*", help="table ids")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--emit", type=Path, help=argparse.SUPPRESS)  # the child's request (with --checkout)
    args = parser.parse_args()
    if args.emit is not None:
        args.out.write_text(json.dumps(emit(json.loads(args.emit.read_text()))))
        return
    labels = json.loads(LABELS.read_text(encoding="utf-8"))["tables"]
    labels = [t for t in labels if not args.only or t["id"] in args.only]
    paths = {t["file"]: str(path) for t in labels if (path := locate(t["file"], args.roots)) is not None}
    began = time.time()
    converted = _converted(paths, args.checkout)
    reports = measure(labels, converted)
    result = {
        "command": "python -m bench.table_rows" + (" --checkout ..." if args.checkout else ""),
        "measured": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(began)),
        "load_average": [round(v, 2) for v in os.getloadavg()],
        "summary": summary(reports), "tables": reports,
        "convert_s": {file: done["convert_s"] for file, done in converted.items()},
    }  # fmt: skip
    _print(result)
    if args.out:
        args.out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
