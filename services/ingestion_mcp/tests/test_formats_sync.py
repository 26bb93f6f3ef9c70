"""A folder of real documents of every format the converter reads, synced through the MCP client (issue 51):
every file accounted for, each found by its own words, each outline holding its headings; a type still refused
is named with the accepted list; every advice the navigation tools give (ingest again with force=true) changes
the answer when followed, and the outline of a PDF without bookmarks gives none that would not."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path
from typing import Any

import anyio
import pypdfium2 as pdfium
import pytest
from ingestion_contracts.gateway import ChunkIn, UpsertDocumentRequest
from ingestion_mcp.ingest.acquire import sha256
from ingestion_mcp.state import AppState

from scripts.system_files import DTC_PAPER
from tests.fixtures.real_documents import DOCUMENTS

pytestmark = pytest.mark.timeout(600)
DTC = DTC_PAPER


async def _outcome(client: Any, call_tool: Any, answer: dict[str, Any]) -> dict[str, Any]:
    """The tool's result: the answer itself, or (past the synchronous wait) its job's result."""
    if "job_id" not in answer:
        return answer
    with anyio.fail_after(500):
        while (status := await call_tool(client, "get_job_status", job_id=answer["job_id"]))["job"]["status"] in (
            "running",
            "queued",
        ):
            await anyio.sleep(0.5)
    return status["job"]["result"]  # type: ignore[no-any-return]  # a finished job holds its outcome


# Read whole by the converter's own test (services/docling/tests/test_formats_real.py); synced here only in the dry
# run: embedding their 240,000 characters would cost CI most of a minute and test no path the others do not (a
# .gz and text are read through ChkTeX.tex.gz and tutorial.rst).
LARGE = ("live-manual.en.epub", "MyFirstContribution.adoc", "README.org.gz")


async def test_a_folder_of_every_format_is_synced_searched_and_outlined(connect, call_tool, docs_dir: Path) -> None:
    present = [document for document in DOCUMENTS if not document.missing]
    if len(present) < len(DOCUMENTS) // 2:
        pytest.skip("; ".join(sorted({d.missing or "" for d in DOCUMENTS if d.missing})))
    folder = docs_dir / "formats"
    folder.mkdir()
    for document in present:
        shutil.copyfile(document.path, folder / document.name)
    (folder / "letter.ott").write_bytes(b"PK\x03\x04 an OpenDocument template")  # not read: skipped, counted
    read = [document for document in present if document.name not in LARGE]
    async with connect() as client:
        plan = await call_tool(client, "sync_folder", folder=str(folder), collection="formats", dry_run=True)
        assert plan["counts"]["added"] == len(present) and plan["counts"]["skipped"] == 1, plan  # the large ones too
        started = await call_tool(client, "sync_folder", folder=str(folder), collection="formats", exclude=list(LARGE))
        synced = await _outcome(client, call_tool, started)
        assert synced["counts"]["added"] == len(read), synced
        assert synced["counts"]["failed"] == 0 and synced["counts"]["skipped"] == 1, synced  # the template
        for document in read:
            found = await call_tool(client, "search", query=document.phrase, collection="formats", top_k=3,
                                    response_format="detailed")  # fmt: skip
            sources = [hit["source"] for hit in found["results"]]
            assert document.name in sources, (document.name, sources)
            if document.headings:
                outline = await call_tool(client, "get_document_outline", collection="formats",
                                          key=str((folder / document.name).resolve()))  # fmt: skip
                titles = [section["title"] for section in outline["sections"]]
                assert all(heading in titles for heading in document.headings), (document.name, titles)


async def test_a_refused_type_is_named_with_the_accepted_ones(connect, call_tool, docs_dir: Path) -> None:
    legacy = docs_dir / "minutes.doc"
    legacy.write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(504))
    async with connect() as client:
        answer = await call_tool(client, "ingest_document", file_path=str(legacy), collection="formats_refused")
    assert answer["success"] is False and "Unsupported file type: .doc" in answer["error"]
    assert all(kind in answer["error"] for kind in ("EPUB", "ODT", "RTF", "EMAIL", "MHTML", "LATEX", ".pdf.gz"))


NO_DTC = "needs Debian's device-tree-compiler (apt-get install device-tree-compiler)"


def _old_index(data: bytes, key: str) -> UpsertDocumentRequest:
    """The paper as an index made before boxes were kept stores it: its pages' text, no boxes (the original kept)."""
    document = pdfium.PdfDocument(data)
    try:
        pages = [document[i].get_textpage().get_text_range() for i in range(len(document))]
    finally:
        document.close()
    texts = [(page, text) for page, text in enumerate(pages, 1) if text.strip()]
    chunks = [ChunkIn(index=i, text=text, page=page, page_end=page) for i, (page, text) in enumerate(texts)]
    return UpsertDocumentRequest(source="dtc-paper.pdf", key=key, file_type="pdf", content_hash=sha256(data),
                                 page_count=len(pages), chunks=chunks)  # fmt: skip


async def _reads(client: Any, call_tool: Any, key: str) -> tuple[dict[str, Any], ...]:
    """The three answers that may advise ingesting again: a section, a page (detailed), a passage's page image."""
    section = await call_tool(client, "get_document_section", collection="advice", key=key, position=0,
                              response_format="detailed")  # fmt: skip
    page = await call_tool(client, "get_document_pages", collection="advice", key=key, first_page=1,
                           response_format="detailed")  # fmt: skip
    image = await call_tool(client, "get_document_pages", collection="advice", key=key, first_page=1, chunk_index=0,
                            image="page")  # fmt: skip
    return section, page, image


@pytest.mark.skipif(not DTC.exists(), reason=NO_DTC)
async def test_every_advice_of_the_navigation_tools_changes_the_answer_when_followed(
    connect, call_tool, docs_dir: Path, app_state: AppState
) -> None:
    paper = docs_dir / "dtc-paper.pdf"
    data = gzip.decompress(DTC.read_bytes())
    paper.write_bytes(data)
    key = str(paper.resolve())
    await app_state.backend.upsert("advice", _old_index(data, key))
    await app_state.backend.keep_original("advice", sha256(data), data)
    async with connect() as client:
        before = await _reads(client, call_tool, key)
        for answer in before:  # each says the text is not located, and that ingesting again with force=true locates it
            assert answer["success"] is True and "force=true" in answer["message"], answer
        assert "regions" not in before[0] and "boxes" not in before[1]["pages"][0]
        followed = await _outcome(client, call_tool, await call_tool(client, "ingest_document", file_path=str(paper),
                                                                     collection="advice", force=True))  # fmt: skip
        assert followed["success"] is True, followed
        section, page, image = await _reads(client, call_tool, key)
        assert section["regions"] and page["pages"][0]["boxes"]  # followed, the advice located the text
        assert "marked on it" in image["message"] or "lies on page" in image["message"], image["message"]
        assert not [answer["message"] for answer in (section, page, image) if "force" in answer["message"]]
        outline = await call_tool(client, "get_document_outline", collection="advice", key=key)
    assert outline["levels_known"] is False  # no bookmarks: the levels are the layout's guess
    # Ingesting again gives the same guess (an agent told to looped on it): no advice to ingest is given.
    assert "force" not in outline["message"] and "ingest" not in outline["message"].lower()
