"""Issue 42's check through a real MCP client: a PDF's page, searched, shown, and its marks against poppler's words.

    python -m bench.evidence_drive --pdf /usr/share/doc/libtasn1-doc/libtasn1.pdf --pages 6 12 20
    python -m bench.evidence_drive --pdf /usr/share/doc/libtasn1-doc/libtasn1.pdf --scan 9 10 --pages 1 2

Starts `ingestion-mcp` over stdio (this checkout's venv) on a fresh data folder whose allowed root holds a copy of
the PDF (or, with ``--scan FIRST LAST``, those pages scanned as bench.boxes makes its scans), ingests it with
`ingest_document`, and for each page: takes the longest plain line poppler reads there, searches seven of its
words (`search`, keyword, detailed), takes the result citing that page, asks `get_document_pages` for the page
image with that passage marked, and compares the passage's boxes with poppler's own word boxes
(bench/word_boxes.py: coverage, outside by lines). Prints one line a page.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import gzip
import io
import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters
from PIL import Image

from .boxes import scan_of
from .word_boxes import Word, aligned, measure, pdf_words

SERVER = Path(sys.executable).with_name("ingestion-mcp")
_PLAIN = re.compile(r"[A-Za-z][a-z]+[,.]?")  # a word a keyword search finds as it is


def phrase_of(pdf: Path, page: int) -> str:
    """Seven plain words of the longest such line poppler reads on ``page`` ("" when it has none)."""
    lines: dict[int, list[str]] = {}
    for word in pdf_words(pdf, [page])[0]:
        lines.setdefault(word.line, []).append(word.text)
    plain = [
        ws for ws in lines.values() if len(ws) >= 8 and all(re.fullmatch(r"[A-Za-z][a-z]+[,.]?", t) for t in ws[1:8])
    ]
    return " ".join(max(plain, key=len)[1:8]) if plain else ""


async def drive(ingested: Path, original: Path, shift: int, pages: list[int], data: Path) -> None:
    env = dict(os.environ, INGESTION_MCP_ALLOWED_ROOTS=str(ingested.parent), INGESTION_MCP_DATA_DIR=str(data),
               HF_HUB_OFFLINE="1")  # fmt: skip
    async with Client(StdioServerParameters(command=str(SERVER), args=[], env=env)) as client:
        answer = await _call(client, "ingest_document", {"file_path": str(ingested), "collection": "evidence"})
        print(f"{ingested.name}: {answer.get('status')} {answer.get('error') or ''}", flush=True)
        for page in pages:
            phrase = phrase_of(original, page + shift)
            found = await _call(client, "search", {"query": phrase, "collection": "evidence", "mode": "keyword",
                                                   "top_k": 3, "response_format": "detailed"})  # fmt: skip
            results = found.get("results") or []
            hit = next((r for r in results if r.get("page") == page), None)
            if hit is None:
                print(f"  p{page} {phrase!r}: not found on its page ({[r.get('page') for r in results]})")
                continue
            boxes = {g["page"]: [tuple(b[2:]) for b in g["boxes"]] for g in hit.get("regions") or []}
            words, sizes = pdf_words(original, [p + shift for p in boxes])
            words = [Word(w.text, w.page - shift, w.box, w.line) for w in words]
            mine = aligned(hit["text"], words)
            m = measure(boxes, mine.words, {p - shift: s for p, s in sizes.items()})
            shown = await client.call_tool("get_document_pages", {"doc_id": hit["doc_id"], "collection": "evidence",
                                                                  "first_page": page, "chunk_index": hit["chunk_index"],
                                                                  "image": "page"})  # fmt: skip
            image = next((c for c in shown.content if c.type == "image"), None)
            size = Image.open(io.BytesIO(base64.b64decode(image.data))).size if image is not None else None
            told = json.loads(shown.content[0].text).get("images")  # type: ignore[union-attr]  # the first item is the JSON text
            print(f"  p{page} {phrase!r}: rank {results.index(hit) + 1}, chunk {hit['chunk_index']}, aligned "
                  f"{mine.share:.2f}, coverage {m.coverage:.3f}, outside (lines) {m.outside_lines:.3f}; image "
                  f"{image.mime_type if image else None} {size} {told}", flush=True)  # fmt: skip


async def _call(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    answer = await client.call_tool(tool, arguments)
    return json.loads(answer.content[0].text)  # type: ignore[union-attr]  # the tools answer JSON text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pdf", type=Path, required=True)
    parser.add_argument("--pages", type=int, nargs="+", required=True, help="pages of the ingested file")
    parser.add_argument("--scan", type=int, nargs=2, metavar=("FIRST", "LAST"), help="ingest these pages scanned")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="evidence-drive-") as folder:
        work = Path(folder)
        (work / "docs").mkdir()
        original = work / args.pdf.name.removesuffix(".gz")
        original.write_bytes(
            gzip.decompress(args.pdf.read_bytes()) if args.pdf.suffix == ".gz" else args.pdf.read_bytes()
        )
        if args.scan:
            first, last = args.scan
            ingested, shift = scan_of(original, first, last, work / "docs" / f"scan-{original.name}"), first - 1
        else:
            ingested, shift = Path(shutil.copy(original, work / "docs" / original.name)), 0
        asyncio.run(drive(ingested, original, shift, args.pages, work / "data"))


if __name__ == "__main__":
    main()
