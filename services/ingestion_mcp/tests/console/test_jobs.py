"""The jobs pages follow the job store (progress, step timings) and cancel through it; the ready message names
the console."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
from ingestion_mcp import serving
from ingestion_mcp.jobs import ProgressFn
from ingestion_mcp.settings import McpSettings
from ingestion_mcp.state import AppState

from .conftest import console, csrf_of


async def slow(state: AppState, params: dict[str, Any], progress: ProgressFn) -> dict[str, Any]:
    await progress(0.1, "reading")
    await anyio.sleep(0.05)
    await progress(0.4, "waiting")
    await anyio.sleep(60)
    return {}


async def test_a_running_job_shows_its_progress_and_is_cancelled_from_the_console(open_state: AppState) -> None:
    open_state.kinds.add("console_slow", slow)
    async with console(open_state) as client:
        job = await open_state.submit_job("console_slow", {}, "a slow console job")
        with anyio.fail_after(10):
            while (await open_state.jobs.get(job.id)).current_step != "waiting":  # type: ignore[union-attr]  # the job was just submitted: its record exists
                await anyio.sleep(0.02)
        table = await client.get("/jobs/table")
        assert f'data-job-id="{job.id}"' in table.text and 'value="40.0"' in table.text
        assert "reading" in table.text and 'data-test="job-cancel"' in table.text  # the closed step's timing
        panel = await client.get(f"/jobs/{job.id}")
        assert 'hx-trigger="every 1s"' in panel.text and 'id="job-cancel"' in panel.text

        cancelled = await client.post(f"/jobs/{job.id}/cancel", data={"csrf_token": csrf_of(panel.text)})
        assert cancelled.status_code == 303
        done = await open_state.jobs.wait(job.id, 10)
        assert done.status == "cancelled"
        final = await client.get(f"/jobs/{job.id}/panel")
        assert 'data-status="cancelled"' in final.text and "every 1s" not in final.text
        assert 'id="jobs-empty"' in (await client.get("/jobs/table")).text
        # Ended, it is listed with how it ended, on the page and in the table that polls itself.
        recent = await client.get("/jobs/recent")
        assert f'data-job-id="{job.id}" data-status="cancelled"' in recent.text, recent.text
        assert "Cancelled: cancelled in the console" in recent.text
        jobs = await client.get("/jobs")
        assert 'id="jobs-recent"' in jobs.text and f'data-job-id="{job.id}" data-status="cancelled"' in jobs.text


def test_the_ready_message_names_the_console(tmp_path: Path) -> None:
    settings = McpSettings.model_validate({"AUTH_TOKEN": "s3cret-value", "data_dir": tmp_path, "port": 8123})
    text = serving.ready_message(settings)
    assert "console: http://127.0.0.1:8123/ (log in with AUTH_TOKEN)" in text and "s3cret-value" not in text
