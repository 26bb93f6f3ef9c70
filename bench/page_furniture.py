"""Page furniture out of passages (issue 47, point 3): running heads, feet and page numbers in no passage.

The PDFs of bench/table_rows.json (17 real PDFs from Debian packages). Their furniture is written down here by hand
from the pages (``FURNITURE``: where on the page it is printed, and its text as a pattern), and found on every page in
poppler's reading (`pdftotext -bbox-layout`, independent of the pipeline). Each PDF is converted by the docling
service's converter and its Markdown chunked by the chunker (the default preset), as an ingest does:

- ``in_passages``: share of the furniture lines a passage holds (a region of the Markdown and the line share half the
  smaller box or more);
- ``furniture_only_pages``: passages that cite a page (their page range) where all they hold is furniture;
- ``taken_from_body``: lines the converter took for furniture that are not (on no furniture line's place).

    python -m bench.page_furniture --roots DIR --out bench/results/page_furniture.json
    python -m bench.page_furniture --roots DIR --checkout OTHER_CHECKOUT --out bench/results/page_furniture_before.json
"""

from __future__ import annotations

import argparse
import html
import json
import os
import re
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from .debian_docs import converted, locate, read_pdf
from .table_rows import LABELS

HERE = Path(__file__).resolve().parent
ANY = r".+"
# file: [(place, band in points from the page's edge, the furniture's text as printed)]
ACM_HEAD = r"The Name of the Title Is Hope|Conference acronym .XX, June 03.05, 2018, Woodstock, NY|Trovato et al\."
FURNITURE: dict[str, list[tuple[str, float, str]]] = {
    "graphviz/pdf/dotguide.pdf.gz": [("header", 60, r"dot User\u2019s Manual, January 5, 2015|\d+")],
    "graphviz/pdf/libguide.pdf.gz": [("header", 60, r"Graphviz Library Manual, August 21, 2014|\d+")],
    "xorg-docs/Xserver/XACE-Spec.pdf.gz": [("header", 55, r"XACE-Spec"), ("footer", 55, r"\d+")],
    "installation-guide-amd64/en/install.en.pdf.gz": [("header", 55, ANY), ("footer", 50, r"\d+|[ivxlc]+")],
    "installation-guide-amd64/de/install.de.pdf.gz": [("header", 55, ANY), ("footer", 50, r"\d+|[ivxlc]+")],
    "texlive-doc/latex/acmart/samples/sample-sigconf.pdf": [("header", 75, ACM_HEAD)],
    "texlive-doc/latex/acmart/samples/sample-xelatex.pdf": [("header", 75, ACM_HEAD)],
    "texlive-doc/latex/acmart/samples/sample-lualatex.pdf": [("header", 75, ACM_HEAD)],
    "texlive-doc/latex/acmart/samples/sample-acmsmall.pdf": [
        ("header", 75, r"111:\d+|Trovato et al\.|The Name of the Title Is Hope"),
        ("footer", 50, r"J\. ACM, Vol\. 37, No\. 4, Article 111\. Publication date: August 2018\."),
    ],
    "zlib1g-dev/crc-doc.1.0.pdf.gz": [("footer", 100, r"\d+")],
    "texlive-doc/latex/booktabs/booktabs.pdf": [("footer", 150, r"\d+")],
    "texlive-doc/latex/translation-biblatex-de/biblatex-de-Benutzerhandbuch.pdf": [("footer", 60, r"\d+|[IVXivx]+")],
    "db5.3-doc/gsg/C/BerkeleyDB-Core-C-GSG.pdf.gz": [
        ("header", 86, ANY), ("footer", 75, r"9/9/2013|Getting Started with DB|Page (\d+|[ivxlc]+)")],
    "db5.3-doc/programmer_reference/BDB_Prog_Reference.pdf.gz": [
        ("header", 86, ANY), ("footer", 75, r"9/9/2013|DB Reference Guide|Page (\d+|[ivxlc]+)")],
    "gnuplot/gnuplot.pdf": [("header", 70, ANY)],
    "r-doc-pdf/manual/R-ints.pdf": [("header", 62, ANY)],
    "r-doc-pdf/manual/R-lang.pdf": [("header", 62, ANY)],
    "auto-multiple-choice/auto-multiple-choice.fr.pdf": [("header", 50, ANY)],
}  # fmt: skip
_PAGE = re.compile(r'<page width="([\d.]+)" height="([\d.]+)">(.*?)</page>', re.S)
_LINE = re.compile(r'<line xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" yMax="([\d.]+)">(.*?)</line>', re.S)
Box = tuple[float, float, float, float]


def truth(pdf: Path, rules: list[tuple[str, float, str]]) -> list[tuple[int, str, Box]]:
    """The furniture lines poppler reads on every page: (page, text, box)."""
    out = subprocess.run(["pdftotext", "-bbox-layout", str(pdf), "-"], capture_output=True, text=True, check=True)
    found = []
    for number, page in enumerate(_PAGE.finditer(out.stdout), start=1):
        height = float(page.group(2))
        for line in _LINE.finditer(page.group(3)):
            box = (float(line.group(1)), float(line.group(2)), float(line.group(3)), float(line.group(4)))
            text = " ".join(html.unescape(w) for w in re.findall(r">([^<]*)</word>", line.group(5)))
            middle = (box[1] + box[3]) / 2
            for place, band, pattern in rules:
                near = middle <= band if place == "header" else middle >= height - band
                if near and re.fullmatch(pattern, text.strip()):
                    found.append((number, text, box))
                    break
    return found


def _covers(a: Box, b: Box) -> bool:
    """Whether two boxes share half the smaller's area (one reader's line may be two of the other's)."""
    width = min(a[2], b[2]) - max(a[0], b[0])
    height = min(a[3], b[3]) - max(a[1], b[1])
    smaller = min((a[2] - a[0]) * (a[3] - a[1]), (b[2] - b[0]) * (b[3] - b[1]))
    return width > 0 and height > 0 and width * height >= 0.5 * smaller


def emit(paths: dict[str, str]) -> dict[str, Any]:
    """Each PDF converted (the child's job with --checkout): its Markdown, page spans, regions and furniture."""
    from docling_service.converter import Converter, ConverterOptions

    converter = Converter(ConverterOptions())
    converter.start()
    out = {}
    for file, path in paths.items():
        result = converter.convert(read_pdf(Path(path)), Path(file).name.removesuffix(".gz"))
        out[file] = json.loads(result.model_dump_json(include={"markdown", "page_spans", "regions", "units",
                                                               "furniture"}))  # fmt: skip
    return out


def _chunker() -> Any:
    from chunker_service.chunker import TextChunker
    from chunker_service.service import ChunkingService
    from chunker_service.settings import ChunkerSettings
    from chunker_service.tokens import TokenCounter

    settings = ChunkerSettings(_env_file=None)
    assert settings.tokenizer_path is not None and settings.tokenizer_name  # resolved by the settings
    counter = TokenCounter.from_path(settings.tokenizer_path, settings.tokenizer_name)
    return ChunkingService(TextChunker(counter), model_max_tokens=256, max_text_chars=50_000_000, max_concurrency=1)


def measure(file: str, converted: dict[str, Any], lines: list[tuple[int, str, Box]], chunker: Any) -> dict[str, Any]:
    from ingestion_contracts.chunker import ChunkRequest

    regions = converted["regions"]
    held = [(p, t, b) for p, t, b in lines if any(r["page"] == p and _covers(tuple(r["box"]), b) for r in regions)]
    request = ChunkRequest(text=converted["markdown"], page_spans=converted["page_spans"], regions=regions,
                           units=converted["units"])  # fmt: skip
    only = 0
    for chunk in chunker.chunk_sync(request).chunks:
        for page in range(chunk.page or 0, (chunk.page_end or chunk.page or 0) + 1):
            boxes = [tuple(b.box) for b in chunk.boxes or [] if b.page == page]
            if boxes and all(any(_covers(box, b) for p, _, b in lines if p == page) for box in boxes):
                only += 1
    taken = [f for f in converted.get("furniture") or []
             if not any(p == f["page"] and _covers(tuple(f["box"]), b) for p, _, b in lines)]  # fmt: skip
    return {
        "file": file, "furniture_lines": len(lines), "in_passages": len(held),
        "in_passages_share": round(len(held) / len(lines), 4) if lines else None,
        "furniture_only_pages": only, "taken_from_body": len(taken),
        "taken_sample": [f["text"][:60] for f in taken[:5]], "held_sample": [t[:60] for _, t, _ in held[:5]],
    }  # fmt: skip


def _converted(paths: dict[str, str], checkout: Path | None) -> dict[str, Any]:
    return converted("bench.page_furniture", paths, checkout, emit)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--roots", type=Path, nargs="*", default=[], help="folders packages were unpacked into")
    parser.add_argument("--checkout", type=Path, help="measure this checkout's converter instead of this one's")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--emit", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.emit is not None:
        args.out.write_text(json.dumps(emit(json.loads(args.emit.read_text()))))
        return
    files = dict.fromkeys(t["file"] for t in json.loads(LABELS.read_text(encoding="utf-8"))["tables"])
    paths = {file: str(path) for file in files if (path := locate(file, args.roots)) is not None}
    began = time.time()
    converted = _converted(paths, args.checkout)
    chunker = _chunker()
    with tempfile.TemporaryDirectory() as work:
        reports = []
        for index, (file, where) in enumerate(paths.items()):
            plain = Path(work) / f"{index}.pdf"  # pdftotext reads no gzip
            plain.write_bytes(read_pdf(Path(where)))
            reports.append(measure(file, converted[file], truth(plain, FURNITURE[file]), chunker))
    lines, held = sum(r["furniture_lines"] for r in reports), sum(r["in_passages"] for r in reports)
    result = {
        "command": "python -m bench.page_furniture" + (" --checkout ..." if args.checkout else ""),
        "measured": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(began)),
        "load_average": [round(v, 2) for v in os.getloadavg()],
        "all": {"pdfs": len(reports), "furniture_lines": lines, "in_passages": held,
                "in_passages_share": round(held / lines, 4) if lines else None,
                "furniture_only_pages": sum(r["furniture_only_pages"] for r in reports),
                "taken_from_body": sum(r["taken_from_body"] for r in reports)},
        "pdfs": reports, "missing": sorted(set(files) - set(paths)),
    }  # fmt: skip
    print(json.dumps(result["all"]))
    for report in reports:
        print(f"{Path(report['file']).name}: {report['in_passages']}/{report['furniture_lines']} in passages, "
              f"{report['furniture_only_pages']} furniture-only page citations, {report['taken_from_body']} taken "
              f"from the body {report['taken_sample'][:2]}")  # fmt: skip
    if args.out:
        args.out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
