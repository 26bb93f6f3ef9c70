"""Primary tool: sync_folder (keep a collection in step with a folder; a job, like ingest_batch)."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import Field

from ...access.audit import require
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


async def sync_folder_job(state: AppState, params: dict[str, Any], progress: ProgressFn) -> dict[str, Any]:
    """The job kind: runs the one sync engine (also behind `ingestion-index update`)."""
    options = SyncOptions(
        folder=params["folder"], collection=params["collection"], include=tuple(params.get("include") or ()),
        exclude=tuple(params.get("exclude") or ()), recursive=params.get("recursive", True),
        prune=params.get("prune", True), dry_run=params.get("dry_run", False),
    )  # fmt: skip

    async def report(done: int, seen: int, message: str) -> None:
        await progress(100.0 * done / max(seen, 1), message)

    done = await FolderSync(state.backend, state.settings, state.ingestor).run(options, progress=report)
    return {
        "counts": done.counts(), "removed": done.removed[:MAX_LISTED],
        "failed": [f"{f}: {r}" for f, r in done.failed[:MAX_LISTED]],
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
    ) -> Annotated[CallToolResult, SyncOutput]:
        """Sync a folder (under the allowed roots) into a collection: ingests new/changed files, prunes gone
        ones; dry_run only reports. Answers counts or a job_id."""
        target = state.collection(collection)
        require("sync_folder", target, None, "write")  # dry runs too: what may not be written is not planned
        folder_root(folder, state.settings)  # a folder outside the roots is refused here, nothing queued
        params = {"folder": folder, "collection": target, "include": include, "exclude": exclude,
                  "recursive": recursive, "prune": prune, "dry_run": dry_run}  # fmt: skip
        job, finished = await state.run_job(ctx, "sync_folder", params, f"sync {folder}")
        if not finished:
            return result(SyncOutput(
                success=True, job_id=job.id, collection=target,
                message=f"Sync is running ({job.progress:.0f}%). Call get_job_status with job_id '{job.id}'.",
            ))  # fmt: skip
        done = job.result
        counts = done["counts"]
        verb = "Would sync" if dry_run else "Synced"
        return result(SyncOutput(
            success=counts["failed"] == 0, collection=target, **done,
            message=f"{verb} {target}: " + ", ".join(f"{n} {k}" for k, n in counts.items()) + ".",
        ))  # fmt: skip
