"""Compatibility profile: the docs-server MCP API (docs/specs/docs-server-api.md), to the letter.

Tools: search_documents, get_file_details, remove_file, fetch_repo, fetch_file, get_job_status,
list_active_jobs. Parameter and result keys are camelCase as in the spec; nested `options` objects
carry the spec's defaults. Everything is indexed into one collection (INGESTION_MCP_DOCS_COLLECTION,
default "docs"); a document's `filePath` is its absolute path, where fetch_file / fetch_repo saved it.

Error shape (every tool, isError=true): {"error": {"code": CODE, "message": ..., "suggestion": ...}}.
CODE is one of the spec's codes (INVALID_PATH, UNSUPPORTED_FORMAT, INDEX_NOT_FOUND, INVALID_REPO_URL,
REPOMIX_FAILED, REPO_TOO_LARGE, INVALID_URL, DOWNLOAD_FAILED, FILE_TOO_LARGE, PROCESSING_FAILED), or
JOB_NOT_FOUND / INVALID_INPUT. A failed job reports its message in `error` and its code in `errorCode`, and so
does get_job_status's own failure (an unknown jobId): {"error": MESSAGE, "errorCode": CODE}.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

from ingestion_contracts.gateway import MAX_QUERY_CHARS, DocumentInfo, SearchHit, SearchRequest
from mcp.server import MCPServer
from mcp.types import CallToolResult, TextContent
from pydantic import Field

from ...access.audit import looked_up_for
from ...errors import CollectionNotFound, ToolFailure
from ...jobs import Job
from ...sources import SourcePolicy, ensure_inside, sanitize_filename
from ...sources.gitcli import check_repo_url, validate_ref
from ...sources.netguard import check_url_shape, parse_url
from ...state import AppState
from ...toolkit.annotations import FETCH_AND_SAVE, READ, REMOVE
from ...toolkit.common import ToolDecorator, profile_tools, result
from ...toolkit.scores import docs_server_score, docs_server_threshold
from .jobs import DocsContext
from .models import (
    ActiveJobsOutput,
    ChunkMetadata,
    DocumentChunk,
    FileDetailsOutput,
    FileOptions,
    JobStarted,
    JobStatusOutput,
    JobView,
    RemoveFileOutput,
    RepoOptions,
    SearchDocumentsOutput,
    SearchOptions,
    render_error,
    render_job_error,
    spec_code,
)

JOB_TYPES = ("fetch_repo", "fetch_file")
FilePathArg = Annotated[str, Field(min_length=1, max_length=2048, description="Absolute path of an indexed file.")]


def index_empty() -> ToolFailure:
    return ToolFailure(
        "Nothing is indexed yet.",
        "Index documents with fetch_file or fetch_repo first, then search.",
        code="INDEX_NOT_FOUND",
    )


def not_indexed(what: str) -> ToolFailure:
    return ToolFailure(
        f"{what} is not indexed.",
        "Index documents with fetch_file or fetch_repo first; search_documents returns the indexed filePaths.",
        code="INDEX_NOT_FOUND",
    )


class DocsServer:
    """The lookups the tools share (one collection, files addressed by absolute path)."""

    def __init__(self, docs: DocsContext) -> None:
        self.docs = docs
        self.state = docs.state
        self.collection = docs.collection

    async def find(self, file_path: str) -> DocumentInfo:
        if any(ord(ch) < 32 for ch in file_path):
            raise ToolFailure(
                "filePath contains a NUL or control character.",
                "Pass the filePath exactly as search_documents returned it.",
                code="INVALID_PATH",
            )
        if not Path(file_path).is_absolute():
            raise ToolFailure(
                f"filePath must be an absolute path, got {file_path!r}.",
                "Pass the filePath exactly as search_documents returned it.",
                code="INVALID_PATH",
            )
        try:
            doc = await self.state.library.find_key(self.collection, file_path)
        except CollectionNotFound:
            raise index_empty() from None
        if doc is None:
            raise not_indexed(f"The file {file_path}")
        return doc

    def file_size(self, file_path: str, metadata: dict[str, Any]) -> int:
        size = metadata.get("file_size")
        if isinstance(size, int):
            return size
        path = Path(file_path)
        inside = any(path.is_relative_to(root) for root in [*self.docs.roots, *self.state.settings.allowed_roots])
        return path.stat().st_size if inside and path.is_file() else 0

    def chunk(self, hit: SearchHit, *, score: bool, with_metadata: bool = True) -> DocumentChunk:
        metadata = None
        if with_metadata:
            metadata = ChunkMetadata(
                fileSize=self.file_size(hit.key, hit.metadata), lastModified=hit.last_modified,
                chunkOffset=hit.start, tokenCount=hit.token_count,
            )  # fmt: skip
        return DocumentChunk(
            id=hit.chunk_id, filePath=hit.key, chunkIndex=hit.chunk_index, content=hit.text,
            score=round(docs_server_score(hit.score), 4) if score else None, metadata=metadata,
        )  # fmt: skip


def array_result(wrapped: SearchDocumentsOutput | ActiveJobsOutput) -> CallToolResult:
    """The spec answers with an array: the text block carries it, structuredContent wraps it as {"result": [...]}."""
    data = wrapped.model_dump(mode="json", exclude_none=True)
    text = json.dumps(data["result"], ensure_ascii=False, separators=(",", ":"))
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def job_view(job: Job) -> dict[str, Any]:
    error = None if job.error is None else " ".join(p for p in (job.error, job.suggestion) if p)
    view = JobView(
        id=job.id, type=job.type, status=job.status, progress=job.progress, currentStep=job.current_step,  # type: ignore[arg-type]  # jobs/ types them as str
        startTime=job.start_time, endTime=job.end_time, result=job.result if isinstance(job.result, dict) else None,
        error=error, errorCode=spec_code(job.failure.code) if job.failure else None,
    )  # fmt: skip
    return view.model_dump(mode="json", exclude_none=True)


def register(server: MCPServer, state: AppState, policy: SourcePolicy | None = None) -> None:
    tool = profile_tools(server, render_error)
    docs = DocsServer(DocsContext(state, policy or state.policy))
    _register_search(tool, docs)
    _register_files(tool, docs)
    _register_fetch(tool, docs)
    _register_jobs(tool, docs, profile_tools(server, render_job_error, own_shape=True))


def _register_search(tool: ToolDecorator, docs: DocsServer) -> None:
    @tool(READ)
    async def search_documents(
        query: Annotated[
            str, Field(min_length=1, max_length=MAX_QUERY_CHARS, description="Natural language search query.")
        ],
        options: SearchOptions = SearchOptions(),
    ) -> Annotated[CallToolResult, SearchDocumentsOutput]:
        """Semantic search across the indexed documents: the chunks most similar in meaning to the query.

        Scores are relevance on one scale for every query (0-1): 0.7 or more is relevant with the bundled
        model, so the default options.minScore (0.7) returns on-topic chunks and nothing for an off-topic
        query ([]); lower it (e.g. 0.5) to see weaker matches. Returns an array of chunks, best first.
        Read more around a hit with get_file_details(filePath, chunkIndex).
        """
        request = SearchRequest(
            query=query, collections=[docs.collection], mode="semantic", top_k=options.limit,
            min_score=docs_server_threshold(options.minScore),
        )  # fmt: skip
        try:
            found = await docs.state.library.search(request)
        except CollectionNotFound:
            raise index_empty() from None
        if found.total_searched == 0:
            raise index_empty()
        chunks = [docs.chunk(hit, score=True, with_metadata=options.includeMetadata) for hit in found.hits]
        return array_result(SearchDocumentsOutput(result=chunks))


def _register_files(tool: ToolDecorator, docs: DocsServer) -> None:
    @tool(READ)
    async def get_file_details(
        filePath: FilePathArg,
        chunkIndex: Annotated[
            int | None, Field(default=None, ge=0, description="Chunk to retrieve (from search results).")
        ] = None,
        contextSize: Annotated[int, Field(ge=0, le=20, description="Chunks before and after chunkIndex.")] = 3,
    ) -> Annotated[CallToolResult, FileDetailsOutput]:
        """An indexed file's full content as Markdown, or with chunkIndex that chunk plus contextSize
        chunks before and after it (good for reading around a search hit)."""
        doc = await docs.find(filePath)
        meta = {"fileSize": docs.file_size(doc.key, doc.metadata), "lastModified": doc.last_modified}
        if chunkIndex is None:
            return result(await _whole_file(docs, doc, meta))
        if chunkIndex >= doc.chunk_count:
            raise ToolFailure(
                f"{doc.key} has {doc.chunk_count} chunks (0..{doc.chunk_count - 1}); there is no chunk {chunkIndex}.",
                "Use a chunkIndex from search_documents, or omit it for the whole file.",
                code="INDEX_NOT_FOUND",
            )
        first, last = max(0, chunkIndex - contextSize), min(doc.chunk_count - 1, chunkIndex + contextSize)
        window = await docs.state.library.chunks(docs.collection, doc.doc_id, first, last)
        chunks = [docs.chunk(hit, score=False) for hit in window.chunks]
        target = next((c.content for c in chunks if c.chunkIndex == chunkIndex), None)
        return result(FileDetailsOutput(
            filePath=doc.key, title=doc.title, totalChunks=doc.chunk_count, content=target, chunkIndex=chunkIndex,
            contextSize=contextSize, chunks=chunks, metadata=meta,
        ))  # fmt: skip

    @tool(REMOVE)
    async def remove_file(filePath: FilePathArg) -> Annotated[CallToolResult, RemoveFileOutput]:
        """Delete a file's chunks and embeddings from the index (the file on disk is left alone)."""
        with looked_up_for("delete_document", docs.collection, filePath):
            doc = await docs.find(filePath)
        deleted = await docs.state.library.delete_document(docs.collection, doc.doc_id)
        return result(RemoveFileOutput(
            success=True, filePath=doc.key, chunksDeleted=deleted.deleted_chunks,
            message=f"Removed {doc.key} from the index ({deleted.deleted_chunks} chunks deleted).",
        ))  # fmt: skip


async def _whole_file(docs: DocsServer, doc: DocumentInfo, meta: dict[str, Any]) -> FileDetailsOutput:
    content = (await docs.state.library.document(docs.collection, doc.doc_id)).content
    budget = docs.state.library.budget
    out = FileDetailsOutput(filePath=doc.key, title=doc.title, totalChunks=doc.chunk_count, metadata=meta)
    out.content, more = budget.window(content)
    if more:
        out.truncated = True
        out.message = (
            f"The file is long; showing its first {budget.chars} characters. "
            "Read the rest with chunkIndex and contextSize."
        )
    return out


def _register_fetch(tool: ToolDecorator, docs: DocsServer) -> None:
    @tool(FETCH_AND_SAVE)
    async def fetch_repo(
        repoUrl: Annotated[
            str, Field(min_length=1, max_length=2048, description="GitHub repo URL, e.g. https://github.com/owner/repo")
        ],
        branch: Annotated[
            str | None,
            Field(default=None, max_length=255, description="Branch, tag or commit; the default branch if omitted."),
        ] = None,
        options: RepoOptions = RepoOptions(),
    ) -> Annotated[CallToolResult, JobStarted]:
        """Clone a repository, render its matching files into one Markdown file, then chunk and index it.

        Returns a jobId at once; poll get_job_status(jobId) until status is completed or failed.
        """
        validate_ref(branch)
        check_repo_url(repoUrl, docs.docs.policy)
        params = {"url": repoUrl, "branch": branch, "options": options.model_dump(mode="json")}
        return await _started(docs, "fetch_repo", params, f"fetch_repo {repoUrl}", f"Cloning {repoUrl}")

    @tool(FETCH_AND_SAVE)
    async def fetch_file(
        url: Annotated[str, Field(min_length=1, max_length=8192, description="URL of the file to download.")],
        filename: Annotated[str, Field(min_length=1, max_length=255, description="File name to save it as.")],
        docFolder: Annotated[
            str | None,
            Field(
                default=None,
                max_length=1024,
                description="Folder to save into, inside the server's documents folder; default ./docs/fetched.",
            ),
        ] = None,
        options: FileOptions = FileOptions(),
    ) -> Annotated[CallToolResult, JobStarted]:
        """Download one file (PDF, DOCX, PPTX, XLSX, HTML, Markdown, text), save it, then chunk and index it.

        Returns a jobId at once; poll get_job_status(jobId). The indexed filePath is in the job's result.
        """
        check_url_shape(parse_url(url), docs.docs.policy)
        sanitize_filename(filename)
        folder = docFolder or docs.state.settings.docs_fetch_folder
        ensure_inside(folder, docs.docs.roots)
        params = {"url": url, "filename": filename, "folder": folder, "options": options.model_dump(mode="json")}
        return await _started(docs, "fetch_file", params, f"fetch_file {url}", f"Downloading {url}")


async def _started(docs: DocsServer, kind: str, params: dict[str, Any], description: str, doing: str) -> CallToolResult:
    job = await docs.state.submit_job(kind, params, description, collection=docs.collection)
    job_type = kind
    return result(JobStarted(
        jobId=job.id, type=job_type, status=job.status,  # type: ignore[arg-type]  # str, not JobType / the status Literal
        message=f"{doing}. Call get_job_status with jobId '{job.id}' to follow its progress.",
    ))  # fmt: skip


def _register_jobs(tool: ToolDecorator, docs: DocsServer, job_tool: ToolDecorator) -> None:
    @job_tool(READ)
    async def get_job_status(
        jobId: Annotated[str, Field(min_length=1, max_length=64, description="Job ID from fetch_repo or fetch_file.")],
    ) -> Annotated[CallToolResult, JobStatusOutput]:
        """Status of a fetch job: progress 0-100, the current step, and its result or error when it ends."""
        job = await docs.state.own_job(jobId)
        if job is None or job.type not in JOB_TYPES:
            raise ToolFailure(
                f"No job with id {jobId!r} (finished jobs are kept for an hour).",
                "Use list_active_jobs to see running jobs, or start one with fetch_file / fetch_repo.",
                code="JOB_NOT_FOUND",
            )
        return result(job_view(job))

    @tool(READ)
    async def list_active_jobs() -> Annotated[CallToolResult, ActiveJobsOutput]:
        """All running fetch jobs with their progress and current step, as an array."""
        jobs = [job_view(job) for job in await docs.state.own_active_jobs() if job.type in JOB_TYPES]
        return array_result(ActiveJobsOutput.model_validate({"result": jobs}))
