"""Words as printed (issue 47, point 2): word pairs the converter glues, counted against pdftotext's words.

The PDFs of bench/table_rows.json (18 real PDFs from Debian packages; xdvipdfmx writes no space characters, and a
text layer's spacing is then read from the characters' gaps). Each is converted by the docling service's converter;
each page's text (its Markdown, by page spans, with the furniture beside it) is compared with poppler's reading of the
page (`pdftotext`, line-end hyphens joined): both with every space taken out, aligned letter by letter, and each word
boundary poppler has between two letters or digits is looked for in the converter's text.

- ``glued``: boundaries between two letters or digits that poppler has and the converter has not
  ("Laufenlassenlatexvonexample.tex"), per 10 pages;
- ``split``: boundaries the converter has and poppler has not (a word cut in two), per 10 pages.

    python -m bench.glued_words --roots DIR --out bench/results/glued_words.json
    python -m bench.glued_words --roots DIR --checkout OTHER_CHECKOUT --out bench/results/glued_words_before.json
    python -m bench.glued_words --speed 3 --pages 20 --only dotguide XACE install.en biblatex gnuplot R-lang

``--roots``: folders Debian packages were unpacked into (python -m bench.debian_docs --into DIR PACKAGE...), for those
not installed; ``--checkout`` measures another checkout's converter in a child process (the code before a change);
``--speed`` times the word gaps' cost instead (with and without them, alternate rounds).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import statistics
import subprocess
import tempfile
import time
import unicodedata
from collections import defaultdict
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from pathlib import Path
from typing import Any

from .debian_docs import converted, locate, read_pdf
from .table_rows import LABELS

HERE = Path(__file__).resolve().parent
_HYPHEN_BREAK = re.compile(r"(\w)-\s*\n\s*(\w)")
EXAMPLES = 8  # examples kept per PDF and kind
_MARKUP = re.compile(r"^#{1,6} |^- |^```.*$|\|---|\\(?=[#|*`])", re.M)


def _stream(text: str) -> tuple[str, list[int]]:
    """``text`` without its white space, and for each character of that stream the number of its word."""
    text = unicodedata.normalize("NFKC", text)
    chars: list[str] = []
    owner: list[int] = []
    for number, word in enumerate(text.split()):
        chars.extend(word)
        owner.extend([number] * len(word))
    return "".join(chars), owner


@dataclass
class Found:
    """Word boundaries between two letters or digits: those poppler has and the converter lost (glued), those the
    converter made and poppler has not (split), and a few of each as examples ("ours" for "theirs")."""

    glued: int = 0
    split: int = 0
    examples: dict[str, list[str]] = field(default_factory=lambda: {"glued": [], "split": []})

    def note(self, kind: str, ours: list[str], theirs: list[str], at: tuple[int, int]) -> None:
        setattr(self, kind, getattr(self, kind) + 1)
        if len(self.examples[kind]) < EXAMPLES:
            self.examples[kind].append(f"{ours[at[1]]!r} for {' '.join(theirs[at[0] - 1 : at[0] + 1])!r}"
                                       if kind == "glued" else
                                       f"{' '.join(ours[at[1] - 1 : at[1] + 1])!r} for {theirs[at[0]]!r}")  # fmt: skip


def compare(ours: str, theirs: str, found: Found | None = None) -> Found:
    """The word boundaries between two letters or digits of ``ours`` (the converter's) against ``theirs``
    (poppler's), letters aligned with every space taken out."""
    found = found if found is not None else Found()
    ours = _MARKUP.sub(" ", ours.replace("|", " "))
    theirs = _HYPHEN_BREAK.sub(r"\1\2", theirs)
    mine, my_words = _stream(ours)
    other, other_words = _stream(theirs)
    my_list, other_list = ours_words(ours), ours_words(theirs)
    for block in SequenceMatcher(None, other, mine, autojunk=False).get_matching_blocks():
        for offset in range(1, block.size):
            a, b = block.a + offset, block.b + offset
            if not (other[a - 1].isalnum() and other[a].isalnum()):
                continue
            theirs_break = other_words[a] != other_words[a - 1]
            mine_break = my_words[b] != my_words[b - 1]
            if theirs_break and not mine_break:
                found.note("glued", my_list, other_list, (other_words[a], my_words[b]))
            elif mine_break and not theirs_break:
                found.note("split", my_list, other_list, (other_words[a], my_words[b]))
    return found


def ours_words(text: str) -> list[str]:
    return unicodedata.normalize("NFKC", text).split()


def page_texts(converted: dict[str, Any]) -> dict[int, str]:
    """Each page's text as the converter gives it: its Markdown by page span, and its furniture."""
    texts: dict[int, str] = defaultdict(str)
    for span in converted["page_spans"]:
        texts[span["page"]] += " " + converted["markdown"][span["start"] : span["end"]]
    for line in converted.get("furniture") or []:
        texts[line["page"]] += " " + line["text"]
    return texts


def poppler_pages(pdf: Path) -> dict[int, str]:
    out = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    return dict(enumerate(out.split("\f"), start=1))


def emit(paths: dict[str, str]) -> dict[str, Any]:
    """Each PDF converted (the child's job with --checkout): its Markdown, page spans and furniture."""
    from docling_service.converter import Converter, ConverterOptions

    converter = Converter(ConverterOptions())
    converter.start()
    out = {}
    for file, path in paths.items():
        began = time.perf_counter()
        result = converter.convert(read_pdf(Path(path)), Path(file).name.removesuffix(".gz"))
        done = json.loads(result.model_dump_json(include={"markdown", "page_spans", "furniture", "page_count"}))
        out[file] = {**done, "convert_s": round(time.perf_counter() - began, 2)}
    return out


def _converted(paths: dict[str, str], checkout: Path | None) -> dict[str, Any]:
    return converted("bench.glued_words", paths, checkout, emit)


def measure(file: str, generator: str, converted: dict[str, Any], pdf: Path) -> dict[str, Any]:
    ours, theirs = page_texts(converted), poppler_pages(pdf)
    found = Found()
    for page, text in theirs.items():
        compare(ours.get(page, ""), text, found)
    pages = converted["page_count"] or len(theirs)
    return {"file": file, "generator": generator, "pages": pages, "glued": found.glued, "split": found.split,
            "glued_per_10_pages": round(10 * found.glued / pages, 2),
            "split_per_10_pages": round(10 * found.split / pages, 2),
            "convert_s": converted["convert_s"], "examples": found.examples}  # fmt: skip


def speed(paths: dict[str, str], rounds: int, pages: int) -> dict[str, Any]:
    """What reading word gaps costs: each PDF's first ``pages`` pages converted with and without it, in alternate
    rounds in one process (the same converter, warmed up), the median of each side and their ratio."""
    from docling_service import native_pdf
    from docling_service.converter import Converter, ConverterOptions
    from pypdf import PdfReader, PdfWriter

    converter = Converter(ConverterOptions())
    converter.start()
    cut = {}
    for file, path in paths.items():
        reader, writer = PdfReader(io.BytesIO(read_pdf(Path(path)))), PdfWriter()
        for page in reader.pages[:pages]:
            writer.add_page(page)
        out = io.BytesIO()
        writer.write(out)
        cut[file] = (out.getvalue(), min(pages, len(reader.pages)))
    real = native_pdf.spaced
    times: dict[str, list[float]] = {"with": [], "without": []}
    for round_ in range(2 * rounds + 1):
        side = ("with", "without")[round_ % 2]
        native_pdf.spaced = real if side == "with" else (lambda lines, _data: lines)  # type: ignore[assignment]  # the A/B's switch
        began = time.perf_counter()
        for file, (data, _) in cut.items():
            converter.convert(data, Path(file).name.removesuffix(".gz"))
        if round_:  # the first round warms the converter up
            times[side].append(time.perf_counter() - began)
    native_pdf.spaced = real
    total = sum(count for _, count in cut.values())
    medians = {side: statistics.median(values) for side, values in times.items()}
    return {"pdfs": len(cut), "pages": total, "rounds": rounds,
            "median_s": {side: round(value, 3) for side, value in medians.items()},
            "ms_per_page": {side: round(1000 * value / total, 1) for side, value in medians.items()},
            "ratio": round(medians["with"] / medians["without"], 3)}  # fmt: skip


def _totals(reports: list[dict[str, Any]]) -> dict[str, Any]:
    pages, glued, split = (sum(r[k] for r in reports) for k in ("pages", "glued", "split"))
    per_10 = {"glued_per_10_pages": round(10 * glued / pages, 2), "split_per_10_pages": round(10 * split / pages, 2)}
    return {"pdfs": len(reports), "pages": pages, "glued": glued, "split": split, **per_10}


def words(paths: dict[str, str], generators: dict[str, str], checkout: Path | None) -> dict[str, Any]:
    """Glued and split word pairs of each PDF, of each generator and in all."""
    began = time.time()
    converted = _converted(paths, checkout)
    with tempfile.TemporaryDirectory() as work:
        reports = []
        for index, (file, path) in enumerate(paths.items()):
            plain = Path(work) / f"{index}.pdf"  # pdftotext reads no gzip
            plain.write_bytes(read_pdf(Path(path)))
            reports.append(measure(file, generators[file], converted[file], plain))
    by_generator: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for report in reports:
        by_generator[report["generator"]].append(report)
    return {
        "command": "python -m bench.glued_words" + (" --checkout ..." if checkout else ""),
        "measured": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(began)),
        "load_average": [round(v, 2) for v in os.getloadavg()],
        "all": _totals(reports),
        "by_generator": {generator: _totals(group) for generator, group in sorted(by_generator.items())},
        "pdfs": reports,
        "missing": sorted(set(generators) - set(paths)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--roots", type=Path, nargs="*", default=[], help="folders packages were unpacked into")
    parser.add_argument("--checkout", type=Path, help="measure this checkout's converter instead of this one's")
    parser.add_argument("--only", nargs="*", default=[], help="only the PDFs whose path holds one of these")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--speed", type=int, metavar="ROUNDS", help="time the word gaps' cost instead (A/B rounds)")
    parser.add_argument("--pages", type=int, default=20, help="with --speed: the first pages of each PDF")
    parser.add_argument("--emit", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.emit is not None:
        args.out.write_text(json.dumps(emit(json.loads(args.emit.read_text()))))
        return
    generators = {t["file"]: t["generator"] for t in json.loads(LABELS.read_text(encoding="utf-8"))["tables"]}
    located = {
        file: locate(file, args.roots) for file in generators if not args.only or any(p in file for p in args.only)
    }
    paths = {file: str(path) for file, path in located.items() if path is not None}
    if args.speed:
        result = {"command": f"python -m bench.glued_words --speed {args.speed} --pages {args.pages}"
                  + (f" --only {' '.join(args.only)}" if args.only else ""),
                  "load_average": [round(v, 2) for v in os.getloadavg()],
                  **speed(paths, args.speed, args.pages)}  # fmt: skip
        print(json.dumps(result))
    else:
        result = words(paths, generators, args.checkout)
        print(json.dumps(result["all"]))
        for generator, totals in result["by_generator"].items():
            print(f"{generator} ({totals['pages']} pages): glued {totals['glued_per_10_pages']} per 10 pages, "
                  f"split {totals['split_per_10_pages']}")  # fmt: skip
    if args.out:
        args.out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
