"""The in-process jobs' records on disk, so that a job the server was killed under is "interrupted", not unknown.

Without a broker the jobs live in the server's memory: after a kill (or a crash, or the client closing the server)
`get_job_status` answered "unknown job" for a sync that had written 100 of 286 documents (issue 48). Each job's
record (jobs/job.py `record`) is now also written to <data_dir>/jobs/<id>.json when it starts, when its stage
changes (else at most once a second) and when it ends; on start the store reads them back, and a job still "running" on
disk was interrupted: it answers failed, step "interrupted", with how far it got and what to do. Records are kept
as long as ended jobs are (`job_retention_s`). With a broker, Redis keeps the records and workers retry.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import time
from datetime import UTC, datetime
from pathlib import Path

from ..errors import ToolFailure
from .job import Job, _stage

log = logging.getLogger("ingestion_mcp.jobs")
EVERY_S = 1.0  # a running job's record is rewritten at most this often


class JobJournal:
    def __init__(self, folder: Path, retention_s: float) -> None:
        self.folder = folder.expanduser()
        self.retention_s = retention_s
        self._written: dict[str, tuple[float, str]] = {}  # job id -> when, and at which stage, last written

    def write(self, job: Job, *, force: bool = False) -> None:
        """The job's record on disk (a running job's when its stage changes, else at most every EVERY_S, unless
        `force`); a disk that refuses it costs the record, never the job."""
        now, stage = time.monotonic(), _stage(job.current_step)
        last, last_stage = self._written.get(job.id, (0.0, ""))
        if not force and job.status == "running" and stage == last_stage and now - last < EVERY_S:
            return
        self._written[job.id] = (now, stage)
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            tmp = self.folder / f".{job.id}.tmp"
            tmp.write_text(json.dumps(job.record(), default=str))
            os.replace(tmp, self.folder / f"{job.id}.json")
        except (OSError, TypeError, ValueError) as exc:
            log.warning("job %s: its record was not written (%s)", job.id, exc)
        if job.finished:
            self._written.pop(job.id, None)

    def load(self) -> list[Job]:
        """The jobs on disk: ended ones as they ended, running ones as interrupted (their record rewritten so)."""
        found = []
        cutoff = time.time() - self.retention_s
        for path in sorted(self.folder.glob("*.json")) if self.folder.is_dir() else []:
            try:
                if path.stat().st_mtime < cutoff:
                    path.unlink()
                    continue
                job = Job.from_record(json.loads(path.read_text()))
            except (OSError, ValueError, TypeError, KeyError) as exc:
                log.warning("a job record was not read (%s)", type(exc).__name__)
                continue
            if not job.finished:
                interrupted(job, datetime.fromtimestamp(path.stat().st_mtime, UTC).isoformat(timespec="seconds"))
                with contextlib.suppress(OSError):
                    self.write(job, force=True)
            found.append(job)
        return found


def interrupted(job: Job, at: str) -> None:
    """Mark a job the server stopped under (a kill, a crash) with how far it had got."""
    job.error = (
        f"Interrupted: the server stopped while this job ran, at {job.progress:.0f}% ({job.current_step}). What it "
        "wrote is whole and kept (each document is written at once); nothing after that point was done."
    )
    job.suggestion = (
        "Run the same call again: a folder sync goes on from the documents already written; an ingest skips "
        "what is unchanged."
    )
    job.status, job.current_step, job.end_time = "failed", "interrupted", at
    job.failure = ToolFailure(job.error, job.suggestion, code="INTERRUPTED")
    job._finished_at = time.monotonic()
    job._done.set()
