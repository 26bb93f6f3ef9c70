"""Every supported format through ingest_document, hostile files refused with nothing written, and the
job path (an ingest that outlives the wait answers with a job id; progress only rises)."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest
from ingestion_mcp.state import AppState

pytestmark = pytest.mark.timeout(300)
FIXTURES = Path(__file__).resolve().parents[3] / "tests" / "fixtures"
EXPECTED = {  # file -> (query, words the top passage holds, page)
    "sample.pdf": ("axolotl blastema Xochimilco", "axolotl", 2),
    "sample.docx": ("oxalic acid varroa midwinter", "oxalic", None),
    "sample.pptx": ("Vatnajokull glacier thinning", "Vatnajokull", 1),
    "sample.xlsx": ("Paranal observatory Chile altitude", "Paranal", None),
    "sample.html": ("rye flour water twelve hours starter", "rye flour", None),
    "sample.md": ("Fresnel lens Eddystone chamois", "Fresnel", None),
    "sample.txt": ("sphagnum bog Lake Vyrnwy", "sphagnum", None),
}


@pytest.fixture(scope="module")
def fixture_copies(docs_dir: Path) -> Path:
    target = docs_dir / "fixtures"
    shutil.copytree(FIXTURES, target, dirs_exist_ok=True)
    return target


@pytest.mark.parametrize("name", sorted(EXPECTED))
async def test_each_format_is_ingested_and_found(connect, call_tool, fixture_copies: Path, name: str) -> None:
    query, words, page = EXPECTED[name]
    async with connect() as client:
        out = await call_tool(client, "ingest_document", file_path=str(fixture_copies / name), collection="formats")
        assert out["success"] is True and out["status"] in ("indexed", "skipped"), out
        found = await call_tool(client, "search", query=query, collection="formats", top_k=3, mode="keyword")
    top = found["results"][0]
    assert words in top["text"] and top["source"].endswith(name), found
    if page is not None:
        assert top["page"] == page


async def test_boilerplate_is_not_indexed_from_html(connect, call_tool, fixture_copies: Path) -> None:
    async with connect() as client:
        await call_tool(client, "ingest_document", file_path=str(fixture_copies / "sample.html"), collection="formats")
        found = await call_tool(client, "search", query="window.analytics tracking pixel", collection="formats",
                                mode="keyword", filters={"file_type": "html"})  # fmt: skip
    assert all("analytics" not in r["text"] for r in found["results"])


@pytest.mark.parametrize(
    ("name", "message"),
    [("encrypted.pdf", "password-protected"), ("corrupt.pdf", ""), ("fake.pdf", "not a valid PDF"),
     ("bomb.docx", "")],
)  # fmt: skip
async def test_hostile_files_are_refused_and_nothing_is_written(
    connect, call_tool, fixture_copies: Path, app_state: AppState, name: str, message: str
) -> None:
    before = (await app_state.backend.list_collections()).model_dump()
    async with connect() as client:
        out = await call_tool(client, "ingest_document", file_path=str(fixture_copies / name), collection="formats")
    assert out["success"] is False and message in out["error"] and out["suggestion"], out
    assert (await app_state.backend.list_collections()).model_dump() == before


async def test_slow_ingest_answers_with_a_job_and_progress_only_rises(
    connect, call_tool, app_state: AppState, fixture_copies: Path
) -> None:
    impatient = AppState.create(app_state.settings.model_copy(update={"sync_wait_s": 0}), app_state.backend)
    async with connect(impatient) as client:
        started = await call_tool(client, "ingest_document", file_path=str(fixture_copies / "sample.pdf"),
                                  collection="jobs_test")  # fmt: skip
        assert started["success"] is True and started["job_id"].startswith("job_"), started
        seen = []
        for _ in range(200):
            status = await call_tool(client, "get_job_status", job_id=started["job_id"])
            seen.append(status["job"]["progress"])
            if status["job"]["status"] != "running":
                break
            await asyncio.sleep(0.1)
        assert status["job"]["status"] == "completed", status
        assert status["job"]["result"]["status"] == "indexed" and seen == sorted(seen) and seen[-1] == 100
        assert (await call_tool(client, "list_active_jobs"))["jobs"] == []
        missing = await call_tool(client, "get_job_status", job_id="job_nope")
        assert missing["success"] is False and "list_active_jobs" in missing["suggestion"]


async def test_the_last_submitted_write_wins_in_process_too(connect, call_tool, app_state: AppState) -> None:
    """The embedded default (jobs in this process): two ingests of one name, the first long (its write starts
    last), the second short. The write order each took when it was submitted keeps the second."""
    impatient = AppState.create(app_state.settings.model_copy(update={"sync_wait_s": 0}), app_state.backend)

    def text(marker: str, paragraphs: int) -> str:
        return "\n\n".join(f"Paragraph {n} of the {marker} draft about orchard irrigation schedules and valves."
                           for n in range(paragraphs))  # fmt: skip

    async with connect(impatient) as client:
        older = await call_tool(client, "ingest_text", text=text("older", 400), name="one-name", collection="order_t")
        newer = await call_tool(client, "ingest_text", text=text("newer", 3), name="one-name", collection="order_t")
        ends = {}
        for label, started in (("older", older), ("newer", newer)):
            for _ in range(600):
                status = await call_tool(client, "get_job_status", job_id=started["job_id"])
                if status["job"]["status"] != "running":
                    break
                await asyncio.sleep(0.1)
            ends[label] = status["job"]
        listing = await call_tool(client, "list_documents", collection="order_t")
        content = await call_tool(
            client, "get_document", doc_id=listing["documents"][0]["doc_id"], collection="order_t"
        )
    assert ends["newer"]["result"]["status"] == "indexed" and ends["older"]["result"]["status"] == "skipped", ends
    assert len(listing["documents"]) == 1 and "newer draft" in content["content"] and "older" not in content["content"]


async def test_a_page_of_sixty_thousand_nested_divs_is_refused_at_once_and_nothing_is_written(
    connect, call_tool, docs_dir: Path, app_state: AppState
) -> None:
    deep = docs_dir / "deep.html"  # 660 KB; before the nesting pre-check it held a docling worker for minutes
    deep.write_bytes(b"<html><body>" + b"<div>" * 60_000 + b"deep" + b"</div>" * 60_000 + b"</body></html>")
    before = (await app_state.backend.list_collections()).model_dump()
    async with connect() as client:
        out = await call_tool(client, "ingest_document", file_path=str(deep), collection="formats")
    assert out["success"] is False and "job_id" not in out, out  # answered, not left running as a job
    assert "60002 levels deep" in out["error"] and "DOCLING_MAX_HTML_DEPTH" in out["suggestion"], out
    assert (await app_state.backend.list_collections()).model_dump() == before
