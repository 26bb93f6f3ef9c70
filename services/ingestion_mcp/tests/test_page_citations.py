"""A hit cites the page that holds the matched passage (issue 21, point 4).

A generated 200-page report (bench/pdf_scale_docs.py: prose that flows across page breaks, headings, a few
tables, one unique sentence per page) goes through the real pipeline: docling's native PDF pipeline, the
chunker, the gateway with the real model and Milvus Lite. Searching for each page's sentence, the top hit
must cite that page. Before the fix a chunk that spans a page break was cited by its first page: of the best
hits that held the sentence, 66 (hybrid), 66 (keyword) and 60 (semantic) cited the page before; now none.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from ingestion_mcp.server import build_server
from ingestion_mcp.state import AppState
from mcp import Client

from bench.pdf_scale_docs import report_pdf
from scripts.service_stack import call

PAGES = 200
COLLECTION = "citations"
pytestmark = pytest.mark.timeout(1800)


@dataclass(frozen=True)
class Report:
    sentences: dict[int, str]
    state: AppState
    ingest_s: float


@pytest.fixture(scope="module")
async def report(app_state: AppState, docs_dir: Path) -> AsyncIterator[Report]:
    """Ingested once for the module: the conversion and embedding of 200 pages take a minute or two."""
    data, sentences = report_pdf(PAGES, seed=21)
    path = docs_dir / "annual_report.pdf"
    path.write_bytes(data)
    patient = AppState.create(app_state.settings.model_copy(update={"sync_wait_s": 1800}), app_state.backend)
    started = time.perf_counter()
    async with Client(build_server(patient)) as client:
        out = await call(client, "ingest_document", file_path=str(path), collection=COLLECTION)
    assert out["success"] and out["status"] == "indexed", out
    yield Report(sentences, app_state, time.perf_counter() - started)


async def cited_pages(report: Report, mode: str) -> tuple[dict[int, int | None], list[int]]:
    """page -> the page cited by the best of the top 3 hits that holds that page's sentence (None: none holds
    it), and the pages whose top hit does not hold it (ranking, not citing)."""
    cited: dict[int, int | None] = {}
    not_first: list[int] = []
    async with Client(build_server(report.state)) as client:
        for page, sentence in report.sentences.items():
            out = await call(
                client, "search", query=sentence, collection=COLLECTION, mode=mode, top_k=3, response_format="detailed"
            )
            holding = [hit for hit in out["results"] if count(sentence) in hit["text"]]  # the count is its own
            cited[page] = holding[0]["page"] if holding else None
            if not holding or holding[0] is not out["results"][0]:
                not_first.append(page)
    return cited, not_first


def count(sentence: str) -> str:
    return next(word for word in sentence.split() if word.isdigit())


def words(text: str) -> str:
    return " ".join(text.split())


def wrong(cited: dict[int, int | None]) -> dict[int, int | None]:
    return {page: got for page, got in cited.items() if got is not None and got != page}


async def test_every_page_sentence_cites_its_page_in_hybrid_mode(report: Report) -> None:
    cited, not_first = await cited_pages(report, "hybrid")
    print(f"ingest of {PAGES} pages: {report.ingest_s:.1f} s")
    print(f"hybrid: {len(wrong(cited))} wrong pages; top hit without the sentence: {len(not_first)}")
    assert wrong(cited) == {}, wrong(cited)
    # Ranking, not citing: hybrid leaves 3 sentences out of its top 3 (a near-duplicate sentence of another page
    # ranks higher; keyword mode finds all 200). Room for 2 more; a fixed ranking can lower it.
    missed = [page for page, got in cited.items() if got is None]
    assert len(missed) <= 5, missed


@pytest.mark.parametrize("mode", ["keyword", "semantic"])
async def test_hits_that_hold_the_sentence_cite_its_page(report: Report, mode: str) -> None:
    cited, not_first = await cited_pages(report, mode)
    missed = [p for p, got in cited.items() if got is None]
    print(
        f"{mode}: {len(wrong(cited))} wrong pages; top hit without the sentence: {len(not_first)}, top 3: {len(missed)}"
    )
    assert wrong(cited) == {}, wrong(cited)


async def _pages(client: Client, doc_id: str, first: int, last: int) -> dict[int, str]:
    """Pages first..last through get_document_pages, following each cut answer."""
    texts: dict[int, str] = {}
    arguments: dict[str, object] = {"doc_id": doc_id, "collection": COLLECTION, "first_page": first, "last_page": last}
    while True:
        out = await call(client, "get_document_pages", **arguments)
        assert out["success"], out
        for page in out["pages"]:
            texts[page["page"]] = texts.get(page["page"], "") + page["text"]
        if not out.get("truncated"):
            return texts
        arguments |= {"first_page": out["next_page"], "start_char": out["next_start_char"]}


async def test_an_agent_reads_outline_section_and_pages_around_a_hit_and_cites_page_97(report: Report) -> None:
    """Issue 30, point 7: search finds a passage on page 97; the agent reads the outline, the section around
    the passage and pages 96-98 through the navigation tools, and cites page 97."""
    sentence = report.sentences[97]
    async with Client(build_server(report.state)) as client:
        found = await call(client, "search", query=sentence, collection=COLLECTION, top_k=3)
        hit = next(h for h in found["results"] if count(sentence) in h["text"])
        assert hit["page"] == 97 and hit["section"]
        outline = await call(client, "get_document_outline", doc_id=hit["doc_id"], collection=COLLECTION)
        sections = list(outline["sections"])
        while outline.get("next_offset"):
            outline = await call(client, "get_document_outline", doc_id=hit["doc_id"], collection=COLLECTION,
                                 offset=outline["next_offset"])  # fmt: skip
            sections += outline["sections"]
        assert len(sections) == outline["total"] > 10
        assert [s["page"] for s in sections if s.get("page")] == sorted(s["page"] for s in sections if s.get("page"))
        where = {"doc_id": hit["doc_id"], "collection": COLLECTION, "heading": hit["section"].split(" > ")}
        section = await call(client, "get_document_section", **where)
        text = section["content"]
        while section.get("truncated"):
            section = await call(client, "get_document_section", **where, start_char=section["next_start_char"])
            text += section["content"]
        assert count(sentence) in text and section["page"] <= 97 <= section["page_end"]
        pages = await _pages(client, hit["doc_id"], 96, 98)
        assert sorted(pages) == [96, 97, 98]
        held = {
            page: [p for p in (96, 97, 98) if words(report.sentences[p]) in words(body)] for page, body in pages.items()
        }
        assert held == {96: [96], 97: [97], 98: [98]}  # each page holds its own sentence only: cite page 97
