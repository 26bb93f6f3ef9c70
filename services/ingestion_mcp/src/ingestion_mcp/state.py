"""What the tools share while the server runs: settings, the service backend, the ingest core."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

import anyio
from ingestion_contracts.gateway import CollectionInfo, SearchRequest, SearchResponse

from .backend import Backend
from .errors import ToolFailure, UpstreamError
from .jobs import Job, JobManager, JobStore
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

    async def available_collections(self) -> list[str]:
        listing = await self.backend.list_collections()
        return sorted(c.name for c in listing.collections)

    async def unknown_collection(self, name: str) -> ToolFailure:
        available = await self.available_collections()
        return ToolFailure(
            f"Collection '{name}' not found.",
            "Use get_collections without parameters to see available collections.",
            code="COLLECTION_NOT_FOUND",
            details={"available_collections": available},
        )

    async def collection_info(self, name: str) -> CollectionInfo:
        try:
            return await self.backend.get_collection(name)
        except UpstreamError as exc:
            if exc.status in (404, 422):
                raise await self.unknown_collection(name) from None
            raise

    async def search(self, request: SearchRequest) -> SearchResponse:
        try:
            return await self.backend.search(request)
        except UpstreamError as exc:
            if exc.status == 404 and request.collections:
                raise await self.unknown_collection(request.collections[0]) from None
            raise

    async def file_names(self, collection: str, *, limit: int) -> list[str]:
        listing = await self.backend.list_documents(collection, limit=limit)
        return [PurePosixPath(doc.key or doc.source).name or doc.key for doc in listing.documents]


def job_store(settings: McpSettings) -> JobStore:
    """Jobs in Redis, run by workers, when a broker is configured; otherwise in this process."""
    if settings.broker_url:
        from .jobqueue import RedisJobStore

        return RedisJobStore(settings.broker_url, retention_s=settings.job_retention_s)
    return JobManager(retention_s=settings.job_retention_s, max_concurrent=settings.max_concurrent_jobs)
