"""Primary tool: sync_folder (keep a collection in step with a folder, once or watched; a job, like ingest_batch)."""

from __future__ import annotations

import time
from typing import Annotated, Any

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import Field

from ...access.audit import record, require
from ...access.policy import current_caller
from ...errors import ToolFailure
from ...ingest.acquire import now_iso
from ...ingest.folders import LastSync, SyncedFolder, latest_sync
from ...ingest.sync import FolderSync, SyncOptions, folder_root
from ...jobs import ProgressFn
from ...state import AppState
from ...tools.annotations import REMOVE
from ...tools.common import profile_tools, result
from .models import CollectionArg, ToolOutput, render_error

MAX_LISTED = 50  # names listed per kind in the answer; the counts are always complete
Globs = list[str] | None


class SyncOutput(ToolOutput):
    job_id: str | None = None
    collection: str | None = None
    counts: dict[str, int] | None = None
    removed: list[str] | None = None
    failed: list[str] | None = None  # "file: reason"
    watched: bool | None = None


async def sync_folder_job(state: AppState, params: dict[str, Any], progress: ProgressFn) -> dict[str, Any]:
    """The job kind: runs the one sync engine (also behind `ingestion-index` and watching) and records it."""
    options = SyncOptions(
        folder=params["folder"], collection=params["collection"], include=tuple(params.get("include") or ()),
        exclude=tuple(params.get("exclude") or ()), recursive=params.get("recursive", True),
        prune=params.get("prune", True), dry_run=params.get("dry_run", False),
        paths=tuple(params.get("paths") or ()),  # a watched folder's changed paths (ingest/watch.py)
    )  # fmt: skip

    async def report(done: int, total: int, message: str) -> None:
        await progress(done / max(total, 1), message)  # a fraction: the job shows it as a percentage

    began = time.perf_counter()
    done = await FolderSync(state.backend, state.settings, state.ingestor).run(options, progress=report)
    if not options.dry_run:  # what get_collections and the console show; a record the watcher also reads
        seconds = round(time.perf_counter() - began, 2)
        last = LastSync(at=now_iso(), trigger=params.get("trigger", "tool"), seconds=seconds, counts=done.counts(),
                        cancelled=done.cancelled)  # fmt: skip
        real = str(folder_root(options.folder, state.settings))
        stored = await state.folders.get(options.collection, real)
        changes: dict[str, Any] = {"last_sync": last, "watch_error": None}
        if stored is not None and stored.watch:
            changes["changed_since"] = 0
        await state.folders.change(options.collection, real, **changes)
    return {
        "counts": done.counts(), "removed": done.removed[:MAX_LISTED],
        "failed": [str(f) for f in done.failed[:MAX_LISTED]],
    }  # fmt: skip


def register(server: MCPServer, state: AppState) -> None:
    tool = profile_tools(server, render_error)

    @tool(REMOVE)  # prune deletes documents
    async def sync_folder(
        folder: Annotated[str, Field(max_length=4096)],
        ctx: Context,
        collection: CollectionArg = None,
        include: Globs = None,
        exclude: Globs = None,
        recursive: bool = True,
        prune: bool = True,
        dry_run: bool = False,
        watch: bool | None = None,
    ) -> Annotated[CallToolResult, SyncOutput]:
        """Sync a folder under the allowed roots into a collection: new/changed files ingested, gone ones pruned;
        dry_run only reports; watch: true follows changes, false stops. Answers counts or a job_id."""
        target = state.collection(collection)
        require("sync_folder", target, None, "write")  # dry runs too: what may not be written is not planned
        root = str(folder_root(folder, state.settings))  # a folder outside the roots is refused here, nothing queued
        if watch is False and not dry_run:  # stopped before this sync runs
            await remember_watch(state, target, root, False, include, exclude, recursive, prune)
        params = {"folder": folder, "collection": target, "include": include, "exclude": exclude,
                  "recursive": recursive, "prune": prune, "dry_run": dry_run}  # fmt: skip
        job = await state.submit_job("sync_folder", params, f"sync {folder}")
        if watch and not dry_run:  # stored with this sync's job: the watch's catch-up waits for it
            try:
                await remember_watch(state, target, root, True, include, exclude, recursive, prune, job.id)
            except ToolFailure:
                await state.jobs.cancel(job.id, "the watch could not be stored")
                raise
        job, finished = await state.follow_job(ctx, job)
        stored = await state.folders.get(target, root)
        watched = bool(stored and stored.watch)
        if not finished:
            return result(SyncOutput(
                success=True, job_id=job.id, collection=target, watched=watched,
                message=f"Sync is running ({job.progress:.0f}%). Call get_job_status with job_id '{job.id}'.",
            ))  # fmt: skip
        done = job.result
        counts = done["counts"]
        verb = "Would sync" if dry_run else "Synced"
        then = " Watching it: changes are synced as they happen." if watched else ""
        return result(SyncOutput(
            success=counts["failed"] == 0, collection=target, watched=watched, **done,
            message=f"{verb} {target}: " + ", ".join(f"{n} {k}" for k, n in counts.items()) + "." + then,
        ))  # fmt: skip


async def remember_watch(
    state: AppState, collection: str, root: str, watch: bool, include: Globs, exclude: Globs, recursive: bool,
    prune: bool, sync_job: str | None = None,
) -> None:  # fmt: skip
    """Store the watch (or its end): the record, not this process, is what is watched. A watch is stored once
    its first sync is queued, with that job's id: the watcher's catch-up sync then runs after it, not beside it
    (a change made before the watcher is in place is still caught by that catch-up)."""
    try:
        await state.folders.change(
            collection, root, watch=watch, include=include or [], exclude=exclude or [], recursive=recursive,
            prune=prune, owner=current_caller().subject, changed_since=0 if watch else None, sync_job=sync_job,
        )  # fmt: skip
    except OSError as exc:
        raise ToolFailure(
            f"The watch could not be stored ({exc.strerror or type(exc).__name__}).",
            "Check that the data folder (INGESTION_MCP_DATA_DIR) is writable, then call again.",
        ) from exc
    record("watch" if watch else "unwatch", collection, root, "ok")
    if state.watcher is not None:
        state.watcher.poke()


def freshness(folders: list[SyncedFolder] | None) -> str:
    """A sentence on the synced folders for a collection's message ("" when none)."""
    if not folders:
        return ""
    watched = sum(f.watched for f in folders)
    last = latest_sync(folders) or "never"
    changed = sum(f.changed_since or 0 for f in folders)
    pending = f", {changed} file changes not synced yet" if changed else ""
    return f"; {len(folders)} synced folders ({watched} watched), last synced {last}{pending}"
