"""What the tools share while the server runs: settings, the service backend, the ingest core."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import anyio

from .backend import Backend
from .jobs import Job, JobManager, JobStore
from .library import Library
from .pipeline import Ingestor, Progress
from .settings import McpSettings
from .sources import SourcePolicy


@dataclass
class AppState:
    settings: McpSettings
    backend: Backend
    ingestor: Ingestor
    jobs: JobStore
    policy: SourcePolicy

    @classmethod
    def create(cls, settings: McpSettings, backend: Backend) -> AppState:
        return cls(
            settings=settings, backend=backend, ingestor=Ingestor(backend, settings), jobs=job_store(settings),
            policy=SourcePolicy.from_settings(settings),
        )  # fmt: skip

    async def submit_job(self, kind: str, params: dict[str, Any], description: str) -> Job:
        """Queue (or, without a broker, start here) one job of a kind registered in jobkinds.py."""
        return await self.jobs.submit(kind, params, description, context=self)

    async def run_job(self, ctx: Any, kind: str, params: dict[str, Any], description: str) -> tuple[Job, bool]:
        """Submit a job and wait for it up to sync_wait_s, forwarding progress to the client meanwhile.

        Returns (job, finished). A job that is not finished keeps running; the agent polls
        get_job_status. No call blocks past the 60 s timeouts agents use.
        """
        job = await self.submit_job(kind, params, description)
        try:
            job = await self.jobs.wait(job.id, self.settings.sync_wait_s, on_progress=self.progress_reporter(ctx))
        except BaseException:  # the client cancelled its call (notifications/cancelled): the work stops too
            with anyio.CancelScope(shield=True):
                await self.jobs.cancel(job.id, "the client cancelled the request")
            raise
        if job.finished and job.failure is not None:
            raise job.failure
        return job, job.finished

    def collection(self, name: str | None) -> str:
        return name or self.settings.default_collection

    @staticmethod
    def progress_reporter(ctx: Any) -> Progress:
        """MCP progress notifications, sent only when the client asked for them (a progress token)."""

        async def report(fraction: float, step: str) -> None:
            try:
                await ctx.report_progress(round(fraction * 100, 1), 100.0, step)
            except Exception:  # noqa: BLE001 - progress is best effort; never fail the work for it
                return

        return report

    @cached_property
    def library(self) -> Library:
        """The facade every profile's tools use for the indexed documents (library.py)."""
        return Library(self.backend, self.settings)


def job_store(settings: McpSettings) -> JobStore:
    """Jobs in Redis, run by workers, when a broker is configured; otherwise in this process."""
    if settings.broker_url:
        from .jobqueue import RedisJobStore

        return RedisJobStore(settings.broker_url, retention_s=settings.job_retention_s)
    return JobManager(retention_s=settings.job_retention_s, max_concurrent=settings.max_concurrent_jobs)
