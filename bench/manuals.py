"""Real manuals read right: outline against the PDF's bookmarks, letters against pdftotext (issue 38).

Each manual is a PDF that a Debian package installs, made by a generator nobody here wrote (pdfTeX/LaTeX,
dblatex, Apache FOP, Texinfo, Word). Each is converted by the docling service's converter (the native
pipeline, as the embedded server runs it) and measured:

- ``bookmarks_right``: share of the PDF's bookmarks found as a heading of the bookmark's level on its page;
- ``false_headings``: share of the headings that are no bookmark (a code comment, a formula, a running head);
- ``letters_differ``: letters whose count differs from pdftotext's reading of the same PDF (each letter
  counted per character, NFC, both sides), and ``split_diacritics``: spacing accents left uncomposed;
- ``sections_exact``: share of bookmarked sections whose read (the heading to the next heading of its level
  or above) holds exactly the bookmarks under it, and ends on the page the bookmarks say.

``--set tune`` are the manuals the rules were tuned on, ``--set holdout`` the others, measured after.
Needs poppler-utils (pdftotext, pdfinfo) and the -doc packages named below (apt-get install ...).

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
]
# A spacing accent before a letter: an accent the text layer left apart from its letter ("Br" U+00A8 "oker").
SPLIT = re.compile("[\u00a8\u00b4\u00b8\u00af\u02c6\u02dc\u02c7\u02d8\u02d9\u02da\u02dd\u02db] ?[^\\W\\d_]")


@dataclass
class Report:
    name: str
    set: str
    generator: str
    pages: int
    bookmarks: int
    headings: int
    bookmarks_right: float | None
    false_headings: float | None
    letters: int
    letters_differ: int
    split_diacritics: int
    sections_exact: float | None
    levels_known: bool
    code_blocks: int
    convert_s: float
    sample: dict[str, Any]


def _read(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if path.suffix == ".gz" else data


def _generator(pdf: Path) -> str:
    info = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True, check=True).stdout
    fields = dict(line.split(":", 1) for line in info.splitlines() if ":" in line)
    return f"{fields.get('Creator', '').strip()} / {fields.get('Producer', '').strip()}"


def _letters(text: str) -> Counter[str]:
    return Counter(c for c in unicodedata.normalize("NFC", text) if c.isalpha())


def _sections_exact(blocks: list[Any], bookmarks: list[Any], matched: dict[int, int]) -> tuple[float | None, dict]:
    """Share of matched bookmarks whose section (by the converted headings' levels) holds exactly the matched
    bookmarks under it; and the page range of each section, by bookmark title, for the report's samples."""
    heading_at = {block_index: mark for mark, block_index in matched.items()}
    headings = [i for i, b in enumerate(blocks) if b.kind == "heading"]
    exact = 0
    ranges: dict[str, tuple[int | None, int | None]] = {}
    for mark, block_index in matched.items():
        level = blocks[block_index].level
        inside: set[int] = set()
        end_block = len(blocks)
        for other in headings:
            if other <= block_index:
                continue
            if (blocks[other].level or 1) <= (level or 1):
                end_block = other
                break
            if other in heading_at:
                inside.add(heading_at[other])
        expected: set[int] = set()
        for later in range(mark + 1, len(bookmarks)):
            if bookmarks[later].level <= bookmarks[mark].level:
                break
            if later in matched:
                expected.add(later)
        exact += inside == expected
        pages = [b.page for b in blocks[block_index:end_block] if b.page is not None]
        ranges.setdefault(bookmarks[mark].title, (min(pages, default=None), max(pages, default=None)))
    return (exact / len(matched) if matched else None), ranges


def measure(name: str, path: Path, which: str, converter: Any, workdir: Path) -> Report:
    from docling_service.pdf_outline import _key, _matches, read_bookmarks

    data = _read(path)
    pdf = workdir / f"{name}.pdf"
    pdf.write_bytes(data)
    reference = subprocess.run(["pdftotext", "-enc", "UTF-8", str(pdf), "-"], capture_output=True, check=True)
    started = time.perf_counter()
    result = converter.convert(data, f"{name}.pdf")
    seconds = time.perf_counter() - started
    bookmarks = read_bookmarks(data)
    blocks = result.blocks
    headings = [i for i, b in enumerate(blocks) if b.kind == "heading"]
    matched: dict[int, int] = {}  # bookmark -> heading block
    used: set[int] = set()
    for mark, bookmark in enumerate(bookmarks):
        title = _key(bookmark.title)
        near = [i for i in headings if i not in used and blocks[i].page in (bookmark.page, bookmark.page + 1)]
        same = [i for i in near if _key(blocks[i].text) == title]
        found = next(iter(same or [i for i in near if _matches(_key(blocks[i].text), title)]), None)
        if found is not None:
            used.add(found)
            if blocks[found].level == bookmark.level:
                matched[mark] = found
    ours = "\n".join(b.text for b in blocks)
    mine, theirs = _letters(ours), _letters(reference.stdout.decode("utf-8", "replace"))
    differ = sum(((mine - theirs) + (theirs - mine)).values())
    exact, ranges = _sections_exact(blocks, bookmarks, matched)
    sample = {title: ranges[title] for title in ("II Plotting styles", "I Gnuplot") if title in ranges}
    return Report(
        name=name, set=which, generator=_generator(pdf), pages=result.page_count or 0, bookmarks=len(bookmarks),
        headings=len(headings),
        bookmarks_right=round(len(matched) / len(bookmarks), 4) if bookmarks else None,
        false_headings=round((len(headings) - len(used)) / len(headings), 4) if bookmarks and headings else None,
        letters=sum(theirs.values()), letters_differ=differ,
        split_diacritics=len(SPLIT.findall(ours)),
        sections_exact=round(exact, 4) if exact is not None else None, levels_known=result.levels_known,
        code_blocks=sum(b.kind == "code" for b in blocks), convert_s=round(seconds, 2), sample=sample,
    )  # fmt: skip


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
        report = measure(name, path, which, converter, workdir)
        reports.append(report)
        print(json.dumps(asdict(report), ensure_ascii=False))
    if args.out:
        write_json(args.out, [asdict(r) for r in reports], indent=1)


if __name__ == "__main__":
    main()
