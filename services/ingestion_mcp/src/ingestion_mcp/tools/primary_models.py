"""Inputs and outputs of the primary (ingestion-mcp plan) tool set."""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypedDict

from ingestion_contracts.common import COLLECTION_NAME_PATTERN, MAX_TAG_LENGTH, MAX_TAGS
from ingestion_contracts.gateway import MAX_QUERY_CHARS, MAX_TOP_K
from pydantic import BaseModel, Field

from ..errors import ToolFailure

# -- inputs -------------------------------------------------------------------------------
CollectionArg = Annotated[
    str | None,
    Field(
        default=None,
        pattern=COLLECTION_NAME_PATTERN,
        description="Target collection (letters, digits, underscore). Omit for the default collection.",
    ),
]
TagsArg = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=MAX_TAG_LENGTH)]] | None,
    Field(default=None, max_length=MAX_TAGS, description="Tags to attach, usable later as search filters."),
]
ChunkingArg = Annotated[
    Literal["default", "dense", "sparse"],
    Field(
        default="default",
        description="'default' 200/40-token windows for general documents, 'dense' 100/30 for high-precision "
        "lookups, 'sparse' 400/60 for long-form prose.",
    ),
]
FormatArg = Annotated[
    Literal["concise", "detailed"],
    Field(default="concise", description="'detailed' adds timings, warnings and ids."),
]
SourceArg = Annotated[
    str | None,
    Field(
        default=None,
        max_length=2048,
        description="Source label for tracking and filtering (e.g. 'sharepoint'); defaults to the path. "
        "Not the document's identity: two files with one source stay two documents.",
    ),
]
ForceArg = Annotated[
    bool,
    Field(default=False, description="Re-convert, re-chunk and re-embed even when nothing changed."),
]
MetadataArg = Annotated[
    dict[str, Any] | None, Field(default=None, description="Optional key-value metadata stored with every chunk.")
]
QueryArg = Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS, description="What to find, in words.")]
TopKArg = Annotated[int, Field(default=5, ge=1, le=MAX_TOP_K, description="How many passages to return (1-100).")]


# -- outputs ------------------------------------------------------------------------------
class ToolOutput(BaseModel):
    """Fields every primary answer may carry; errors set success=false, error and suggestion."""

    success: bool
    message: str | None = None
    error: str | None = None
    suggestion: str | None = None


class Stages(BaseModel):
    reading_ms: float | None = Field(default=None, description="Reading the file or downloading the URL.")
    parsing_ms: float | None = None
    chunking_ms: float | None = None
    embedding_ms: float | None = None
    storing_ms: float | None = None


class IngestNames(TypedDict, total=False):
    """How the ingested thing was named by the caller: the tool's own name field of IngestOutput."""

    file_name: str | None
    name: str | None
    url: str | None
    content_type: str | None


class IngestOutput(ToolOutput):
    status: Literal["indexed", "replaced", "updated", "skipped"] | None = Field(
        default=None,
        description="indexed = new; replaced = content or chunking changed (re-embedded); updated = same content, "
        "new tags/metadata/source (no re-embedding); skipped = nothing changed.",
    )
    file_name: str | None = None
    name: str | None = None
    url: str | None = None
    content_type: str | None = None
    collection: str | None = None
    chunks_created: int | None = None
    job_id: str | None = Field(default=None, description="Set when the work continues in the background.")
    # detailed only
    doc_id: str | None = None
    key: str | None = Field(default=None, description="The document's identity: absolute path, URL or text name.")
    source: str | None = None
    estimated_tokens: int | None = None
    page_count: int | None = None
    pipeline: str | None = None
    processing_time_ms: float | None = None
    stages: Stages | None = None
    warnings: list[str] | None = None


class ScoreParts(BaseModel):
    """Why a passage ranked: score = dense + keyword (each already weighted), and its place in each ranking."""

    dense: float = Field(description="Meaning part: 0.5 x calibrated cosine of query and passage (hybrid).")
    keyword: float = Field(description="Keyword part: 0.5 x calibrated BM25 of the query's words (hybrid).")
    dense_rank: int | None = Field(default=None, description="Place in the meaning ranking (1 = first); none: absent.")
    keyword_rank: int | None = Field(default=None, description="Place in the BM25 ranking; none: absent.")
    collection: str


class SearchResultItem(BaseModel):
    title: str
    source: str
    collection: str
    page: int | None = None
    section: str | None = Field(default=None, description="Heading path of the passage, 'A > B'.")
    text: str
    score: float = Field(
        description="0-1, the same scale for every query and collection; 0.35 or more: relevant (hybrid mode)."
    )
    doc_id: str
    chunk_index: int
    # detailed only
    tags: list[str] | None = None
    metadata: dict[str, Any] | None = None
    file_type: str | None = None
    why: ScoreParts | None = Field(default=None, description="How the score was made (detailed format).")


class SearchOutput(ToolOutput):
    query: str | None = None
    mode: str | None = None
    results: list[SearchResultItem] | None = None
    total_results: int | None = None
    truncated: bool | None = None
    searched_chunks: int | None = None
    search_time_ms: float | None = None


class CollectionSummary(BaseModel):
    name: str
    document_count: int
    chunk_count: int | None = None


class CollectionsOutput(ToolOutput):
    # list mode
    collections: list[CollectionSummary] | None = None
    total_collections: int | None = None
    # stats mode
    name: str | None = None
    document_count: int | None = None
    chunk_count: int | None = None
    files: list[str] | None = None
    file_count: int | None = None
    embedding_model: str | None = None
    # error help
    available_collections: list[str] | None = None


def render_error(failure: ToolFailure) -> dict[str, Any]:
    body: dict[str, Any] = {"success": False, "error": failure.message}
    if failure.suggestion:
        body["suggestion"] = failure.suggestion
    for key in ("available_collections", "allowed_keys"):
        if key in failure.details:
            body[key] = failure.details[key]
    return body
