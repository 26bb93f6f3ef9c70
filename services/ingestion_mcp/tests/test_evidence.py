"""Evidence an agent can see (issue 42), through a real MCP client on the real pipeline (docling's native PDF
pipeline, the chunker, the gateway with the real model on Milvus Lite).

A real paper nobody here wrote (Brian Berliner's "CVS II", groff + Ghostscript; Debian's cvs package) is searched;
the passage comes back located (page, boxes, page size) and its boxes cover the words poppler finds for that phrase
(`pdftotext -bbox-layout`, a reader independent of the pipeline's). Its page comes back as an MCP image with the
passage marked where those words are. A scan of one of its pages is located through OCR; a table comes back whole;
a document stored before boxes were kept, and a text without pages, say what they can and cannot show.
"""

from __future__ import annotations

import base64
import io
import shutil
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from fpdf import FPDF
from ingestion_contracts.gateway import ChunkIn, UpsertDocumentRequest
from ingestion_mcp.access.policy import Caller, acting_as
from ingestion_mcp.errors import ToolFailure
from ingestion_mcp.state import AppState
from mcp import Client
from PIL import Image

from bench.boxes import scan_of
from bench.pdf_fixtures import REVENUE, table_rows
from bench.word_boxes import measure, passage_words, pdf_words
from scripts.system_files import CVS_PAPER, needs

PAPER = CVS_PAPER
COLLECTION = "evidence"
# On page 3 of the paper, in a paragraph that runs over four lines.
PHRASE = "In practice, Prisma has found that conflicts that occur when the same object has been modified"
pytestmark = [
    pytest.mark.timeout(900),
    needs(PAPER),
    pytest.mark.skipif(not shutil.which("pdftotext"), reason="needs pdftotext: apt-get install -y poppler-utils"),
]  # fmt: skip


@dataclass(frozen=True)
class Paper:
    doc_id: str
    path: Path


async def with_blocks(client: Client, tool: str, **arguments: object) -> tuple[dict[str, Any], list[Any]]:
    """The structured answer (scripts/service_stack.call) and the content blocks beside it (images among them)."""
    response = await client.call_tool(tool, arguments)
    assert response.structured_content is not None, response.content
    return response.structured_content, list(response.content)


@pytest.fixture(scope="module")
async def paper(app_state: AppState, docs_dir: Path) -> AsyncIterator[Paper]:
    path = docs_dir / "cvs-paper.pdf"
    shutil.copyfile(PAPER, path)
    outcome = await app_state.ingestor.ingest_file(str(path), collection=COLLECTION)
    assert outcome.status == "indexed" and outcome.chunks > 10
    yield Paper(outcome.doc_id, path)


def marked_by_page(regions: list[dict[str, Any]]) -> dict[int, list[tuple[float, ...]]]:
    return {entry["page"]: [tuple(box[2:]) for box in entry["boxes"]] for entry in regions}


async def test_a_passage_is_located_on_its_page_and_its_words_are_covered(connect, paper: Paper) -> None:
    async with connect() as client:
        out, _ = await with_blocks(client, "search", query=PHRASE, collection=COLLECTION, mode="keyword", top_k=3,
                            response_format="detailed")  # fmt: skip
    hit = next(r for r in out["results"] if "Prisma has found that conflicts" in " ".join(r["text"].split()))
    assert hit["page"] == 3
    regions = hit["regions"]
    pages = [entry["page"] for entry in regions]
    words, sizes = pdf_words(paper.path, pages)
    assert 3 in pages and all(entry["size"] == list(sizes[entry["page"]]) for entry in regions)  # 595 x 794 pt
    for entry in regions:
        for start, end, x0, top, x1, bottom in entry["boxes"]:
            assert 0 <= start < end <= len(hit["text"]) and 0 <= x0 < x1 <= 595 and 0 <= top < bottom <= 794
    phrase = passage_words(PHRASE, [w for w in words if w.page == 3])
    assert len(phrase) >= 12
    measured = measure(marked_by_page(regions), phrase, sizes)
    assert measured.coverage >= 0.95, measured  # the boxes lie on the words poppler finds, not elsewhere
    passage = passage_words(hit["text"], words)
    whole = measure(marked_by_page(regions), passage, sizes)
    assert whole.coverage >= 0.95 and whole.outside_lines <= 0.10, whole


def tint(picture: Image.Image, box: tuple[float, ...], scale: float) -> float:
    """How much more red than blue the pixels of ``box`` (points) are: a marked area is yellow-tinted."""
    area = picture.crop(tuple(round(v * scale) for v in box)).convert("RGB")  # type: ignore[arg-type]  # four ints: a PIL box
    pixels = list(area.getdata())
    return sum(r - b for r, _, b in pixels) / max(len(pixels), 1)


async def test_the_page_comes_back_as_an_image_with_the_passage_marked(connect, paper: Paper) -> None:
    async with connect() as client:
        out, _ = await with_blocks(client, "search", query=PHRASE, collection=COLLECTION, mode="keyword", top_k=1,
                            response_format="detailed")  # fmt: skip
        hit = out["results"][0]
        shown, content = await with_blocks(client, "get_document_pages", doc_id=paper.doc_id, collection=COLLECTION,
                                    first_page=3, chunk_index=hit["chunk_index"], image="page")  # fmt: skip
        elsewhere, _ = await with_blocks(client, "get_document_pages", doc_id=paper.doc_id, collection=COLLECTION,
                                  first_page=2, chunk_index=hit["chunk_index"], image="page")  # fmt: skip
    images = [part for part in content if part.type == "image"]
    assert len(images) == 1 and images[0].mime_type in ("image/png", "image/webp")
    data = base64.b64decode(images[0].data)
    assert len(data) <= 1_000_000
    picture = Image.open(io.BytesIO(data))
    assert max(picture.size) <= 1568 and max(picture.size) >= 1500  # as large as a vision model reads
    assert shown["images"][0]["marked"] > 0 and shown["pages"][0]["page"] == 3
    scale = picture.height / 794
    words, _ = pdf_words(paper.path, [3])
    phrase = passage_words(PHRASE, words)
    marked = [box[2:] for entry in hit["regions"] if entry["page"] == 3 for box in entry["boxes"]]
    outside = next(w for w in words if w.text.isalpha() and not any(
        w.box[0] < b[2] and b[0] < w.box[2] and w.box[1] < b[3] and b[1] < w.box[3] for b in marked))  # fmt: skip
    assert tint(picture, phrase[3].box, scale) > 40 > tint(picture, outside.box, scale) + 20
    assert 3 in elsewhere["images"][0]["passage_pages"] and "first_page=3" in elsewhere["message"]
    assert elsewhere["images"][0]["marked"] == 0


async def test_pages_and_sections_give_their_boxes(connect, paper: Paper) -> None:
    async with connect() as client:
        pages, _ = await with_blocks(client, "get_document_pages", doc_id=paper.doc_id, collection=COLLECTION,
                              first_page=3, response_format="detailed")  # fmt: skip
        outline, _ = await with_blocks(client, "get_document_outline", doc_id=paper.doc_id, collection=COLLECTION)
        section, _ = await with_blocks(client, "get_document_section", doc_id=paper.doc_id, collection=COLLECTION,
                                position=outline["sections"][-1]["position"], response_format="detailed")  # fmt: skip
    page = pages["pages"][0]
    assert page["size"] == [595.0, 794.0] and page["boxes"]
    text = page["text"]
    at = " ".join(text.split()).find("Prisma has found")
    assert at >= 0
    start = text.find("Prisma")
    holding = [box for box in page["boxes"] if box[0] <= start < box[1]]
    words, _ = pdf_words(paper.path, [3])
    prisma = next(w for w in words if w.text == "Prisma," or w.text == "Prisma")
    assert holding and holding[0][3] <= prisma.box[1] + 1 and prisma.box[3] <= holding[0][5] + 1  # that line's box
    assert section["regions"] and all(0 <= b[0] < b[1] <= len(section["content"]) for r in section["regions"]
                                      for b in r["boxes"])  # fmt: skip


async def test_a_scanned_page_is_located_through_ocr(connect, app_state: AppState, docs_dir: Path) -> None:
    scan = scan_of(PAPER, 2, 2, docs_dir / "cvs-page-2-scan.pdf")
    outcome = await app_state.ingestor.ingest_file(str(scan), collection=COLLECTION)
    words, sizes = pdf_words(PAPER, [2])  # the printed page the scan was made of: same size, same place
    async with connect() as client:
        out, _ = await with_blocks(client, "search", query="The six major features of cvs are listed below", top_k=5,
                            collection=COLLECTION, mode="keyword", response_format="detailed")  # fmt: skip
    hit = next(r for r in out["results"] if r["doc_id"] == outcome.doc_id)
    width, height = hit["regions"][0]["size"]
    assert hit["regions"][0]["page"] == 1 and abs(width - 595) < 0.5 and abs(height - 794) < 0.5  # 1,653 px at 200 dpi
    mine = [replace(w, page=1) for w in passage_words(" ".join(hit["text"].split()), words)]
    assert [w.text for w in mine if w.text in ("six", "major")] == ["six", "major"]
    measured = measure({1: [tuple(b[2:]) for b in hit["regions"][0]["boxes"]]}, mine, {1: sizes[2]})
    assert measured.coverage >= 0.9 and measured.outside_lines <= 0.25, measured


def table_report() -> bytes:
    pdf = FPDF(format="A4", unit="pt")
    pdf.add_page()
    pdf.set_font("Helvetica", size=11)
    pdf.multi_cell(0, 15, "Sales grew in every region but one. The board reviewed the quarterly figures below.")
    pdf.ln(10)
    pdf.multi_cell(0, 15, "Table 1: Revenue by region, in thousands")
    pdf.ln(4)
    table_rows(pdf, REVENUE, ruled=True)
    pdf.ln(12)
    pdf.multi_cell(0, 15, "Antarctica stays the smallest market; its office closes at the end of the year.")
    return bytes(pdf.output())


async def test_a_hit_in_a_table_returns_the_whole_table(connect, app_state: AppState, docs_dir: Path) -> None:
    path = docs_dir / "revenue.pdf"
    path.write_bytes(table_report())
    outcome = await app_state.ingestor.ingest_file(str(path), collection=COLLECTION)
    async with connect() as client:
        out, _ = await with_blocks(client, "search", query="Asia 310 298 356", collection=COLLECTION, top_k=3,
                            mode="keyword", response_format="detailed")  # fmt: skip
        hit = next(r for r in out["results"] if r["doc_id"] == outcome.doc_id)
        assert hit["units"][0]["kind"] == "table" and hit["units"][0]["caption"].startswith("Table 1")
        whole, _ = await with_blocks(client, "get_document_pages", doc_id=outcome.doc_id, collection=COLLECTION,
                              first_page=1, chunk_index=hit["chunk_index"])  # fmt: skip
    table = whole["units"][0]
    assert table["page"] == 1 and len(table["box"]) == 4 and table["caption"].startswith("Table 1")
    lines = table["markdown"].splitlines()
    assert len(lines) == len(REVENUE) + 1 and all(cell in table["markdown"] for row in REVENUE for cell in row)


async def test_a_figure_is_found_by_its_caption_and_comes_back_as_a_picture(connect, paper: Paper) -> None:
    async with connect() as client:
        # Its caption and the labels drawn in it (what the text around a figure is, read from the page)
        out, _ = await with_blocks(client, "search", query="Figure 1 cvs Source Repository CVSROOT.adm loginfo modules",
                            collection=COLLECTION, mode="keyword", top_k=3, response_format="detailed")  # fmt: skip
        found = [(r, u) for r in out["results"] for u in r.get("units", []) if u["kind"] == "figure"]
        hit, figure = next(((r, u) for r, u in found if u["caption"].startswith("Figure 1")), (None, found))
        assert hit is not None, [(r["page"], r["text"][:200], r.get("units")) for r in out["results"]]
        shown, content = await with_blocks(client, "get_document_pages", doc_id=paper.doc_id, collection=COLLECTION,
                                    first_page=3, chunk_index=hit["chunk_index"], image="figure")  # fmt: skip
    assert figure["page"] == 3 and figure["caption"].startswith("Figure 1")
    words, _ = pdf_words(paper.path, [3])
    label = next(w for w in words if w.text == "CVSROOT.adm")  # a label of the drawing: inside the figure's box
    x0, top, x1, bottom = figure["box"]
    assert x0 <= label.box[0] and label.box[2] <= x1 and top <= label.box[1] and label.box[3] <= bottom
    pictures = [part for part in content if part.type == "image"]
    assert len(pictures) == 1 and shown["images"] == [{"page": 3, "kind": "figure"}]
    crop = Image.open(io.BytesIO(base64.b64decode(pictures[0].data)))
    assert abs(crop.width / crop.height - (x1 - x0) / (bottom - top)) < 0.05  # the figure, not the page


async def test_an_old_index_says_to_reingest_and_a_text_has_no_pages(connect, app_state: AppState) -> None:
    backend = app_state.backend
    old = await backend.upsert(COLLECTION, UpsertDocumentRequest(
        source="old.pdf", key="/old/report.pdf", title="Old report", file_type="pdf", content_hash="ab" * 32,
        chunks=[ChunkIn(index=0, text="The harbour office closes the north car park for resurfacing.", page=1,
                        page_end=1)],
    ))  # fmt: skip
    await app_state.ingestor.ingest_text("Notes without pages: the orchids need misting twice a day, mostly.",
                                         collection=COLLECTION, name="orchid notes")  # fmt: skip
    async with connect() as client:
        out, _ = await with_blocks(client, "search", query="north car park resurfacing", collection=COLLECTION, top_k=3,
                            response_format="detailed")  # fmt: skip
        missing, _ = await with_blocks(client, "get_document_pages", doc_id=old.doc_id, collection=COLLECTION,
                                first_page=1, chunk_index=0, image="page")  # fmt: skip
        text, _ = await with_blocks(client, "search", query="orchids misting", collection=COLLECTION, top_k=1,
                             response_format="detailed")  # fmt: skip
    hit = next(r for r in out["results"] if r["doc_id"] == old.doc_id)
    assert "regions" not in hit and "force=true" in out["message"]
    assert missing["success"] is False and "force=true" in missing["suggestion"]
    assert "regions" not in text["results"][0] and "force=true" not in text["message"]


async def test_a_page_image_needs_the_read_right(app_state: AppState, paper: Paper) -> None:
    with acting_as(Caller("stranger", ())), pytest.raises(ToolFailure) as refused:
        await app_state.library.page_image(COLLECTION, paper.doc_id, 3)
    assert refused.value.code == "COLLECTION_NOT_FOUND"
