"""Real pages as printed, through a real MCP client on the real pipeline (issue 47): a table row is one passage
line, and the running heads and page numbers are in no passage but still on their page.

Pages 29-33 of Graphviz's dot guide (pdfTeX; Debian's graphviz-doc): prose, the node, edge and graph attribute tables,
each page headed "dot User's Manual, January 5, 2015" and its number.
"""

from __future__ import annotations

import gzip
import io
from pathlib import Path
from typing import Any

import pytest
from ingestion_mcp.state import AppState
from pypdf import PdfReader, PdfWriter

from scripts.system_files import DOT_GUIDE, needs

GUIDE = DOT_GUIDE
COLLECTION = "printed"
HEAD = "dot User's Manual, January 5, 2015"  # as the converter writes it (straight apostrophe)
pytestmark = [
    pytest.mark.timeout(900),
    needs(GUIDE),
]


@pytest.fixture(scope="module")
async def guide(app_state: AppState, docs_dir: Path) -> str:
    reader, writer = PdfReader(io.BytesIO(gzip.decompress(GUIDE.read_bytes()))), PdfWriter()
    for number in range(29, 34):
        writer.add_page(reader.pages[number - 1])
    path = docs_dir / "dotguide-29-33.pdf"
    with path.open("wb") as out:
        writer.write(out)
    outcome = await app_state.ingestor.ingest_file(str(path), collection=COLLECTION)
    assert outcome.status == "indexed"
    return outcome.doc_id


async def test_a_table_row_comes_back_whole_in_its_passage(connect, call_tool, guide: str) -> None:
    """A search for what fixedsize does found a passage that held the name and default but not the value: the
    table was one Markdown row of glued words, cut by column."""
    async with connect() as client:
        out = await call_tool(client, "search", query="label text has no affect on node size", collection=COLLECTION,
                              mode="keyword", top_k=3)  # fmt: skip
    assert "| fixedsize | false | label text has no affect on node size |" in out["results"][0]["text"]


async def test_running_heads_and_page_numbers_are_in_no_passage_but_on_their_page(
    connect, call_tool, guide: str
) -> None:
    """Running heads were passage text: a passage of page 31's table began "dot User's Manual, January 5, 2015 31",
    and one holding only a head on its last page cited that page too."""
    async with connect() as client:
        found = await call_tool(client, "search", query="dot User's Manual January 2015", collection=COLLECTION,
                                mode="keyword", top_k=10)  # fmt: skip
        chunks = await call_tool(client, "get_document", doc_id=guide, collection=COLLECTION)
        page: dict[str, Any] = await call_tool(client, "get_document_pages", doc_id=guide, collection=COLLECTION,
                                               first_page=3)  # fmt: skip
    assert all(HEAD not in hit["text"] for hit in found["results"])
    assert HEAD not in str(chunks)
    (shown,) = page["pages"]
    assert shown["furniture"] == [HEAD, "31"] and HEAD not in shown["text"]
    assert "| fixedsize | false | label text has no affect on node size |" in shown["text"]
