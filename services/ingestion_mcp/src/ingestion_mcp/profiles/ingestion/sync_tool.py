"""Primary tool: sync_folder (keep a collection in step with a folder, once or watched; a job, like ingest_batch)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import Field

from ...access.audit import record, require
from ...access.policy import current_caller
from ...errors import ToolFailure, failure_from
from ...ingest.acquire import now_iso
from ...ingest.folder_sync import (
    SyncOptions,
    SyncReport,
    check_patterns,
    folder_prefix,
    folder_root,
)
from ...ingest.folders import (
    FAILING_PAGE,
    FolderRecord,
    LastSync,
    RecordWindow,
    SyncedFolder,
    failing_after,
    latest_sync,
    settled_after,
    stale_after,
)
from ...ingest.walk import scope_labels
from ...jobs import ProgressFn, uninterrupted
from ...sources.paths import ensure_inside
from ...state import AppState
from ...toolkit.annotations import REMOVE
from ...toolkit.common import profile_tools, result
from .models import CollectionArg, ToolOutput, render_error

log = logging.getLogger("ingestion_mcp.sync")
MAX_LISTED = 50  # names listed per kind in the answer; the counts are always complete
Globs = list[str] | None


class SyncOutput(ToolOutput):
    job_id: str | None = None
    collection: str | None = None
    counts: dict[str, int] | None = None
    removed: list[str] | None = None
    failed: list[str] | None = None  # "file: reason"
    watched: bool | None = None


def options_of(params: dict[str, Any]) -> SyncOptions:
    return SyncOptions(
        folder=params["folder"], collection=params["collection"], include=tuple(params.get("include") or ()),
        exclude=tuple(params.get("exclude") or ()), recursive=params.get("recursive", True),
        prune=params.get("prune", True), dry_run=params.get("dry_run", False),
        paths=tuple(params.get("paths") or ()),  # a watched folder's changed paths (ingest/watch.py)
        max_removals=params.get("max_removals"), ignore_files=params.get("ignore_files", True),
    )  # fmt: skip


async def sync_folder_job(state: AppState, params: dict[str, Any], progress: ProgressFn) -> dict[str, Any]:
    """The job kind: runs the one sync engine (also behind `ingestion-index` and watching) and records it, also
    when it fails or is cancelled (what it wrote is whole; the record says what happened)."""
    options = options_of(params)
    real = str(ensure_inside(options.folder, state.settings.allowed_roots))
    elsewhere, record = await _folders_now(state, options.collection, real)
    options = replace(options, elsewhere=elsewhere)

    async def report_progress(done: float, total: int, message: str) -> None:
        await progress(done / max(total, 1), message)  # a fraction: the job shows it as a percentage

    began, report = time.perf_counter(), SyncReport()
    try:
        window = RecordWindow(state.folders, options.collection, real)
        settled = record.settled if record is not None else {}
        await state.folder_sync().run(options, progress=report_progress, report=report, window=window, settled=settled)
    except BaseException as exc:
        if not options.dry_run:
            await uninterrupted(_remember(state, options, real, params, report, began, exc))
        raise
    if not options.dry_run:  # what get_collections and the console show; a record the watcher also reads
        await _remember(state, options, real, params, report, began, None)
    return {
        "counts": report.counts(), "removed": report.removed[:MAX_LISTED],
        "failed": [str(f) for f in report.failed[:MAX_LISTED]], "skipped": report.skipped,
        "truncated": len(report.removed) > MAX_LISTED or len(report.failed) > MAX_LISTED, "note": report.bound_note(),
        "ignored": report.ignored, "passed_over": report.passed_over(), "stale_note": report.stale_note(),
        "owned_note": report.owned_note(),
    }  # fmt: skip


async def _folders_now(state: AppState, collection: str, real: str) -> tuple[tuple[str, ...], FolderRecord | None]:
    """From one read of the records: the other folders synced into the collection (a link into one of them is that
    folder's document), and this folder's record (its settled failures); none when they cannot be read now (the
    sync then reads every file)."""
    try:
        records = [r for r in await state.folders.all() if r.collection == collection]
    except (ToolFailure, OSError, ValueError):
        return (), None
    return tuple(r.folder for r in records if r.folder != real), next((r for r in records if r.folder == real), None)


async def _remember(
    state: AppState, options: SyncOptions, real: str, params: dict[str, Any], report: SyncReport, began: float,
    failure: BaseException | None,
) -> None:  # fmt: skip
    """Write what the sync did into the folder's record. A failed sync of a folder never synced before, that
    wrote nothing, leaves no record (a typo must not make one); a record that cannot be written is logged."""
    try:
        stored = await state.folders.get(options.collection, real)
        if failure is not None and stored is None and not (report.added or report.replaced):
            return
        cancelled = report.cancelled or isinstance(failure, asyncio.CancelledError)
        last = LastSync(
            at=now_iso(), trigger=params.get("trigger", "tool"), seconds=round(time.perf_counter() - began, 2),
            counts=report.counts(), cancelled=cancelled, error=_what_happened(failure, report, cancelled),
        )  # fmt: skip
        changes: dict[str, Any] = {"last_sync": last}
        if failure is None and not cancelled:
            scope = scope_labels(options.paths)
            changes.update(watch_error=None, watch_error_at=None)
            changes.update(failing_after(stored, {f.rel: f.reason for f in report.failed}, scope))
            changes.update(settled_after(stored, report.failed, scope, time.time()))
            changes.update(stale_after(stored, report.stale, scope))
            if scope is None:
                changes["last_full"] = last
                changes["ignored_by"] = dict(sorted(report.ignored.items(), key=lambda kv: -kv[1])[:FAILING_PAGE])
            if stored is not None and stored.watch:
                changes["changed_since"] = 0
        await state.folders.change(options.collection, real, **changes)
    except (ToolFailure, OSError) as exc:
        log.warning("the sync of a folder into %s was not recorded: %s", options.collection, exc)


def _what_happened(failure: BaseException | None, report: SyncReport, cancelled: bool) -> str | None:
    written = len(report.added) + len(report.replaced)
    if cancelled:
        return (f"Cancelled before its end: {written} documents written (whole, kept) and nothing removed; the next "
                "sync goes on from there.")  # fmt: skip
    if failure is None:
        return None
    return failure_from(failure).message if isinstance(failure, Exception) else f"Stopped: {type(failure).__name__}."


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
        max_removals: int | None = None,
        gitignore: bool = True,
    ) -> Annotated[CallToolResult, SyncOutput]:
        """Sync a folder under the allowed roots into a collection: new/changed files (ingest_document's types, and
        other text) ingested, gone ones pruned (none when 25% and 10, or half, would go in 10 min, unless max_removals
        allows); .gitignore files honoured
        (gitignore: false reads all); dry_run only reports; watch: true follows changes, false stops. Answers counts
        or a job_id."""
        target = state.collection(collection)
        require("sync_folder", target, None, "write")  # dry runs too: what may not be written is not planned
        check_patterns(include or [], exclude or [])  # a malformed glob is refused before anything runs
        if max_removals is not None and max_removals < 0:
            raise ToolFailure("max_removals must be 0 or more.", "Pass how many documents the sync may remove.")
        if (gone := await _gone(state, target, folder, watch, dry_run, max_removals)) is not None:
            return gone
        root = str(folder_root(folder, state.settings))  # a folder outside the roots is refused here, nothing queued
        options = {"include": include, "exclude": exclude, "recursive": recursive, "prune": prune,
                   "ignore_files": gitignore}  # fmt: skip
        if watch is False and not dry_run:  # stopped before this sync runs
            await remember_watch(state, target, root, False, options)
        params = {"folder": folder, "collection": target, "dry_run": dry_run, "max_removals": max_removals, **options}
        job = await state.submit_job("sync_folder", params, f"sync {folder}")
        if watch and not dry_run:  # stored with this sync's job: the watch's catch-up waits for it
            try:
                await remember_watch(state, target, root, True, options, job.id)
            except ToolFailure:
                await state.jobs.cancel(job.id, "the watch could not be stored")
                raise
        job, finished = await state.follow_job(ctx, job)
        stored = await state.folders.get(target, root)
        watched = bool(stored and stored.watch)
        if not finished:
            return result(SyncOutput(
                success=True, job_id=job.id, collection=target, watched=watched,
                message=f"Sync is running ({job.progress:.0f}%, {job.current_step}). "
                f"Call get_job_status with job_id '{job.id}'.",
            ))  # fmt: skip
        done = dict(job.result)
        return result(SyncOutput(
            success=True, collection=target, watched=watched, counts=done["counts"], removed=done["removed"],
            failed=done["failed"], message=sync_message(target, done, dry_run, watched),
        ))  # fmt: skip


def sync_message(target: str, done: dict[str, Any], dry_run: bool, watched: bool) -> str:
    """Counts first, then what needs a look: failures, skipped types, the removal bound, cut lists."""
    counts = done["counts"]
    verb = "Would sync" if dry_run else "Synced"
    text = f"{verb} {target}: " + ", ".join(f"{n} {k}" for k, n in counts.items()) + "."
    if counts["failed"]:
        text += f" {counts['failed']} files failed (in `failed`, with why); the others synced."
    if skipped := done.get("skipped"):
        kinds = ", ".join(f"{n} {ext}" for ext, n in sorted(skipped.items(), key=lambda kv: (-kv[1], kv[0]))[:8])
        text += f" Skipped {sum(skipped.values())} files of types that cannot be ingested ({kinds})."
    if done.get("owned_note"):
        text += " " + done["owned_note"]
    if done.get("stale_note"):
        text += " " + done["stale_note"]
    if done.get("passed_over"):
        text += " " + done["passed_over"]
    if done.get("note"):
        text += " " + done["note"]
    if done.get("truncated"):
        text += f" The lists show the first {MAX_LISTED}; the counts are complete."
    if watched:
        text += " Watching it: changes are synced as they happen."
    return text


async def _gone(
    state: AppState, target: str, folder: str, watch: bool | None, dry_run: bool, max_removals: int | None
) -> CallToolResult | None:
    """A folder synced into the collection that is no longer there (deleted, renamed, unmounted): nothing to
    sync, its documents are kept and the answer says how many; `watch: false` stops its watch; `max_removals`
    covering them all removes them and forgets the folder. None: the folder is there, or was never synced."""
    try:
        folder_root(folder, state.settings)
        return None
    except ToolFailure:
        real = ensure_inside(folder, state.settings.allowed_roots)  # out of the roots: refused here as always
    if real.exists():
        return None  # a file, not a folder: the usual refusal
    stored = await state.folders.get(target, str(real))
    known = await state.folder_sync().known(target, folder_prefix(real))
    if stored is None and not known:
        return None  # never synced: a typo, refused as "Not a folder"
    n, stopped = len(known), ""
    if watch is False and not dry_run and stored is not None and stored.watch:
        kept = stored.model_dump(include={"include", "exclude", "recursive", "prune", "ignore_files"})
        await remember_watch(state, target, str(real), False, kept)
        stopped = "Stopped watching it. "
    if max_removals is not None and n <= max_removals:
        if not dry_run:
            n = len(await state.folder_sync().remove(target, known))
            await state.folders.forget(target, str(real))
        verb = "Would remove" if dry_run else "Removed"
        return result(SyncOutput(
            success=True, collection=target, watched=False, counts={"removed": n},
            message=f"{stopped}{verb} the {n} documents of {folder}, which is not there any more"
            + ("." if dry_run else "; the folder is forgotten."),
        ))  # fmt: skip
    if stopped:
        return result(SyncOutput(
            success=True, collection=target, watched=False,
            message=f"{stopped}{folder} is not there, so nothing was synced; its {n} documents are kept "
            f"(max_removals={n} removes them).",
        ))  # fmt: skip
    raise ToolFailure(
        f"Not a folder: {folder} is not there any more (deleted, moved or unmounted). The {n} documents synced from "
        "it are kept; nothing was synced.",
        f"Put the folder back and sync again; or pass max_removals={n} to remove its documents (watch: false stops "
        "its watch). A folder moved elsewhere is synced under its new path.",
        code="FOLDER_GONE",
    )


async def remember_watch(
    state: AppState, collection: str, root: str, watch: bool, options: dict[str, Any], sync_job: str | None = None
) -> None:
    """Store the watch (or its end): the record, not this process, is what is watched. A watch is stored once
    its first sync is queued, with that job's id: the watcher's catch-up sync then runs after it, not beside it
    (a change made before the watcher is in place is still caught by that catch-up). Each new job id re-arms the
    watcher of the folder (a watch that stopped working is started again)."""
    try:
        await state.folders.change(
            collection, root, watch=watch, include=options["include"] or [], exclude=options["exclude"] or [],
            recursive=options["recursive"], prune=options["prune"], ignore_files=options["ignore_files"],
            owner=current_caller().subject, owner_claims=current_caller().claims, changed_since=0 if watch else None,
            sync_job=sync_job,
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
    failing = sum(f.failing_total or 0 for f in folders)
    fails = f", {failing} files failing (synced_folders[].failing)" if failing else ""
    broken = sum(1 for f in folders if f.error)
    errors = f", {broken} with an error (synced_folders[].error)" if broken else ""
    by: Counter[str] = Counter()
    for f in folders:
        by.update({f"{Path(f.folder).name}/{source}": n for source, n in f._ignored_by.items()})
    named = ", ".join(f"{source} {n}" for source, n in by.most_common(5))
    stale = sum(f._stale for f in folders)
    fails += f", {stale} stale documents kept while their files fail ('[stale since ...]' in failing)" if stale else ""
    ignored = f", {sum(by.values())} files and folders hidden by ignore files ({named})" if by else ""
    return f"; {len(folders)} synced folders ({watched} watched), last synced {last}{pending}{fails}{errors}{ignored}"
