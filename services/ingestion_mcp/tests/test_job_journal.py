"""A job the server was killed under is "interrupted", with how far it got (issue 48, point 6): without a broker the
jobs lived in memory only, and after a kill get_job_status answered "unknown" for a sync that had written 100 of its
286 documents. A second store on the same data folder is the restarted server: only the disk is shared."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

from ingestion_mcp.jobs import JobManager
from ingestion_mcp.jobs.journal import JobJournal

KILLED = """
import asyncio, sys
from pathlib import Path
from ingestion_mcp.jobs import JobManager
from ingestion_mcp.jobs.journal import JobJournal

async def runner(kind, params, progress):
    await progress(0.37, "file 106/286: embedding")
    print("running", flush=True)
    await asyncio.sleep(3600)

async def main():
    store = JobManager(runner=runner, journal=JobJournal(Path(sys.argv[1]), 3600))
    job = await store.submit("sync_folder", {}, "sync /docs")
    print(job.id, flush=True)
    await asyncio.sleep(3600)

asyncio.run(main())
"""


async def test_a_job_killed_with_its_server_is_interrupted_with_how_far_it_got(tmp_path: Path) -> None:
    server = subprocess.Popen([sys.executable, "-c", KILLED, str(tmp_path / "jobs")], stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None
    job_id = server.stdout.readline().strip()
    assert server.stdout.readline().strip() == "running"
    await asyncio.sleep(1.2)  # its progress reaches the disk (at most once a second)
    os.kill(server.pid, signal.SIGKILL)
    server.wait()

    restarted = JobManager(journal=JobJournal(tmp_path / "jobs", 3600))
    job = await restarted.get(job_id)
    assert job is not None and job.status == "failed" and job.current_step == "interrupted", job
    assert job.error is not None and "Interrupted" in job.error and "37% (file 106/286: embedding)" in job.error
    assert job.failure is not None and job.failure.code == "INTERRUPTED"


async def test_a_job_the_server_stops_under_is_interrupted_and_an_ended_one_is_kept(tmp_path: Path) -> None:
    async def runner(kind: str, params: dict, progress) -> dict:  # type: ignore[no-untyped-def, type-arg]  # a runner as the job store calls it
        await progress(0.5, "converting")
        if params.get("quick"):
            return {"counts": {"added": 1}}
        await asyncio.sleep(3600)
        return {}

    store = JobManager(runner=runner, journal=JobJournal(tmp_path / "jobs", 3600))
    quick = await store.submit("ingest_text", {"quick": True}, "text")
    slow = await store.submit("sync_folder", {}, "sync")
    await store.wait(quick.id, 5)
    await asyncio.sleep(0.1)
    await store.aclose()  # the server stops (SIGTERM, the client closes it)
    again = JobManager(journal=JobJournal(tmp_path / "jobs", 3600))
    assert (await again.get(quick.id)).result == {"counts": {"added": 1}}  # type: ignore[union-attr]  # the journal kept it
    stopped = await again.get(slow.id)
    assert stopped is not None and stopped.current_step == "interrupted" and "50%" in (stopped.error or "")
