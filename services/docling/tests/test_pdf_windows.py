"""Big PDFs: converted page window by page window (same result as whole), progress streamed, a client that
leaves stops its worker at once, a PDF past the page limit refused unread (issue 21)."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import httpx
import pytest
import uvicorn
from docling_service.converter import Converter, ConverterOptions
from docling_service.main import create_app
from docling_service.pool import PoolOptions, WorkerPool
from docling_service.settings import DoclingSettings
from fastapi import FastAPI
from ingestion_contracts.docling import ConvertResponse

from bench.pdf_pages import mixed_report_pdf
from bench.pdf_scale_docs import report_pdf
from scripts.service_stack import free_port

pytestmark = pytest.mark.timeout(600)


def test_a_pdf_converted_in_windows_equals_the_whole_conversion() -> None:
    """Headings, both kinds of table, an OCR'd scan and a paragraph across a page break, 2 pages at a time."""
    data = mixed_report_pdf()
    whole = Converter(ConverterOptions(page_window=1000))
    windowed = Converter(ConverterOptions(page_window=2))
    whole.start()
    windowed.start()
    seen: list[tuple[int, int]] = []
    expected = whole.convert(data, "mixed.pdf")
    result = windowed.convert(data, "mixed.pdf", lambda done, total: seen.append((done, total)))
    assert result.model_dump(exclude={"conversion_ms"}) == expected.model_dump(exclude={"conversion_ms"})
    kinds = {block.kind for block in result.blocks}
    assert {"heading", "table", "paragraph"} <= kinds and result.ocr_pages == [4] and result.page_count == 9
    assert "MEMORANDUM" in result.markdown  # the scanned page, read by OCR inside its window
    done = [pages for pages, _ in seen]
    assert done == sorted(done) and done[0] == 0 and done[-1] == 9 and {total for _, total in seen} == {9}
    assert {2, 4, 6, 8} <= set(done)  # after each window


@contextlib.asynccontextmanager
async def serving(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    """The app under uvicorn on loopback (a real socket: a response streams, a client can go away)."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None, lifespan="on"))
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(server.serve)
        with anyio.fail_after(180):  # start-up waits for a worker to load docling
            while not server.started:
                await anyio.sleep(0.05)
        try:
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=300) as http:
                yield http
        finally:
            server.should_exit = True


def _app(**overrides: object) -> FastAPI:
    return create_app(DoclingSettings(_env_file=None, **overrides))


def _worker_pids(app: FastAPI) -> set[int]:
    pool = app.state.conversion.pool
    return {worker.pid for worker in pool._idle}


async def test_the_stream_says_each_window_of_pages_then_the_result() -> None:
    data, sentences = report_pdf(40)
    app = _app(workers=1, pdf_page_window=10)
    async with serving(app) as http:
        events = []
        async with http.stream("POST", "/v1/convert/stream", files={"file": ("report.pdf", data)}) as response:
            assert response.status_code == 200 and response.headers["content-type"] == "application/x-ndjson"
            async for line in response.aiter_lines():
                events.append((time.perf_counter(), json.loads(line)))
        plain = (await http.post("/v1/convert", files={"file": ("report.pdf", data)})).json()
    progress = [(event["pages_done"], event["pages_total"]) for _, event in events if event["event"] == "progress"]
    assert progress == [(0, 40), (10, 40), (20, 40), (30, 40), (40, 40)]
    assert events[-1][1]["event"] == "result" and events[-1][0] > events[0][0]  # lines came as the work went
    result = events[-1][1]["result"]
    assert all(sentence in result["markdown"] for sentence in sentences.values())
    same = ConvertResponse.model_validate(result), ConvertResponse.model_validate(plain)
    assert same[0].model_dump(exclude={"conversion_ms"}) == same[1].model_dump(exclude={"conversion_ms"})


async def test_a_stream_error_is_the_error_the_json_route_answers() -> None:
    app = _app(workers=1)
    async with serving(app) as http:
        response = await http.post("/v1/convert/stream", files={"file": ("broken.pdf", b"%PDF-1.7 not really")})
        plain = await http.post("/v1/convert", files={"file": ("broken.pdf", b"%PDF-1.7 not really")})
    (line,) = [json.loads(text) for text in response.text.splitlines()]
    assert line["event"] == "error" and line["status"] == plain.status_code == 422
    assert line["error"]["code"] == plain.json()["code"] == "CORRUPT_FILE"


async def test_a_client_that_leaves_mid_conversion_stops_its_worker_at_once() -> None:
    """Issue 21: the 500-page report, left halfway with the default window (25 pages)."""
    data, _ = report_pdf(500)
    app = _app(workers=1)
    async with serving(app) as http:
        (busy,) = _worker_pids(app)
        async with http.stream("POST", "/v1/convert/stream", files={"file": ("long.pdf", data)}) as response:
            async for line in response.aiter_lines():
                if json.loads(line).get("pages_done", 0) >= 250:
                    break  # leaving the block closes the connection mid-conversion
        left = time.perf_counter()
        while Path(f"/proc/{busy}").exists() and time.perf_counter() - left < 30:
            await anyio.sleep(0.01)
        gone_s = time.perf_counter() - left
        print(f"worker {busy} gone {gone_s:.3f} s after the client left")
        assert not Path(f"/proc/{busy}").exists() and gone_s < 10  # not left to run to its 300 s deadline
        again = await http.post("/v1/convert", files={"file": ("short.pdf", report_pdf(3)[0])})
        assert again.status_code == 200 and again.json()["page_count"] == 3
        assert busy not in _worker_pids(app) and len(_worker_pids(app)) == 1


async def test_a_pdf_past_the_page_limit_is_refused_unread() -> None:
    app = _app(workers=1, max_pdf_pages=5)
    async with serving(app) as http:
        response = await http.post("/v1/convert", files={"file": ("six.pdf", report_pdf(6)[0])})
    body = response.json()
    assert response.status_code == 422 and body["code"] == "TOO_MANY_PAGES"
    assert "6 pages" in body["error"] and "at most 5" in body["error"] and "DOCLING_MAX_PDF_PAGES" in body["suggestion"]


async def test_a_worker_left_mid_conversion_never_serves_the_next_document() -> None:
    """The reader of the progress fails (a closed stream) while the worker converts: that worker is stopped, and the
    next document gets its own answer from a fresh one, not the abandoned document's."""
    pool = WorkerPool(PoolOptions(workers=1), ConverterOptions(page_window=5))
    await anyio.to_thread.run_sync(pool.start)
    try:
        (abandoned,) = [worker.pid for worker in pool._idle]

        async def broken_reader(done: int, _total: int) -> None:
            if done >= 5:
                raise OSError("the progress stream is closed")

        with pytest.raises(OSError):
            await pool.convert(report_pdf(120)[0], "long.pdf", broken_reader)
        short = await pool.convert(report_pdf(3)[0], "short.pdf")
        assert short.file_name == "short.pdf" and short.page_count == 3
        assert abandoned not in [worker.pid for worker in pool._idle]
    finally:
        await anyio.to_thread.run_sync(pool.close)
