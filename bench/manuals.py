"""Real manuals read right: outline against the manual's own (issues 38 and 51).

Each manual is a PDF or a set of HTML pages that a Debian package installs, made by a generator nobody here wrote
(PDF: pdfTeX/LaTeX, xdvipdfmx, dblatex, Apache FOP, Texinfo, Sphinx's LaTeX, Word; HTML: Texinfo, Sphinx,
mdBook, DocBook), in English, German, French and Spanish. Each is converted by the docling service's converter
(the native pipeline for PDFs, as the embedded server runs it). The reference is the manual's own outline: a
PDF's bookmarks, an HTML page's h1-h6, an EPUB's table of contents (bench/manual_html.py). Measured per manual
(an HTML manual: its pages together):

- ``found``: share of the reference headings found as a heading (a PDF's on its page or the next);
- ``level_right`` and ``page_right``: of those found, the share at the reference's level, on its page (PDF);
- ``bookmarks_right``: share of the reference found at its level and page (PDF: the bookmark's page or the next);
- ``false_headings``: share of the headings that are no reference heading (a code comment, a running head);
- ``duplicate_paths``: outline entries (get_document_outline's, bench/manual_outline.py) whose heading path an
  earlier entry has too; ``paths_readable``: share of the entries get_document_section(heading=their path) reads;
- ``chapter_reads``: share of the chapters (the top reference level; below the title where one heading tops the
  page) whose read by heading path holds every heading found under it and stops before the next chapter;
- ``letters_differ``: letters whose count differs from pdftotext's reading of the same PDF (each letter
  counted per character, NFC, both sides), and ``split_diacritics``: spacing accents left uncomposed;
- ``sections_exact``: share of bookmarked sections whose read (the heading to the next heading of its level
  or above) holds exactly the bookmarks under it, and ends on the page the bookmarks say.

``--set tune`` are the manuals the rules were tuned on, ``--set holdout`` the others, measured after.
Needs poppler-utils (pdftotext, pdfinfo) and the -doc packages named below and in bench/manual_html.py
(apt-get install ...). Figures: docs/pdf.md "Manuals".

    python -m bench.manuals --out bench/results/manuals.json
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import subprocess
import time
import unicodedata
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .manual_html import EPUB_MANUALS, HTML_MANUALS, epub_reference, reference_headings
from .manual_outline import Entry, Tally, tally
from .results_io import write_json

DOC = Path("/usr/share/doc")
# (name, path, set, Debian package): tuned on "tune", measured untouched on "holdout".
MANUALS = [
    ("gnuplot", DOC / "gnuplot/gnuplot.pdf", "tune", "gnuplot-doc"),
    ("install-en", DOC / "installation-guide-amd64/en/install.en.pdf.gz", "tune", "installation-guide-amd64"),
    ("xlfd", DOC / "xorg-docs/xlfd/xlfd.pdf.gz", "tune", "xorg-docs"),
    ("install-de", DOC / "installation-guide-amd64/de/install.de.pdf.gz", "holdout", "installation-guide-amd64"),
    ("install-fr", DOC / "installation-guide-amd64/fr/install.fr.pdf.gz", "holdout", "installation-guide-amd64"),
    ("nettle", DOC / "nettle-dev/nettle.pdf.gz", "holdout", "nettle-dev"),
    ("libtasn1", DOC / "libtasn1-doc/libtasn1.pdf", "holdout", "libtasn1-doc"),
    ("valgrind", DOC / "valgrind/valgrind_manual.pdf.gz", "holdout", "valgrind"),
    ("live-manual-de", DOC / "live-manual/pdf/live-manual.portrait.de.a4.pdf.gz", "holdout", "live-manual-pdf"),
    ("clips-interfaces", DOC / "clips-doc/interfaces_guide.pdf.gz", "holdout", "clips-doc"),
    ("r-intro-pdf", DOC / "r-doc-pdf/manual/R-intro.pdf", "holdout", "r-doc-pdf"),
    (
        "biblatex-de",
        DOC / "texlive-doc/latex/translation-biblatex-de/biblatex-de-Benutzerhandbuch.pdf",
        "holdout",
        "texlive-lang-german",
    ),
    ("why3", DOC / "why3-doc-pdf/manual.pdf", "holdout", "why3-doc-pdf"),
    ("amc-fr", DOC / "auto-multiple-choice/auto-multiple-choice.fr.pdf", "holdout", "auto-multiple-choice-doc-pdf"),
    (
        "packaging-guide-es",
        DOC / "ubuntu-packaging-guide-pdf-es/ubuntu-packaging-guide.pdf.gz",
        "holdout",
        "ubuntu-packaging-guide-pdf-es",
    ),
]
LANGUAGE = {"install-de": "de", "install-fr": "fr", "live-manual-de": "de", "biblatex-de": "de", "amc-fr": "fr",
            "packaging-guide-es": "es"}  # fmt: skip
# A spacing accent before a letter: an accent the text layer left apart from its letter ("Br" U+00A8 "oker").
SPLIT = re.compile("[\u00a8\u00b4\u00b8\u00af\u02c6\u02dc\u02c7\u02d8\u02d9\u02da\u02dd\u02db] ?[^\\W\\d_]")


@dataclass
class Report:
    name: str
    kind: str
    language: str
    set: str
    generator: str
    documents: int
    pages: int | None
    reference: int
    headings: int
    found: float | None
    level_right: float | None
    page_right: float | None
    bookmarks_right: float | None
    false_headings: float | None
    outline_sections: int
    duplicate_paths: int
    paths_readable: float | None
    chapters: int
    chapter_reads: float | None
    letters: int | None
    letters_differ: int | None
    split_diacritics: int
    levels_known: bool
    convert_s: float
    samples: dict[str, Any]


def _read(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if path.suffix == ".gz" else data


def _generator(pdf: Path) -> str:
    info = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True, check=True).stdout
    fields = dict(line.split(":", 1) for line in info.splitlines() if ":" in line)
    return f"{fields.get('Creator', '').strip()} / {fields.get('Producer', '').strip()}"


def _letters(text: str) -> Counter[str]:
    return Counter(c for c in unicodedata.normalize("NFC", text) if c.isalpha())


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def _report(name: str, kind: str, language: str, which: str, generator: str, tally: Tally, **more: Any) -> Report:
    return Report(
        name=name, kind=kind, language=language, set=which, generator=generator, reference=tally.reference,
        headings=tally.headings, found=_share(tally.found, tally.reference),
        level_right=_share(tally.level_right, tally.found),
        page_right=_share(tally.page_right, tally.found) if kind == "pdf" else None,
        bookmarks_right=_share(tally.at_level_and_page, tally.reference) if kind == "pdf" else None,
        false_headings=_share(tally.false_headings, tally.headings) if tally.reference else None,
        outline_sections=tally.sections,
        duplicate_paths=tally.duplicate_paths, paths_readable=_share(tally.readable, tally.sections),
        chapters=tally.chapters, chapter_reads=_share(tally.chapters_whole, tally.chapters),
        samples=tally.samples or {}, **more,
    )  # fmt: skip


def measure(name: str, path: Path, which: str, converter: Any, workdir: Path) -> Report:
    from docling_service.pdf_outline import read_bookmarks

    data = _read(path)
    pdf = workdir / f"{name}.pdf"
    pdf.write_bytes(data)
    reference = subprocess.run(["pdftotext", "-enc", "UTF-8", str(pdf), "-"], capture_output=True, check=True)
    started = time.perf_counter()
    result = converter.convert(data, f"{name}.pdf")
    seconds = time.perf_counter() - started
    entries = [Entry(b.title, b.level, b.page) for b in read_bookmarks(data)]
    ours = "\n".join(b.text for b in result.blocks)
    mine, theirs = _letters(ours), _letters(reference.stdout.decode("utf-8", "replace"))
    return _report(
        name, "pdf", LANGUAGE.get(name, "en"), which, _generator(pdf), tally(result, entries, name), documents=1,
        pages=result.page_count or 0, letters=sum(theirs.values()),
        letters_differ=sum(((mine - theirs) + (theirs - mine)).values()), split_diacritics=len(SPLIT.findall(ours)),
        levels_known=result.levels_known, convert_s=round(seconds, 2),
    )  # fmt: skip


def measure_html(name: str, language: str, generator: str, pages: list[Path], converter: Any) -> Report:
    total, seconds, split, known = Tally(), 0.0, 0, True
    for page in pages:
        data = page.read_bytes()
        started = time.perf_counter()
        result = converter.convert(data, page.name)
        seconds += time.perf_counter() - started
        entries = [Entry(text, level) for text, level in reference_headings(data)]
        total.add(tally(result, entries, page.name))
        split += len(SPLIT.findall(result.markdown))
        known = known and result.levels_known
    return _report(name, "html", language, "holdout", generator, total, documents=len(pages), pages=None,
                   letters=None, letters_differ=None, split_diacritics=split, levels_known=known,
                   convert_s=round(seconds, 2))  # fmt: skip


def measure_epub(name: str, language: str, generator: str, book: Path, converter: Any) -> Report:
    """An EPUB against its own table of contents (bench/manual_html.py); its levels as the book nests them."""
    data = book.read_bytes()
    started = time.perf_counter()
    result = converter.convert(data, book.name)
    seconds = time.perf_counter() - started
    entries = [Entry(label, depth) for label, depth in epub_reference(data)]
    return _report(name, "epub", language, "holdout", generator, tally(result, entries, book.name), documents=1,
                   pages=None, letters=None, letters_differ=None, split_diacritics=len(SPLIT.findall(result.markdown)),
                   levels_known=result.levels_known, convert_s=round(seconds, 2))  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", choices=["tune", "holdout", "all"], default="all")
    parser.add_argument("--only", nargs="*", help="manual names")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    from docling_service.converter import Converter, ConverterOptions

    converter = Converter(ConverterOptions())
    converter.start()
    workdir = Path(subprocess.run(["mktemp", "-d"], capture_output=True, text=True, check=True).stdout.strip())
    reports = []
    for name, path, which, package in MANUALS:
        if (args.set != "all" and which != args.set) or (args.only and name not in args.only):
            continue
        if not path.exists():
            print(f"{name}: {path} missing (apt-get install {package})")
            continue
        reports.append(measure(name, path, which, converter, workdir))
        print(json.dumps(asdict(reports[-1]), ensure_ascii=False), flush=True)
    for name, language, generator, package, pages in HTML_MANUALS:
        if args.set == "tune" or (args.only and name not in args.only):
            continue
        found = pages()
        if not found:
            print(f"{name}: no pages (apt-get install {package})")
            continue
        reports.append(measure_html(name, language, generator, found, converter))
        print(json.dumps(asdict(reports[-1]), ensure_ascii=False), flush=True)
    for name, language, generator, package, book in EPUB_MANUALS:
        if args.set == "tune" or (args.only and name not in args.only):
            continue
        if not book.exists():
            print(f"{name}: {book} missing (apt-get install {package})")
            continue
        reports.append(measure_epub(name, language, generator, book, converter))
        print(json.dumps(asdict(reports[-1]), ensure_ascii=False), flush=True)
    if args.out:
        write_json(args.out, [asdict(r) for r in reports], indent=1)


if __name__ == "__main__":
    main()
