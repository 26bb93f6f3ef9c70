"""A 100-page PDF through a real MCP client: progress page by page while it converts, a forced re-ingest
cancelled halfway through conversion changes nothing, then it goes through again (issue 21)."""

from __future__ import annotations

import itertools
import re
import time
from pathlib import Path

import anyio
import pytest
from ingestion_mcp.state import AppState

from bench.pdf_pages import report_pdf

pytestmark = pytest.mark.timeout(600)
PAGE = re.compile(r"converting page (\d+)/(\d+)")


async def _counts(app_state: AppState, collection: str) -> tuple[int, int]:
    info = await app_state.backend.get_collection(collection)
    return info.document_count, info.chunk_count


async def _outcome(client, call_tool, answer: dict) -> dict:
    """The ingest's result: the answer itself, or (a busy machine: past the synchronous wait) its job's result."""
    if "job_id" not in answer:
        return answer
    with anyio.fail_after(400):
        while (status := await call_tool(client, "get_job_status", job_id=answer["job_id"]))["job"]["status"] in (
            "running",
            "queued",
        ):
            await anyio.sleep(0.5)
    return status["job"]["result"]  # type: ignore[no-any-return]  # a finished ingest job holds its outcome


async def test_a_long_pdf_shows_its_pages_and_a_cancel_mid_conversion_keeps_nothing(
    connect, call_tool, app_state: AppState, docs_dir: Path
) -> None:
    data, sentences = report_pdf(100)
    path = docs_dir / "harbour-report.pdf"
    path.write_bytes(data)
    seen: list[tuple[float, str]] = []

    async def record(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, message or ""))

    patient = AppState.create(app_state.settings.model_copy(update={"sync_wait_s": 55}), app_state.backend)
    async with connect(patient) as client:
        first = await client.call_tool("ingest_document", {"file_path": str(path), "collection": "big_pdf"},
                                       progress_callback=record)  # fmt: skip
        outcome = await _outcome(client, call_tool, first.structured_content)
        assert outcome["status"] == "indexed", first.content
        pages = [(int(m[1]), int(m[2])) for _, text in seen if (m := PAGE.fullmatch(text))]
        assert len({done for done, _ in pages}) >= 5 and {total for _, total in pages} == {100}, seen
        assert pages[-1] == (100, 100) and all(a[0] <= b[0] for a, b in itertools.pairwise(pages))
        assert all(a[0] <= b[0] for a, b in itertools.pairwise(seen)), "progress went back"
        before = await _counts(app_state, "big_pdf")
        assert before[0] == 1

        # A forced re-ingest, cancelled by the client once a third of the pages are converted.
        halfway, cancelled_at = anyio.Event(), [0.0]

        async def watch(progress: float, total: float | None, message: str | None) -> None:
            if (m := PAGE.fullmatch(message or "")) and int(m[1]) >= 30:
                halfway.set()

        async with anyio.create_task_group() as group:
            scope = anyio.CancelScope()

            async def ingest() -> None:
                with scope:
                    await client.call_tool("ingest_document", {"file_path": str(path), "collection": "big_pdf",
                                           "force": True}, progress_callback=watch)  # fmt: skip

            group.start_soon(ingest)
            with anyio.fail_after(300):
                await halfway.wait()
            cancelled_at[0] = time.perf_counter()
            scope.cancel()
        with anyio.fail_after(60):
            while (await call_tool(client, "list_active_jobs"))["jobs"]:
                await anyio.sleep(0.1)
        print(f"the cancelled ingest ended {time.perf_counter() - cancelled_at[0]:.2f} s after the cancel")
        assert await _counts(app_state, "big_pdf") == before

        again = await call_tool(client, "ingest_document", file_path=str(path), collection="big_pdf", force=True)
        again = await _outcome(client, call_tool, again)
        assert again["status"] in ("indexed", "replaced") and await _counts(app_state, "big_pdf") == before, again
        hit = await call_tool(client, "search", query=sentences[77], collection="big_pdf", mode="keyword")
        top = hit["results"][0]  # a chunk's page is the page it starts on: 77, or 76 when it runs onto 77
        assert "Page 77 records" in top["text"] and top["page"] in (76, 77), hit
