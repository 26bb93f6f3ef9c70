"""Primary tools for the library (documents), jobs, and collection management."""

from __future__ import annotations

from collections import Counter
from pathlib import PurePosixPath
from typing import Annotated

from ingestion_contracts.common import DOC_ID_PATTERN, UserName
from ingestion_contracts.gateway import DocumentInfo, DocumentStructure
from mcp.server import MCPServer
from mcp.types import CallToolResult
from pydantic import Field

from ...access.audit import looked_up_for
from ...errors import ToolFailure
from ...jobs import Job
from ...library import estimate_tokens
from ...state import AppState
from ...toolkit.annotations import CANCEL, CREATE, READ, REMOVE
from ...toolkit.common import ToolDecorator, profile_tools, result
from .documents_models import (
    CreatedCollectionOutput,
    DeletedCollectionOutput,
    DeleteOutput,
    DocumentItem,
    DocumentListOutput,
    DocumentOutput,
    DocumentStats,
    JobInfo,
    JobListOutput,
    JobOutput,
    JobStatusOutput,
    SimilarOutput,
)
from .models import CollectionArg, FormatArg, OffsetArg, PassageItem, render_error, said_once
from .tools import mark_stale, search_item

DocRefArg = Annotated[str | None, Field(default=None, pattern=DOC_ID_PATTERN)]
KeyArg = Annotated[str | None, Field(default=None, min_length=1, max_length=4096)]  # said in the instructions
NameArg = UserName
INGEST_KINDS = ("ingest_document", "ingest_text", "ingest_from_url")
JobIdArg = Annotated[str, Field(min_length=1, max_length=64, json_schema_extra=said_once("maxLength"))]  # as given


def document_stats(doc: DocumentStructure) -> DocumentStats:
    """The counts of get_document's detailed answer, over the whole document."""
    headed = [section for section in doc.sections if section.heading_path]
    levels = Counter(str(s.heading_levels[-1]) if s.heading_levels else "?" for s in headed)
    return DocumentStats(
        characters=len(doc.content), words=len(doc.content.split()), estimated_tokens=estimate_tokens(doc.content),
        chunks=doc.chunk_count, pages=len(doc.page_starts) or None, sections=len(headed), headings=dict(levels),
    )  # fmt: skip


def doc_name(source: str) -> str:
    return PurePosixPath(source).name or source


def document_item(doc: DocumentInfo, detailed: bool) -> DocumentItem:
    item = DocumentItem(
        doc_id=doc.doc_id, name=doc_name(doc.key or doc.source), key=doc.key, source=doc.source,
        collection=doc.collection,
        chunk_count=doc.chunk_count, updated_at=doc.updated_at,
    )  # fmt: skip
    if detailed:
        item.title, item.file_type, item.content_hash = doc.title, doc.file_type, doc.content_hash
        item.tags, item.metadata, item.token_count = doc.tags, doc.metadata, doc.token_count
        item.last_modified = doc.last_modified
    return item


async def resolve_doc_id(state: AppState, collection: str, doc_id: str | None, key: str | None) -> str:
    """The doc_id a document tool was given, or the one of the document whose key it was given."""
    if (doc_id is None) == (key is None):
        raise ToolFailure(
            "Give either doc_id or key (not both, not neither).",
            "doc_id comes from search or list_documents; key is the path, URL or name the document was ingested with.",
            code="INVALID_ARGUMENT",
        )
    return doc_id if doc_id is not None else await state.library.doc_id_of(collection, key or "")


def job_info(job: Job) -> JobInfo:
    outcome = job.result
    summary = None
    if outcome is not None:
        summary = outcome
        if job.type in INGEST_KINDS:  # an ingest's outcome, summed up
            summary = {name: outcome[name] for name in ("status", "doc_id", "collection", "key", "source", "chunks")}
    return JobInfo(
        job_id=job.id, type=job.type, description=job.description, status=job.status, progress=job.progress,
        current_step=job.current_step, start_time=job.start_time, end_time=job.end_time,
        step_ms=job.step_ms or None, result=summary, error=job.error, suggestion=job.suggestion,
    )  # fmt: skip


LIST_OFFSET_CEILING = 1_000_000  # the gateway's GET /v1/collections/{c}/documents ?offset= ceiling


def register(server: MCPServer, state: AppState) -> None:
    tool = profile_tools(server, render_error)
    _register_documents(tool, state)
    _register_jobs(tool, state)
    _register_collection_admin(tool, state)


def _register_documents(tool: ToolDecorator, state: AppState) -> None:
    @tool(READ)
    async def list_documents(
        collection: CollectionArg = None,
        offset: OffsetArg = 0,
        limit: Annotated[int, Field(default=20, ge=1, le=200)] = 20,
        response_format: FormatArg = "concise",
    ) -> Annotated[CallToolResult, DocumentListOutput]:
        """List the documents of a collection (newest first), a page at a time."""
        name = state.collection(collection)
        # The gateway pages up to a million documents in; further than that is past any collection's end, and
        # reading at the ceiling still answers the total for the past-the-end answer below.
        page = await state.library.documents(name, offset=min(offset, LIST_OFFSET_CEILING), limit=limit)
        state.library.budget.check_start(
            offset,
            page.total,
            f"offset {offset}: '{name}' holds {page.total} document(s)",
            "Ask for offset 0 to see them." if page.total else "Ingest a document first.",
        )
        items = [document_item(d, response_format == "detailed") for d in page.documents]
        more = offset + len(items) < page.total
        stale = await mark_stale(state, [(d.collection, d.key) for d in page.documents], items) if items else 0
        return result(DocumentListOutput(
            success=True, documents=items, total=page.total, offset=offset,
            next_offset=offset + len(items) if more else None,
            message=(f"Documents {offset + 1}-{offset + len(items)} of {page.total} in '{name}'."
                     + (f" {stale} are stale (see `stale`: their files now fail)." if stale else ""))
            if items else f"No documents at offset {offset} in '{name}' ({page.total} in all).",
        ))  # fmt: skip

    @tool(READ)
    async def get_document(
        doc_id: DocRefArg = None,
        key: KeyArg = None,
        collection: CollectionArg = None,
        start_char: OffsetArg = 0,
        response_format: FormatArg = "concise",
    ) -> Annotated[CallToolResult, DocumentOutput]:
        """A document's full Markdown, rebuilt from its chunks (paged when long)."""
        name = state.collection(collection)
        found = await resolve_doc_id(state, name, doc_id, key)
        detailed = response_format == "detailed"  # its map too: the stats count its pages and headings
        doc = await (state.library.structure if detailed else state.library.document)(name, found)
        state.library.budget.check_start(
            start_char,
            len(doc.content),
            f"start_char {start_char}: '{doc_name(doc.key or doc.source)}' holds {len(doc.content)} characters",
            "Read it from start_char=0, or by section with get_document_section.",
        )
        content, truncated = state.library.budget.window(doc.content, start_char)
        message = (
            f"'{doc_name(doc.key or doc.source)}': characters {start_char}-{start_char + len(content)} "
            f"of {len(doc.content)}."
        )
        if truncated:
            message += f" Call again with start_char={start_char + state.library.budget.chars} for the rest."
        return result(DocumentOutput(
            success=True, doc_id=doc.doc_id, name=doc_name(doc.key or doc.source), source=doc.source, collection=name,
            title=doc.title, content=content, chunk_count=doc.chunk_count, truncated=truncated or None,
            next_start_char=start_char + len(content) if truncated else None,
            metadata=doc.metadata or None, message=message,
            stats=document_stats(doc) if isinstance(doc, DocumentStructure) else None,
        ))  # fmt: skip

    @tool(REMOVE)
    async def delete_document(
        doc_id: DocRefArg = None, key: KeyArg = None, collection: CollectionArg = None
    ) -> Annotated[CallToolResult, DeleteOutput]:
        """Delete a document and all its chunks from a collection. Permanent."""
        name = state.collection(collection)
        with looked_up_for("delete_document", name, key or doc_id):
            doc_id = await resolve_doc_id(state, name, doc_id, key)
        deleted = await state.library.delete_document(name, doc_id)
        return result(DeleteOutput(
            success=True, doc_id=doc_id, collection=name, deleted_chunks=deleted.deleted_chunks,
            message=f"Deleted document '{doc_id}' ({deleted.deleted_chunks} chunks) from '{name}'.",
        ))  # fmt: skip

    @tool(READ)
    async def find_similar(
        doc_id: DocRefArg = None,
        key: KeyArg = None,
        collection: CollectionArg = None,
        top_k: Annotated[int, Field(default=5, ge=1, le=50)] = 5,
    ) -> Annotated[CallToolResult, SimilarOutput]:
        """Find documents similar in meaning to a given document (best passage of each)."""
        name = state.collection(collection)
        doc = await state.library.document(name, await resolve_doc_id(state, name, doc_id, key))
        doc_id = doc.doc_id
        similar: list[PassageItem] = [search_item(hit, False) for hit in await state.library.similar(name, doc, top_k)]
        return result(SimilarOutput(
            success=True, doc_id=doc_id, name=doc_name(doc.key or doc.source), similar=similar,
            message=f"{len(similar)} documents similar to '{doc_name(doc.key or doc.source)}'.",
        ))  # fmt: skip


async def find_job(state: AppState, job_id: str) -> Job:
    job = await state.own_job(job_id)  # another caller's job answers as unknown
    if job is None:
        raise job_not_found(state, job_id)
    return job


def job_not_found(state: AppState, job_id: str) -> ToolFailure:
    return ToolFailure(
        f"No job '{job_id}' (unknown, or finished more than {state.settings.job_retention_s:.0f} s ago).",
        "Use list_active_jobs to see running jobs.",
        code="JOB_NOT_FOUND",
    )


def _register_jobs(tool: ToolDecorator, state: AppState) -> None:
    @tool(READ)
    async def get_job_status(job_id: JobIdArg) -> Annotated[CallToolResult, JobStatusOutput]:
        """Status of a background job: progress 0-100, current step, timings, and its result or error."""
        job = await find_job(state, job_id)
        info = job_info(job)
        if job.status in ("failed", "cancelled"):  # the work did not happen: say so as an error, with what to do
            return result(JobStatusOutput(
                success=False, job=info, error=job.error, suggestion=job.suggestion,
                message=f"Job {job.id} {job.status}.",
            ), is_error=False)  # fmt: skip
        return result(
            JobStatusOutput(success=True, job=info, message=f"Job {job.id}: {job.status}, {job.progress:.0f}%.")
        )

    @tool(CANCEL)
    async def cancel_job(job_id: JobIdArg) -> Annotated[CallToolResult, JobOutput]:
        """Stop a background job at its next step: it ends 'cancelled', nothing written (unless already storing)."""
        job = await state.cancel_job(job_id)  # audited, a refused or unknown one included
        if job is None:
            raise job_not_found(state, job_id)
        note = {"cancelled": "cancelled; nothing was written", "running": "stopping (still storing what it began)"}
        said = note.get(job.status, f"already ended: {job.status}")
        return result(JobOutput(success=True, job=job_info(job), message=f"Job {job.id} {said}."))

    @tool(READ)
    async def list_active_jobs() -> Annotated[CallToolResult, JobListOutput]:
        """List the background jobs that are still running."""
        jobs = [job_info(job) for job in await state.own_active_jobs()]
        return result(JobListOutput(success=True, jobs=jobs, message=f"{len(jobs)} active jobs."))


def _register_collection_admin(tool: ToolDecorator, state: AppState) -> None:
    @tool(CREATE)
    async def create_collection(name: NameArg) -> Annotated[CallToolResult, CreatedCollectionOutput]:
        """Create an empty collection (ingest tools also create one on first use)."""
        info = await state.library.create_collection(name)
        return result(CreatedCollectionOutput(success=True, name=info.name, document_count=0, chunk_count=0,
                                              message=f"Created collection '{name}'."))  # fmt: skip

    @tool(REMOVE)
    async def delete_collection(
        name: NameArg,
        confirm: Annotated[bool, Field(description="Must be true.")],
    ) -> Annotated[CallToolResult, DeletedCollectionOutput]:
        """Delete a collection with all its documents. Permanent; needs confirm=true."""
        if not confirm:
            raise ToolFailure("Not deleted: confirm must be true.", "Call again with confirm=true if you are sure.",
                              code="CONFIRMATION_REQUIRED")  # fmt: skip
        gone = await state.library.delete_collection(name)
        await state.collection_deleted(name)
        return result(DeletedCollectionOutput(
            success=True, name=name, deleted_documents=gone.deleted_documents, deleted_chunks=gone.deleted_chunks,
            message=f"Deleted collection '{name}' ({gone.deleted_documents} documents).",
        ))  # fmt: skip
