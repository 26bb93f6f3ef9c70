"""Primary tool: ingest_batch (many files or texts in one job, embedded in one pass)."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import BaseModel, Field, model_validator

from ...errors import ToolFailure
from ...ingest.pipeline import BatchItem, IngestOutcome
from ...state import AppState
from ...toolkit.annotations import WRITE
from ...toolkit.common import profile_tools, result
from .documents_models import BatchItemResult, BatchOutput
from .models import ChunkingArg, CollectionArg, TagsArg, render_error

MAX_BATCH = 200


class BatchItemArg(BaseModel):
    file_path: str | None = Field(default=None, max_length=4096)
    text: str | None = None
    name: str | None = Field(default=None, max_length=256, description="A text's identity, or a file's label.")
    source: str | None = Field(default=None, max_length=2048)
    metadata: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _one_of(self) -> BatchItemArg:
        if (self.file_path is None) == (self.text is None):
            raise ValueError("each item needs exactly one of file_path or text")
        return self


def summarize(items: list[BatchItem], outcomes: list[IngestOutcome | ToolFailure]) -> dict[str, Any]:
    rows = []
    for item, outcome in zip(items, outcomes, strict=True):
        if isinstance(outcome, ToolFailure):
            rows.append(BatchItemResult(item=item.label, success=False, error=outcome.message))
        else:
            created = 0 if outcome.status == "skipped" else outcome.chunks
            rows.append(BatchItemResult(item=item.label, success=True, status=outcome.status, chunks_created=created))
    ok = sum(r.success for r in rows)
    return {"results": [r.model_dump(exclude_none=True) for r in rows], "succeeded": ok, "failed": len(rows) - ok}


def register(server: MCPServer, state: AppState) -> None:
    tool = profile_tools(server, render_error)

    @tool(WRITE)
    async def ingest_batch(
        items: Annotated[
            list[BatchItemArg],
            Field(min_length=1, max_length=MAX_BATCH, description="Each {file_path} or {text, name}."),
        ],
        ctx: Context,
        collection: CollectionArg = None,
        tags: TagsArg = None,
        chunking: ChunkingArg = "default",
    ) -> Annotated[CallToolResult, BatchOutput]:
        """Ingest many files and/or texts in one call, much faster than one call each; items succeed or fail
        on their own."""
        batch = [item.model_dump() for item in items]
        target = state.collection(collection)
        params = {"items": batch, "collection": target, "tags": tags, "chunking": chunking}
        job, finished = await state.run_job(ctx, "ingest_batch", params, f"{len(batch)} items")
        if not finished:
            return result(BatchOutput(
                success=True, job_id=job.id, collection=target,
                message=f"Batch of {len(batch)} items is running ({job.progress:.0f}%). "
                f"Call get_job_status with job_id '{job.id}'.",
            ))  # fmt: skip
        summary = job.result
        return result(BatchOutput(
            success=summary["failed"] == 0, collection=target, **summary,
            message=f"Ingested {summary['succeeded']} of {len(batch)} items into {target}"
            + (f"; {summary['failed']} failed (see results)." if summary["failed"] else "."),
        ))  # fmt: skip
