"""Inputs and outputs of the primary (ingestion-mcp plan) tool set."""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypedDict

from ingestion_contracts.common import MAX_TAG_LENGTH, MAX_TAGS, UserName
from ingestion_contracts.gateway import MAX_QUERY_CHARS, MAX_TOP_K
from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema

from ...errors import ToolFailure
from ...ingest.folders import SyncedFolder
from .evidence import PageRegions, UnitItem

# -- inputs -------------------------------------------------------------------------------
# Described once, in the server's instructions (omitted: the default collection; search: every collection).
CollectionArg = Annotated[UserName | None, Field(default=None)]
TagsArg = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=MAX_TAG_LENGTH)]] | None,
    Field(default=None, max_length=MAX_TAGS),
]
TagFilterArg = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=MAX_TAG_LENGTH)]] | None,
    Field(default=None, max_length=MAX_TAGS, description="Only passages carrying every one of these tags."),
]
ChunkingArg = Annotated[
    Literal["default", "dense", "sparse"],
    Field(default="default", description="200 tokens a chunk; dense 100 (precise), sparse 400 (long prose)."),
]
# What 'detailed' adds is named in each output schema's description.
FormatArg = Annotated[Literal["concise", "detailed"], Field(default="concise")]
SourceArg = Annotated[
    str | None,
    Field(
        default=None,
        max_length=2048,
        description="Filterable label, e.g. 'sharepoint' (default: the path; not the identity).",
    ),
]
ForceArg = Annotated[
    bool,
    Field(default=False, description="Re-ingest even if unchanged."),
]
MetadataArg = Annotated[dict[str, Any] | None, Field(default=None, description="Stored with every chunk.")]
QueryArg = Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS, description="What to find, in words.")]
TopKArg = Annotated[int, Field(default=5, ge=1, le=MAX_TOP_K)]


# -- outputs ------------------------------------------------------------------------------
class ToolOutput(BaseModel):
    # An error answer (isError) is {success: false, error, suggestion}; a successful one is described per tool.
    # Every answer's envelope (success, message) is said once, in the server's instructions, not in 15 schemas.
    success: SkipJsonSchema[bool]
    message: SkipJsonSchema[str | None] = None


class Stages(BaseModel):
    reading_ms: float | None = None
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
    # Fields of the detailed format are named in the schema's description, not typed one by one: fewer bytes
    # in every conversation, and the schema still accepts them (no additionalProperties: false).
    model_config = ConfigDict(
        json_schema_extra={
            "description": "'detailed' adds doc_id, key, source, estimated_tokens, page_count, pipeline, "
            "processing_time_ms, stages, warnings."
        }
    )
    status: Literal["indexed", "replaced", "updated", "skipped"] | None = Field(
        default=None,
        description="replaced: re-embedded; updated: labels only.",
    )
    collection: str | None = None
    chunks_created: int | None = None
    job_id: str | None = Field(default=None, description="Still running: poll get_job_status.")
    # detailed only
    doc_id: SkipJsonSchema[str | None] = None
    key: SkipJsonSchema[str | None] = None
    source: SkipJsonSchema[str | None] = None
    estimated_tokens: SkipJsonSchema[int | None] = None
    page_count: SkipJsonSchema[int | None] = None
    pipeline: SkipJsonSchema[str | None] = None
    processing_time_ms: SkipJsonSchema[float | None] = None
    stages: SkipJsonSchema[Stages | None] = None
    warnings: SkipJsonSchema[list[str] | None] = None


# Each ingest tool's answer names what it ingested its own way.
class FileIngestOutput(IngestOutput):
    file_name: str | None = None


class TextIngestOutput(IngestOutput):
    name: str | None = None


class UrlIngestOutput(IngestOutput):
    url: str | None = None
    content_type: str | None = None


class ScoreParts(BaseModel):
    """score = dense (meaning) + keyword (BM25) parts; ranks from 1, absent: not ranked."""

    dense: float
    keyword: float
    dense_rank: int | None = None
    keyword_rank: int | None = None
    collection: str


class PassageItem(BaseModel):
    title: str
    source: str
    collection: str
    page: int | None = Field(default=None, description="The page to cite (the one holding the match).")
    page_range: list[int] | None = None  # [first, last] of a passage across a page break
    section: str | None = Field(default=None, description="Headings, 'A > B'.")
    text: str
    score: float
    doc_id: str
    chunk_index: int


class SearchResultItem(PassageItem):
    # detailed only (named in SearchOutput's description)
    tags: SkipJsonSchema[list[str] | None] = None
    metadata: SkipJsonSchema[dict[str, Any] | None] = None
    file_type: SkipJsonSchema[str | None] = None
    updated: SkipJsonSchema[str | None] = None  # the document's last change (file mtime, page date)
    why: SkipJsonSchema[ScoreParts | None] = None
    regions: SkipJsonSchema[list[PageRegions] | None] = None  # where it lies on its pages (evidence.py)
    units: SkipJsonSchema[list[UnitItem] | None] = None  # the tables and figures it holds


class SearchOutput(ToolOutput):
    model_config = ConfigDict(
        json_schema_extra={
            "description": "'detailed' adds searched_chunks, search_time_ms and per result tags, metadata, "
            "file_type, updated (document's last change), why (score's dense and keyword parts, ranks), regions, "
            "units."
        }
    )
    query: str | None = None
    mode: str | None = None
    results: list[SearchResultItem] | None = None
    total_results: int | None = None
    truncated: bool | None = None
    searched_chunks: SkipJsonSchema[int | None] = None
    search_time_ms: SkipJsonSchema[float | None] = None


class CollectionSummary(BaseModel):
    name: str
    document_count: int
    chunk_count: int | None = None
    last_synced: str | None = None  # the latest sync_folder run into it, if any


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
    synced_folders: list[SyncedFolder] | None = None


def render_error(failure: ToolFailure) -> dict[str, Any]:
    body: dict[str, Any] = {"success": False, "error": failure.message}
    if failure.suggestion:
        body["suggestion"] = failure.suggestion
    for key in ("available_collections", "allowed_keys"):
        if key in failure.details:
            body[key] = failure.details[key]
    return body
