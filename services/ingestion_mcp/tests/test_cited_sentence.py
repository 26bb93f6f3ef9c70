"""The cited sentence, marked (issue 47, point 6): a search hit names the sentence of its passage that answers the
query, its page picture marks that sentence's lines apart from the rest of the passage (the rest lighter), and the
console emphasises it and opens the page scrolled to it.

Real material: Brian Berliner's "CVS II" paper (Debian's cvs package), through a real MCP client and the console's
real HTTP app on the shared embedded backend (docling's native PDF pipeline, the chunker, the gateway).
"""

from __future__ import annotations

import base64
import io
import re
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from ingestion_mcp.state import AppState
from PIL import Image

from scripts.system_files import CVS_PAPER, needs

from .console.conftest import console
from .test_evidence import tint, with_blocks

COLLECTION = "cited"
QUESTION = "How is a checked out file brought up to date with the head revision?"
# Page 3: the sentence that answers, inside a paragraph of nine printed lines (the converter straightens quotes).
ANSWER = 'A checked out file is brought up-to-date with the "head" revision using the "update" command of cvs.'
pytestmark = [pytest.mark.timeout(900), needs(CVS_PAPER)]


def flat(text: str) -> str:
    return " ".join(text.replace("- ", "-").split())


@pytest.fixture(scope="module")
async def paper(app_state: AppState, docs_dir: Path) -> AsyncIterator[str]:
    path = docs_dir / "cvs-paper-cited.pdf"
    shutil.copyfile(CVS_PAPER, path)
    outcome = await app_state.ingestor.ingest_file(str(path), collection=COLLECTION)
    assert outcome.status == "indexed"
    yield outcome.doc_id


async def answering_hit(client: Any) -> dict[str, Any]:
    out, _ = await with_blocks(client, "search", query=QUESTION, collection=COLLECTION, top_k=5,
                               response_format="detailed")  # fmt: skip
    return next(r for r in out["results"] if "brought up-to-date" in flat(r["text"]))


async def test_a_hit_names_the_sentence_that_answers(connect, paper: str) -> None:
    async with connect() as client:
        hit = await answering_hit(client)
        concise, _ = await with_blocks(client, "search", query=QUESTION, collection=COLLECTION)
    quoted = [flat(hit["text"][start:end]) for start, end in hit["cited"]]
    assert flat(ANSWER) in quoted, quoted  # the sentence as printed, neither cut nor run on
    assert sum(end - start for start, end in hit["cited"]) < len(hit["text"]) / 3  # not the whole passage
    assert all("cited" not in result for result in concise["results"])  # detailed only: concise answers stay short


async def test_the_page_marks_the_cited_lines_apart_from_the_rest(connect, paper: str) -> None:
    async with connect() as client:
        hit = await answering_hit(client)
        shown, content = await with_blocks(client, "get_document_pages", doc_id=paper, collection=COLLECTION,
                                           first_page=3, chunk_index=hit["chunk_index"], image="page",
                                           query=QUESTION)  # fmt: skip
    image = shown["images"][0]
    assert 0 < image["cited"] < image["marked"] and "cited for the query" in shown["message"]
    picture = Image.open(io.BytesIO(base64.b64decode(next(p for p in content if p.type == "image").data)))
    scale = picture.height / 794
    boxes = [box for entry in hit["regions"] if entry["page"] == 3 for box in entry["boxes"]]
    (start, end), *_ = [span for span in hit["cited"] if "brought up-to-date" in flat(hit["text"][span[0] : span[1]])]
    cited = [box[2:] for box in boxes if box[0] < end and start < box[1]]
    rest = [box[2:] for box in boxes if not (box[0] < end and start < box[1])]
    strong = min(tint(picture, box, scale) for box in cited)
    light = max(tint(picture, box, scale) for box in rest)
    assert strong > 40 and strong > 2 * light and light > 5, (strong, light)  # both marked, the cited lines more
    top = image["cited_box"][1]
    assert min(box[1] for box in cited) / 794 == pytest.approx(top, abs=0.002)  # where a viewer scrolls


async def test_the_console_emphasises_the_cited_sentence_and_scrolls_to_it(app_state: AppState, paper: str) -> None:
    async with console(app_state) as client:
        found = await client.get("/search", params={"q": QUESTION, "collection": COLLECTION, "mode": "hybrid"})
        assert found.status_code == 200, found.text
        marks = re.findall(r'<mark data-test="hit-cited">(.*?)</mark>', found.text, re.S)
        assert any("brought up-to-date" in flat(m) for m in marks), marks
        link = re.search(r'href="([^"]*/pages/3\?chunk=\d+&amp;q=[^"]*&amp;cited=[\d,-]+)"', found.text)
        assert link, "no page link carrying the query and the cited sentences"
        page = await client.get(link[1].replace("&amp;", "&"))
        assert page.status_code == 200, page.text
        cited = re.findall(r'<mark class="cited" data-test="page-cited">(.*?)</mark>', page.text, re.S)
        assert any("brought up-to-date" in flat(m) for m in cited), cited
        anchor = re.search(r'id="page-cited-line" class="cited-anchor" data-top="([\d.]+)"', page.text)
        assert anchor and 0 < float(anchor[1]) < 100 and 'src="/static/cited.js"' in page.text
        src = re.search(r'id="page-image" class="page-image" src="([^"]+)"', page.text)
        assert src and "q=" in src[1]
        image = await client.get(src[1].replace("&amp;", "&"))
        assert image.status_code == 200 and int(image.headers["x-cited"]) > 0
