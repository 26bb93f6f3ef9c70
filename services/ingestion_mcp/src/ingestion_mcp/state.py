"""What the tools share while the server runs: settings, the service backend, the ingest core, the jobs."""

from __future__ import annotations

import logging
import unicodedata
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import anyio

from .access.audit import record, require
from .access.client_roots import ClientRoots
from .access.guarded_backend import GuardedBackend
from .access.policy import Caller, LivePolicy, current_caller
from .backend import Backend
from .errors import ToolFailure
from .ingest.folder_sync import FolderSync
from .ingest.folders import FolderStore, folder_store
from .ingest.notes import NoteIndex
from .ingest.pipeline import Ingestor, Progress
from .ingest.watch import Watcher
from .jobs import RECENT_KEPT, Job, JobManager, JobStore, ProgressFn
from .jobs.journal import JobJournal
from .jobs.kinds import JobKinds
from .library import Library
from .settings import McpSettings
from .sources import SourcePolicy

log = logging.getLogger("ingestion_mcp.state")


def folded(name: str) -> str:
    """A collection name without case, accents or separators ('Café-Notes' and 'cafe_notes' fold alike)."""
    bare = "".join(ch for ch in unicodedata.normalize("NFKD", name) if not unicodedata.combining(ch))
    return "".join(ch for ch in bare.casefold() if ch not in "-_. ")


@dataclass
class AppState:
    settings: McpSettings
    backend: Backend
    ingestor: Ingestor
    jobs: JobStore
    policy: SourcePolicy
    # The job kinds this process runs: the served profiles register theirs (server.build_server); a worker
    # registers every profile's.
    kinds: JobKinds[AppState] = field(default_factory=JobKinds)
    # Follows the watched folders while this process leads (server_command.serve starts it; None elsewhere).
    watcher: Watcher | None = None
    # The client's declared roots as the allowed folders, when the operator named none (access/client_roots.py).
    client_roots: ClientRoots | None = None
    # The access policy as it is now (OAuth mode): watches ask it what their owners may do (ingest/watch_rights.py).
    live_policy: LivePolicy | None = None
    _claims_seen: dict[str, dict[str, list[str]]] = field(default_factory=dict)

    @classmethod
    def create(cls, settings: McpSettings, backend: Backend) -> AppState:
        if backend is not None:  # None: main() only builds the tool set
            backend = GuardedBackend.over(backend)  # every call that names a collection checks the caller's rights
        state = cls(
            settings=settings, backend=backend, ingestor=Ingestor(backend, settings), jobs=JobManager(),
            policy=SourcePolicy.from_settings(settings),
        )  # fmt: skip
        state.jobs = job_store(settings, state)  # its runner is this state
        state.client_roots = ClientRoots(settings)
        if settings.auth_mode == "oauth" and settings.access_policy is not None:
            state.live_policy = LivePolicy(settings.access_policy)
        return state

    async def run_kind(self, kind: str, params: dict[str, Any], progress: ProgressFn) -> Any:
        """Run one job of a registered kind here (the in-process store, a worker)."""
        return await self.kinds.run(self, kind, params, progress)

    async def submit_job(
        self, kind: str, params: dict[str, Any], description: str, *, collection: str | None = None
    ) -> Job:
        """Queue (or, without a broker, start here) one job of a kind a profile registered.

        The job writes to ``collection`` (default: its "collection" parameter): the caller needs the write
        right there now, before anything runs; the job is the caller's (only they see and cancel it)."""
        target = collection or params.get("collection")
        if isinstance(target, str):
            require(f"submit_{kind}", target, description)  # a refusal is audited like the store's
            await self.refuse_near_twin(target)
        # An accepted job is not recorded here: its writes are, when they happen (one record per write).
        return await self.jobs.submit(kind, params, description)

    async def own_job(self, job_id: str) -> Job | None:
        """The job if it is the caller's (or the caller administers everything); another's is None."""
        job = await self.jobs.get(job_id)
        return job if job is not None and current_caller().owns(job.owner) else None

    async def cancel_job(self, job_id: str, reason: str = "on request", wait_s: float = 5.0) -> Job | None:
        """Cancel the caller's job (an administrator's: anyone's) and wait up to ``wait_s`` for it to stop; None
        when there is no such job or it is another's (both answer as unknown). Audited like a write, refusals
        included: one record with the job id and how it went."""
        job = await self.jobs.get(job_id)
        if job is None or not current_caller().owns(job.owner):
            record("cancel_job", None, job_id, "forbidden" if job is not None else "failed:JOB_NOT_FOUND")
            return None
        if job.status != "running":
            record("cancel_job", None, job_id, f"ended:{job.status}")
            return job
        try:
            await self.jobs.cancel(job_id, reason)
            job = await self.jobs.wait(job_id, wait_s) if wait_s > 0 else job
        except ToolFailure as exc:  # the broker is away: nothing was cancelled
            record("cancel_job", None, job_id, f"failed:{exc.code}")
            raise
        outcome = {"cancelled": "ok", "running": "requested"}.get(job.status, f"ended:{job.status}")
        record("cancel_job", None, job_id, outcome)  # requested: asked, and stopping at its next step
        return job

    async def own_active_jobs(self) -> list[Job]:
        caller = current_caller()
        return [job for job in await self.jobs.active() if caller.owns(job.owner)]

    async def own_recent_jobs(self, limit: int = 50) -> list[Job]:
        """The caller's ended jobs still kept, the last to end first (an administrator's: everyone's)."""
        caller = current_caller()
        return [job for job in await self.jobs.recent(RECENT_KEPT) if caller.owns(job.owner)][:limit]

    async def run_job(self, ctx: Any, kind: str, params: dict[str, Any], description: str) -> tuple[Job, bool]:
        """Submit a job and wait for it up to sync_wait_s, forwarding progress to the client meanwhile.

        Returns (job, finished). A job that is not finished keeps running; the agent polls get_job_status.
        No call blocks past the 60 s timeouts agents use. Only the client's own cancel stops the job: the
        job store's wait outlasts a broker that stops answering (it then answers with the job as last seen).
        """
        return await self.follow_job(ctx, await self.submit_job(kind, params, description))

    async def follow_job(self, ctx: Any, job: Job) -> tuple[Job, bool]:
        """run_job's wait, for a job submitted just before (sync_folder stores a watch in between)."""
        try:
            job = await self.jobs.wait(job.id, self.settings.sync_wait_s, on_progress=self.progress_reporter(ctx))
        except anyio.get_cancelled_exc_class():  # the client cancelled its call: the work stops too
            with anyio.CancelScope(shield=True), anyio.move_on_after(2 * self.settings.broker_timeout_s + 1):
                try:
                    await self.jobs.cancel(job.id, "the client cancelled the request")
                except ToolFailure as exc:  # the broker is away: the job runs on; say so in the log
                    log.warning("could not cancel job %s for a cancelled call: %s", job.id, exc.message)
            raise
        if job.finished and job.failure is not None:
            raise job.failure
        return job, job.finished

    async def note_caller(self, caller: Caller) -> None:
        """A request's verified caller: when what its token says (scopes, groups) changed since this process last saw
        it, the watches it owns keep the new claims, so that they act with the owner's rights as they are now."""
        if caller.subject is None or caller.claims is None or self._claims_seen.get(caller.subject) == caller.claims:
            return
        self._claims_seen[caller.subject] = caller.claims
        try:
            owned = [r for r in await self.folders.all() if r.owner == caller.subject and r.owner_claims is not None]
            for r in owned:
                if r.owner_claims != caller.claims:
                    await self.folders.change(r.collection, r.folder, owner_claims=caller.claims)
        except (ToolFailure, OSError) as exc:  # the next request tries again
            self._claims_seen.pop(caller.subject, None)
            log.warning("a watch owner's new rights were not recorded: %s", getattr(exc, "message", exc))
            return
        if owned and self.watcher is not None:
            self.watcher.poke()

    async def refuse_near_twin(self, name: str) -> None:
        """A new collection whose name differs from an existing one's only by case, accents or separators is a slip
        until created on purpose (issue 48: "Docs" beside "docs" re-ingested 286 files into a second collection)."""
        try:
            names = await self.library.collections()
        except ToolFailure:  # the listing is away: the write itself will say what is wrong
            return
        twin = next((n for n in names if n != name and folded(n) == folded(name)), None)
        if name in names or twin is None:
            return
        raise ToolFailure(
            f"There is no collection '{name}', but there is '{twin}', whose name differs only by case, accents or "
            "separators. Nothing was written.",
            f"Pass collection='{twin}' to use it; if you mean a new collection, create it first with "
            f"create_collection(name='{name}'), then call again.",
            code="COLLECTION_NAME_TWIN",
        )

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
    def folders(self) -> FolderStore:
        """The synced folders' records: what the last sync did, which are watched (ingest/folders.py)."""
        return folder_store(self.settings)

    async def collection_deleted(self, name: str) -> None:
        """Its synced folders are forgotten and no longer watched (a watch must not bring the collection back)."""
        try:
            if await self.folders.forget(name) and self.watcher is not None:
                self.watcher.poke()
        except (ToolFailure, OSError) as exc:
            log.warning("synced folders of deleted collection %s not forgotten: %s", name, exc)

    def start_watching(self) -> Watcher:
        self.watcher = Watcher(self.settings, self.folders, self.jobs, policy=self.live_policy)
        return self.watcher

    @cached_property
    def library(self) -> Library:
        """The facade every profile's tools use for the indexed documents (library.py)."""
        return Library(self.backend, self.settings)

    def folder_sync(self) -> FolderSync:
        """The one folder-sync engine over the guarded backend (ingest/folder_sync.py): the sync_folder tool's."""
        return FolderSync(self.backend, self.settings, self.ingestor)

    def note_index(self) -> NoteIndex:
        """The notes collection the obsidian profile searches (ingest/notes.py), over the guarded backend."""
        return NoteIndex(self.backend, self.settings)


def job_store(settings: McpSettings, state: AppState) -> JobStore:
    """Jobs in Redis, run by workers, when a broker is configured; otherwise in this process."""
    if settings.broker_url:
        from .jobs.queue import RedisJobStore

        return RedisJobStore.from_settings(settings)

    async def take_order() -> int | None:
        # Taken from the gateway when the job is submitted: the last submitted write of a document wins.
        return await state.backend.write_order()

    return JobManager(
        runner=state.run_kind, take_order=take_order, retention_s=settings.job_retention_s,
        max_concurrent=settings.max_concurrent_jobs,
        journal=JobJournal(settings.data_dir / "jobs", settings.job_retention_s),
    )  # fmt: skip
