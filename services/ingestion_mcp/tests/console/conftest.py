"""The console through the server's real HTTP app (serving.http_app) in-process, on the package's shared embedded
backend; documents go in through the console's own ingest form, so through the real pipeline."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from ingestion_mcp.http.cancel_relay import CancelRelay
from ingestion_mcp.server import build_server
from ingestion_mcp.serving import http_app
from ingestion_mcp.settings import McpSettings
from ingestion_mcp.state import AppState

BASE = "http://127.0.0.1:8000"
Browser = Callable[..., Any]


def csrf_of(html: str) -> str:
    found = re.search(r'<meta name="csrf-token" content="([^"]*)">', html)
    assert found, html[:500]
    return found.group(1)


@asynccontextmanager
async def console(state: AppState, **headers: str) -> AsyncIterator[httpx.AsyncClient]:
    """A browser-like client on the whole HTTP app (console and /mcp behind the guard)."""
    app = http_app(build_server(state), state, CancelRelay())
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url=BASE, headers=headers, timeout=120) as client:
        yield client


async def upload(
    client: httpx.AsyncClient, state: AppState, name: str, text: str | bytes, collection: str
) -> dict[str, Any]:
    """Ingest a file through the console's form, wait for its job, and give the job's result."""
    form = await client.get("/ingest")
    assert form.status_code == 200 and 'id="ingest-form"' in form.text, form.text
    csrf = csrf_of(form.text)
    answer = await client.post(
        "/ingest", data={"csrf_token": csrf, "collection": collection, "tags": "console-test"},
        files={"file": (name, text.encode() if isinstance(text, str) else text, "application/octet-stream")},
    )  # fmt: skip
    assert answer.status_code == 303, answer.text
    job_id = answer.headers["location"].rsplit("/", 1)[-1]
    job = await state.jobs.wait(job_id, 120)
    assert job.status == "completed", (job.status, job.error)
    page = await client.get(f"/jobs/{job_id}")
    assert 'data-status="completed"' in page.text and 'id="job-document-link"' in page.text
    return dict(job.result)


@pytest.fixture
async def open_state(app_state: AppState, mcp_settings: McpSettings) -> AsyncIterator[AppState]:
    """The none mode (loopback, no token) on the shared backend; what the test made is dropped after."""
    state = AppState.create(mcp_settings, app_state.backend)
    yield state
    await state.jobs.aclose()
    for collection in (await app_state.backend.list_collections()).collections:
        if collection.name.startswith("console-"):
            await app_state.backend.delete_collection(collection.name)
