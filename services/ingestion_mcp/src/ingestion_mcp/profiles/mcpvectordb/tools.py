"""Compatibility profile: the mcpvectordb 0.2.0 tool contract (libraries, status by content hash).

Spec: docs/specs/mcpvectordb-tools.md. Errors are `{status: "error", error}` everywhere.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from ingestion_contracts.common import DOC_ID_PATTERN, NAME_PATTERN, UserName
from ingestion_contracts.gateway import DocumentInfo, SearchHit, SearchRequest
from mcp.server import MCPServer
from mcp.types import CallToolResult
from pydantic import BaseModel, Field

from ...access.audit import looked_up_for
from ...errors import ToolFailure
from ...handshake import PROFILE_IDENTITIES
from ...ingest.pipeline import IngestOutcome
from ...state import AppState
from ...toolkit.annotations import FETCH, LARGE_RESULT, READ, REMOVE, WRITE
from ...toolkit.common import ToolDecorator, profile_tools, result

# What it announces in `initialize`, served alone: kept where the early answer reads it (handshake.py).
SERVER_NAME, SERVER_VERSION = PROFILE_IDENTITIES["mcpvectordb"]
LibraryArg = Annotated[UserName | None, Field(default=None)]
DEFAULT_LIBRARY = "default"
# The ChunkRecord fields a filter compares for equality (content and metadata are not comparable).
_METADATA_KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
FILTER_FIELDS = ("chunk_index", "doc_id", "file_type", "last_modified", "library", "page", "source", "title")
_LIBRARY_RE = re.compile(NAME_PATTERN)


def render_error(failure: ToolFailure) -> dict[str, Any]:
    message = failure.message if not failure.suggestion else f"{failure.message} {failure.suggestion}"
    return {"status": "error", "error": message}


class IngestResult(BaseModel):
    status: Literal["indexed", "replaced", "skipped", "error"]
    doc_id: str | None = None
    source: str | None = None
    library: str | None = None
    chunk_count: int | None = None
    error: str | None = None


class ChunkRecord(BaseModel):
    doc_id: str
    source: str
    title: str
    library: str
    file_type: str
    last_modified: str
    page: int
    content: str
    chunk_index: int
    metadata: dict[str, Any]


class SearchResult(BaseModel):
    results: list[ChunkRecord] | None = None
    status: Literal["error"] | None = None
    error: str | None = None


class DocumentRecord(BaseModel):
    doc_id: str
    source: str
    title: str
    library: str
    content_hash: str
    created_at: str
    metadata: dict[str, Any]
    chunk_count: int


class DocumentsResult(BaseModel):
    documents: list[DocumentRecord] | None = None
    count: int | None = None
    status: Literal["error"] | None = None
    error: str | None = None


class LibraryRecord(BaseModel):
    library: str
    document_count: int
    chunk_count: int


class LibrariesResult(BaseModel):
    libraries: list[LibraryRecord] | None = None
    status: Literal["error"] | None = None
    error: str | None = None


class DeleteResult(BaseModel):
    status: Literal["deleted", "error"]
    doc_id: str | None = None
    deleted_chunks: int | None = None
    error: str | None = None


class DocumentResult(BaseModel):
    doc_id: str | None = None
    source: str | None = None
    title: str | None = None
    library: str | None = None
    content: str | None = None
    chunk_count: int | None = None
    metadata: dict[str, Any] | None = None
    status: Literal["error"] | None = None
    error: str | None = None


def chunk_record(hit: SearchHit) -> ChunkRecord:
    return ChunkRecord(
        doc_id=hit.doc_id, source=hit.key or hit.source, title=hit.title, library=hit.collection,
        file_type=hit.file_type, last_modified=hit.last_modified, page=hit.cited_page or hit.page or 0,
        content=hit.text, chunk_index=hit.chunk_index, metadata=hit.metadata,
    )  # fmt: skip


def document_record(doc: DocumentInfo) -> DocumentRecord:
    return DocumentRecord(
        doc_id=doc.doc_id, source=doc.key or doc.source, title=doc.title, library=doc.collection,
        content_hash=doc.content_hash, created_at=doc.created_at, metadata=doc.metadata, chunk_count=doc.chunk_count,
    )  # fmt: skip


def split_filter(filter_: dict[str, Any] | None, library: str | None) -> tuple[dict[str, Any], str | None]:
    """ChunkRecord's comparable fields as they are; any other key is a key of the chunk's `metadata` (what
    users put there, e.g. {"team": "legal"}); `library` selects the library, not a field."""
    filters: dict[str, Any] = {}
    for key, value in (filter_ or {}).items():
        if key in FILTER_FIELDS:
            filters[key] = value
            continue
        name = key.removeprefix("metadata.")
        if not _METADATA_KEY_RE.fullmatch(name):
            raise ToolFailure(
                f"Invalid filter key {key[:64]!r}.",
                f"Use a field ({', '.join(FILTER_FIELDS)}) or a metadata key (letters, digits, underscore).",
                code="INVALID_INPUT",
            )
        filters[f"metadata.{name}"] = value
    in_filter = filters.pop("library", None)
    if in_filter is not None and not (isinstance(in_filter, str) and _LIBRARY_RE.fullmatch(in_filter)):
        raise ToolFailure(
            "filter.library must be a library name.", "Use list_libraries to see them.", code="INVALID_INPUT"
        )
    if in_filter is not None and library is not None and in_filter != library:
        raise ToolFailure(f"filter.library '{in_filter}' contradicts library '{library}'.", code="INVALID_INPUT")
    return filters, library or in_filter


def library_failure(exc: ToolFailure, library: str | None) -> ToolFailure:
    """A missing collection, in this profile's words (its tools say library, and list_libraries lists them)."""
    if exc.code != "COLLECTION_NOT_FOUND" or library is None:
        return exc
    available = exc.details.get("available_collections") or []
    listed = ", ".join(str(name) for name in available) or "none yet"
    return ToolFailure(
        f"Library '{library}' not found. Available libraries: {listed}.",
        "Use one of them, or omit library to use all libraries.",
        code="COLLECTION_NOT_FOUND",
    )


async def find_library(state: AppState, doc_id: str) -> str:
    """Documents are addressed by doc_id alone here; find the library that holds it."""
    name = await state.library.locate(doc_id)
    if name is None:
        raise ToolFailure(f"Document not found: {doc_id}. Use list_documents to see the indexed doc_ids.")
    return name


def ingest_result(outcome: IngestOutcome) -> IngestResult:
    """The spec knows indexed/replaced/skipped: new metadata on unchanged content (updated) is a replace."""
    status = "replaced" if outcome.status == "updated" else outcome.status
    return IngestResult(
        status=status, doc_id=outcome.doc_id, source=outcome.key, library=outcome.collection,
        chunk_count=outcome.chunks,
    )  # fmt: skip


def register(server: MCPServer, state: AppState) -> None:
    tool = profile_tools(server, render_error)
    _register_ingest(tool, state)
    _register_read(tool, state)
    _register_manage(tool, state)


def _register_ingest(tool: ToolDecorator, state: AppState) -> None:
    async def ingest(path: str, library: str | None, metadata: dict[str, Any] | None) -> CallToolResult:
        outcome = await state.ingestor.ingest_file(path, collection=library or DEFAULT_LIBRARY, metadata=metadata)
        return result(ingest_result(outcome))

    @tool(WRITE)
    async def ingest_file(
        path: Annotated[str, Field(min_length=1, max_length=4096, description="Absolute or relative path to the file")],
        library: UserName = DEFAULT_LIBRARY,
        metadata: dict[str, Any] | None = None,
    ) -> Annotated[CallToolResult, IngestResult]:
        """Convert a local file and index it in the vector store."""
        return await ingest(path, library, metadata)

    @tool(FETCH)
    async def ingest_url(
        url: Annotated[str, Field(min_length=8, max_length=2048, description="HTTP or HTTPS URL to fetch")],
        library: UserName = DEFAULT_LIBRARY,
        metadata: dict[str, Any] | None = None,
    ) -> Annotated[CallToolResult, IngestResult]:
        """Fetch an HTTP/HTTPS URL, convert its content, and index it."""
        outcome = await state.ingestor.ingest_url(url, policy=state.policy, collection=library, metadata=metadata)
        return result(ingest_result(outcome))


def _register_read(tool: ToolDecorator, state: AppState) -> None:
    @tool(READ)
    async def search(
        query: Annotated[str, Field(min_length=1, max_length=4000, description="Natural language search query")],
        top_k: Annotated[int, Field(ge=1, le=100, description="Max results to return (1-100)")] = 5,
        library: LibraryArg = None,
        filter: Annotated[
            dict[str, str | int] | None,
            Field(description=f"Field equality filters, AND-ed; keys: {', '.join(FILTER_FIELDS)}, or any metadata key"),
        ] = None,
    ) -> Annotated[CallToolResult, SearchResult]:
        """Semantic search over indexed document chunks (hybrid: BM25 and vector scores fused)."""
        filters, target = split_filter(filter, library)
        request = SearchRequest(query=query, top_k=top_k, filters=filters, collections=[target] if target else None)
        try:
            found = await state.library.search(request)
        except ToolFailure as exc:
            raise library_failure(exc, target) from None
        return result(SearchResult(results=[chunk_record(hit) for hit in found.hits]))

    @tool(READ)
    async def list_documents(
        library: LibraryArg = None,
        limit: Annotated[int, Field(ge=1, le=1000)] = 20,
        offset: Annotated[int, Field(ge=0, le=1_000_000)] = 0,
    ) -> Annotated[CallToolResult, DocumentsResult]:
        """List indexed documents with metadata (newest first within each library, libraries A to Z)."""
        try:
            found = await state.library.documents_across([library] if library else None, offset=offset, limit=limit)
        except ToolFailure as exc:
            raise library_failure(exc, library) from None
        documents = [document_record(doc) for doc in found]
        return result(DocumentsResult(documents=documents, count=len(documents)))

    @tool(READ, meta=LARGE_RESULT)  # the spec answers the whole document
    async def get_document(
        doc_id: Annotated[str, Field(pattern=DOC_ID_PATTERN)],
    ) -> Annotated[CallToolResult, DocumentResult]:
        """Return the full Markdown text of an indexed document."""
        name = await find_library(state, doc_id)
        doc = await state.library.document(name, doc_id)
        return result(DocumentResult(
            doc_id=doc.doc_id, source=doc.key or doc.source, title=doc.title, library=name, content=doc.content,
            chunk_count=doc.chunk_count, metadata=doc.metadata,
        ))  # fmt: skip


def _register_manage(tool: ToolDecorator, state: AppState) -> None:
    @tool(READ)
    async def list_libraries() -> Annotated[CallToolResult, LibrariesResult]:
        """List all libraries with document and chunk counts."""
        listing = await state.library.listing()
        return result(LibrariesResult(libraries=[
            LibraryRecord(library=c.name, document_count=c.document_count, chunk_count=c.chunk_count)
            for c in listing.collections
        ]))  # fmt: skip

    @tool(REMOVE)
    async def delete_document(
        doc_id: Annotated[str, Field(pattern=DOC_ID_PATTERN)],
    ) -> Annotated[CallToolResult, DeleteResult]:
        """Remove a document and all its chunks from the index."""
        with looked_up_for("delete_document", None, doc_id):  # a forbidden or missing doc_id is on the record too
            name = await find_library(state, doc_id)
        deleted = await state.library.delete_document(name, doc_id)
        return result(DeleteResult(status="deleted", doc_id=doc_id, deleted_chunks=deleted.deleted_chunks))
