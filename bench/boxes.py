"""How well each passage's boxes mark its words, on real PDFs nobody here wrote, and what its page image costs.

    apt-get install -y poppler-utils cvs db5.3-doc xorg-docs nettle-dev bzip2-doc zlib1g-dev   # the PDFs below
    python -m bench.boxes --out bench/results/boxes.json            # every set, every passage of every PDF
    python -m bench.boxes --set holdout --render 20                  # the hold-out PDFs only
    python -m bench.boxes --remeasure bench/results/boxes.json --out bench/results/boxes.json   # the measure again

Every PDF goes through the whole embedded pipeline (docling's native pipeline, the chunker, the gateway on Milvus
Lite). Every passage (chunk) with boxes is measured (``--chunks N``: N drawn at random, seeded; a sample of 40
moved crc-doc's mean by 0.01 between two draws); each is compared with its words' own boxes from poppler's
`pdftotext -bbox-layout` (bench/word_boxes.py: coverage, outside strict and by lines).
A scan is made here from real born-digital pages (rendered at 200 dpi, blurred, JPEG 75, wrapped back into a PDF
of the same page size, no text layer: the OCR path reads it) and checked against the born-digital pages' words.
Passages are also searched for (a phrase of theirs, keyword mode): the passage should come back with its boxes.
Page images are drawn for ``--render`` passages a PDF: bytes, pixels and render time (p50 / p95). The dev PDFs
are the ones the code was tried on while it was written; the hold-out ones were first read by this script.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import io
import json
import os
import random
import statistics
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pypdfium2 as pdfium
from PIL import Image, ImageFilter

from .results_io import write_json
from .word_boxes import Measured, aligned, measure, passage_words_in_runs, pdf_words

DOC = Path("/usr/share/doc")
# A passage with less than this share of its characters aligned with poppler's is not the text poppler reads there
# (a figure's labels read as other glyphs): it is listed as unaligned, not measured.
MIN_ALIGNED = 0.5


@dataclass(frozen=True)
class Source:
    name: str
    kind: str  # single | multi | scan | tables
    path: Path
    split: str  # dev | holdout
    pages: tuple[int, int] | None = None  # a scan is made of these pages (first, last)


SOURCES = (
    Source("nettle", "single", DOC / "nettle-dev/nettle.pdf.gz", "dev"),
    Source("cvs-paper", "single", DOC / "cvs/cvs-paper.pdf", "holdout"),
    Source("bzip2-manual", "single", DOC / "bzip2/manual.pdf.gz", "holdout"),
    Source("hash-usenix", "multi", DOC / "db5.3-doc/programmer_reference/hash_usenix.pdf.gz", "dev"),
    Source("bdb-usenix", "multi", DOC / "db5.3-doc/programmer_reference/bdb_usenix.pdf.gz", "holdout"),
    Source("libtp-usenix", "multi", DOC / "db5.3-doc/programmer_reference/libtp_usenix.pdf.gz", "holdout"),
    Source("nettle-scan", "scan", DOC / "nettle-dev/nettle.pdf.gz", "dev", (10, 12)),
    Source("cvs-scan", "scan", DOC / "cvs/cvs-paper.pdf", "holdout", (2, 4)),
    Source("bdb-scan", "scan", DOC / "db5.3-doc/programmer_reference/bdb_usenix.pdf.gz", "holdout", (3, 3)),
    Source("xace-spec", "tables", DOC / "xorg-docs/Xserver/XACE-Spec.pdf.gz", "dev"),
    Source("crc-doc", "tables", DOC / "zlib1g-dev/crc-doc.1.0.pdf.gz", "holdout"),
)


def plain(path: Path, work: Path) -> Path:
    if path.suffix != ".gz":
        return path
    target = work / path.stem
    target.write_bytes(gzip.decompress(path.read_bytes()))
    return target


def scan_of(pdf: Path, first: int, last: int, out: Path, dpi: int = 200) -> Path:
    """Pages first..last as an image-only PDF of the same page size: what a scanner makes of the printed pages."""
    document = pdfium.PdfDocument(str(pdf))
    images = []
    for number in range(first, last + 1):
        picture = document[number - 1].render(scale=dpi / 72, grayscale=True).to_pil().convert("L")
        picture = picture.filter(ImageFilter.GaussianBlur(0.6))
        buffer = io.BytesIO()
        picture.save(buffer, "JPEG", quality=75)
        images.append(Image.open(io.BytesIO(buffer.getvalue())))
    document.close()
    images[0].save(out, "PDF", resolution=dpi, save_all=True, append_images=images[1:])
    return out


@dataclass
class PassageResult:
    source: str
    chunk: int
    pages: list[int]
    boxes: int
    aligned: float  # the share of the passage's characters aligned with poppler's
    measured: Measured
    measured_in_runs: Measured | None  # the first measure (letters and digits in runs of 4+), for comparison


def measure_drawn(
    source: Source, original: Path, drawn: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Each drawn passage (its chunk's text and boxes) measured against poppler's words of its pages; those whose
    text does not align with poppler's are listed apart, unmeasured."""
    shift = source.pages[0] - 1 if source.pages else 0  # a scan's page 1 is the original's page pages[0]
    passages: list[dict[str, Any]] = []
    unaligned: list[dict[str, Any]] = []
    for chunk in drawn:
        pages = sorted({box[0] for box in chunk["boxes"]})
        words, sizes = pdf_words(original, [p + shift for p in pages])
        words = [w.__class__(w.text, w.page - shift, w.box, w.line) for w in words]
        sizes = {page - shift: size for page, size in sizes.items()}
        mine = aligned(chunk["text"], words)
        if len(mine.words) < 5 or mine.share < MIN_ALIGNED:  # the text read is not poppler's (garbled fonts, labels)
            unaligned.append({"chunk": chunk["chunk"], "pages": pages, "aligned": round(mine.share, 3),
                              "words": len(mine.words), "text": chunk["text"][:200]})  # fmt: skip
            continue
        marked: dict[int, list[Any]] = {}
        for page, *box in chunk["boxes"]:
            marked.setdefault(page, []).append(tuple(box))
        in_runs = passage_words_in_runs(chunk["text"], words)
        result = PassageResult(source.name, chunk["chunk"], pages, len(chunk["boxes"]), round(mine.share, 4),
                               measure(marked, mine.words, sizes),
                               measure(marked, in_runs, sizes) if len(in_runs) >= 5 else None)  # fmt: skip
        passages.append(asdict(result))
    return passages, unaligned


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))] if ordered else 0.0


async def read_source(stack: Any, source: Source, work: Path, count: int, render: int, seed: int) -> dict[str, Any]:
    from ingestion_contracts.gateway import SearchRequest

    original = plain(source.path, work)
    pdf = original
    if source.pages is not None:
        pdf = scan_of(original, *source.pages, work / f"{source.name}.pdf")
    stack.settings.allowed_roots.append(pdf.parent)
    started = time.perf_counter()
    outcome = await stack.ingestor.ingest_file(str(pdf), collection=source.name)
    ingest_s = time.perf_counter() - started
    listing = await stack.backend.get_chunks(source.name, outcome.doc_id, 0, outcome.chunks - 1)
    located = [c for c in listing.chunks if c.boxes]
    rng = random.Random(seed)
    sample = rng.sample(located, min(count, len(located)) if count > 0 else len(located))  # 0: every passage
    drawn = [
        {"chunk": c.chunk_index, "text": c.text, "boxes": [[b.page, *b.box] for b in c.boxes or []]} for c in sample
    ]
    passages, unaligned = measure_drawn(source, original, drawn)
    found = 0
    for chunk in sample[:10]:  # the search path: a phrase of the passage finds it, with the same boxes
        tokens = chunk.text.split()
        phrase = " ".join(tokens[len(tokens) // 2 : len(tokens) // 2 + 8])
        answer = await stack.backend.search(SearchRequest(query=phrase or chunk.text[:100], collections=[source.name],
                                                          mode="keyword", top_k=3))  # fmt: skip
        found += any(hit.chunk_index == chunk.chunk_index and hit.boxes == chunk.boxes for hit in answer.hits)
    images = []
    for chunk in sample[:render]:
        page = min(b.page for b in chunk.boxes or [])
        started = time.perf_counter()
        picture = await stack.backend.page_image(source.name, outcome.doc_id, page, chunk=chunk.chunk_index)
        wall_ms = (time.perf_counter() - started) * 1000
        with Image.open(io.BytesIO(picture.data)) as decoded:
            size = decoded.size
        images.append({"bytes": len(picture.data), "media_type": picture.media_type, "width": size[0],
                       "height": size[1], "render_ms": picture.render_ms, "wall_ms": round(wall_ms, 1),
                       "marked": picture.marked})  # fmt: skip
    structure = await stack.backend.get_structure(source.name, outcome.doc_id)
    units = structure.units or []
    return {
        "source": source.name, "kind": source.kind, "split": source.split, "path": str(source.path),
        "pages": source.pages, "ingest_s": round(ingest_s, 1), "chunks": outcome.chunks, "located": len(located),
        "measured": len(passages), "searched": min(10, len(sample)), "search_found_with_boxes": found,
        "tables": sum(u.kind == "table" for u in units), "figures": sum(u.kind == "figure" for u in units),
        "captions": sorted({u.caption[:60] for u in units if u.caption})[:8],
        "unaligned": unaligned, "passages": passages, "images": images, "drawn": drawn,
    }  # fmt: skip


def summary(passages: list[dict[str, Any]], measure: str = "measured") -> dict[str, float]:
    passages = [p for p in passages if p[measure]]
    if not passages:
        return {}
    values = {key: [p[measure][key] for p in passages] for key in ("coverage", "outside_strict", "outside_lines")}
    return {
        "passages": len(passages),
        "coverage_mean": round(statistics.mean(values["coverage"]), 4),
        "coverage_p5": round(percentile(values["coverage"], 0.05), 4),
        "coverage_min": round(min(values["coverage"]), 4),
        "share_coverage_0.95+": round(sum(v >= 0.95 for v in values["coverage"]) / len(passages), 3),
        "outside_strict_mean": round(statistics.mean(values["outside_strict"]), 4),
        "outside_lines_mean": round(statistics.mean(values["outside_lines"]), 4),
        "outside_lines_p95": round(percentile(values["outside_lines"], 0.95), 4),
        "share_outside_lines_0.10-": round(sum(v <= 0.10 for v in values["outside_lines"]) / len(passages), 3),
    }  # fmt: skip


def image_summary(images: list[dict[str, Any]]) -> dict[str, Any]:
    if not images:
        return {}
    return {
        "images": len(images),
        "bytes_p50": percentile([i["bytes"] for i in images], 0.5),
        "bytes_max": max(i["bytes"] for i in images),
        "long_side_max": max(max(i["width"], i["height"]) for i in images),
        "render_ms_p50": percentile([i["render_ms"] for i in images], 0.5),
        "render_ms_p95": percentile([i["render_ms"] for i in images], 0.95),
        "wall_ms_p50": percentile([i["wall_ms"] for i in images], 0.5),
        "wall_ms_p95": percentile([i["wall_ms"] for i in images], 0.95),
        "media_types": sorted({i["media_type"] for i in images}),
    }  # fmt: skip


def summarise(read: dict[str, Any]) -> None:
    read["measured"] = len(read["passages"])
    read["summary"] = summary(read["passages"])
    read["summary_in_runs"] = summary(read["passages"], "measured_in_runs")
    read["image_summary"] = image_summary(read["images"])


def by_kind(report: dict[str, Any]) -> None:
    report["by_kind"] = {}
    for split in ("dev", "holdout"):
        for kind in ("single", "multi", "scan", "tables"):
            rows = [r for r in report["sources"] if r["split"] == split and r["kind"] == kind]
            if rows:
                passages = [p for r in rows for p in r["passages"]]
                report["by_kind"][f"{split}/{kind}"] = {
                    **summary(passages), "in_runs": summary(passages, "measured_in_runs"),
                    **image_summary([i for r in rows for i in r["images"]])}  # fmt: skip


def drawn_path(report: Path) -> Path:
    """Where a report's drawn passages (each chunk's text and boxes) are kept: beside it, gzipped JSON lines."""
    return report.with_name(f"{report.stem}.drawn.jsonl.gz")


def remeasure(path: Path) -> dict[str, Any]:
    """The passages a run drew measured again, without ingesting: for a change to the measure, not to the pipeline."""
    report = json.loads(path.read_text())
    drawn = [json.loads(line) for line in gzip.decompress(drawn_path(path).read_bytes()).splitlines()]
    with tempfile.TemporaryDirectory(prefix="bench-boxes-") as folder:
        for read, kept in zip(report["sources"], drawn, strict=True):
            source = next(s for s in SOURCES if s.name == read["source"] == kept["source"])
            read["drawn"] = kept["drawn"]
            read["passages"], read["unaligned"] = measure_drawn(source, plain(source.path, Path(folder)), read["drawn"])
            summarise(read)
    by_kind(report)
    return report


async def run(args: argparse.Namespace) -> dict[str, Any]:
    from .pipeline import open_stack

    chosen = [s for s in SOURCES if args.set in ("all", s.split) and (not args.only or s.name in args.only)]
    missing = [str(s.path) for s in chosen if not s.path.exists()]
    if missing:
        raise SystemExit(f"missing PDFs (install their packages, see the docstring): {', '.join(missing)}")
    report: dict[str, Any] = {"load_average_start": os.getloadavg()[0], "sources": []}
    with tempfile.TemporaryDirectory(prefix="bench-boxes-") as folder:
        work = Path(folder)
        async with open_stack(work / "data") as stack:
            for source in chosen:
                print(f"{source.name} ...", flush=True)
                read = await read_source(stack, source, work, args.chunks, args.render, args.seed)
                summarise(read)
                print(json.dumps({k: read[k] for k in ("source", "chunks", "located", "measured", "tables", "figures",
                                                        "search_found_with_boxes", "summary", "summary_in_runs",
                                                        "image_summary")}),
                      flush=True)  # fmt: skip
                report["sources"].append(read)
    by_kind(report)
    report["load_average_end"] = os.getloadavg()[0]
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", choices=["dev", "holdout", "all"], default="all")
    parser.add_argument("--only", nargs="*", help="source names (see SOURCES)")
    parser.add_argument("--chunks", type=int, default=0, help="passages measured a PDF (0, the default: all of them)")
    parser.add_argument("--render", type=int, default=20, help="page images drawn a PDF")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--remeasure", type=Path, help="a report whose drawn passages are measured again (no ingest)")
    args = parser.parse_args()
    report = remeasure(args.remeasure) if args.remeasure else asyncio.run(run(args))
    drawn = [{"source": read["source"], "drawn": read.pop("drawn")} for read in report["sources"]]
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        write_json(args.out, report, indent=1)
        lines = "".join(json.dumps(kept, separators=(",", ":")) + "\n" for kept in drawn)
        drawn_path(args.out).write_bytes(gzip.compress(lines.encode(), mtime=0))
    print(json.dumps(report.get("by_kind", {}), indent=1))


if __name__ == "__main__":
    main()
