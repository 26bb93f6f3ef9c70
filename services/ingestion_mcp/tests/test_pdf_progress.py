"""A 100-page PDF through a real MCP client: progress page by page while it converts, a forced re-ingest
cancelled halfway through conversion changes nothing, then it goes through again (issue 21)."""

from __future__ import annotations

import itertools
import re
import time
from pathlib import Path

import anyio
import pytest
import uvicorn
from docling_service.main import create_app
from docling_service.settings import DoclingSettings
from ingestion_mcp.backend import Backend
from ingestion_mcp.backend.clients import ServiceClient, make_http_client
from ingestion_mcp.state import AppState

from bench.pdf_scale_docs import report_pdf
from scripts.service_stack import free_port

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
        # The hit cites the page holding the sentence, not the page its chunk starts on (prose here flows across
        # page breaks). Keyword mode: a near-duplicate sentence of another page can outrank it in dense retrieval.
        hit = await call_tool(client, "search", query=sentences[97], collection="big_pdf", mode="keyword")
        top = hit["results"][0]
        assert sentences[97] in top["text"] and top["page"] == 97, hit


async def test_over_http_the_client_hears_the_pages_and_a_cancel_stops_the_remote_worker() -> None:
    """Deployment mode: the docling service in its own server (uvicorn on loopback), reached over HTTP."""
    port = free_port()
    app = create_app(DoclingSettings(_env_file=None, workers=1, pdf_page_window=5))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None, lifespan="on"))
    docling = ServiceClient("docling", make_http_client(f"http://127.0.0.1:{port}", token=None, timeout_s=120))
    backend = Backend(docling=docling, chunker=docling, gateway=docling)  # only convert is called here
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(server.serve)
        with anyio.fail_after(180):
            while not server.started:
                await anyio.sleep(0.05)
        pages: list[tuple[int, int]] = []

        async def record(done: int, total: int) -> None:
            pages.append((done, total))

        converted = await backend.convert(report_pdf(20)[0], "twenty.pdf", record)
        assert converted.page_count == 20 and pages == [(0, 20), (5, 20), (10, 20), (15, 20), (20, 20)]

        (busy,) = {worker.pid for worker in app.state.conversion.pool._idle}
        reached = anyio.Event()

        async def watch(done: int, total: int) -> None:
            if done >= 10:
                reached.set()

        async with anyio.create_task_group() as call:  # the ingest, cancelled once 10 pages are converted
            call.start_soon(backend.convert, report_pdf(300)[0], "long.pdf", watch)
            await reached.wait()
            call.cancel_scope.cancel()
        left = time.perf_counter()
        while Path(f"/proc/{busy}").exists() and time.perf_counter() - left < 30:
            await anyio.sleep(0.01)
        assert not Path(f"/proc/{busy}").exists(), "the remote worker kept converting after the client left"
        server.should_exit = True
        await docling.aclose()
