"""Inputs and outputs of the primary (ingestion-mcp plan) tool set."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal, TypedDict

from ingestion_contracts.common import MAX_TAG_LENGTH, MAX_TAGS, UserName
from ingestion_contracts.gateway import MAX_QUERY_CHARS, MAX_TOP_K
from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema, WithJsonSchema

from ...errors import ToolFailure
from ...ingest.folders import SyncedFolder
from .evidence import PageRegions, UnitItem

# -- inputs -------------------------------------------------------------------------------
# Described once, in the server's instructions (handshake.INSTRUCTIONS), not in each tool that takes them: the
# collection (omitted: the default collection; search: every collection), and the ingest tools' source, tags (and
# their limits: the model still enforces them), metadata, chunking and force; response_format; paging.
CollectionArg = Annotated[UserName | None, Field(default=None)]


def said_once(*keywords: str) -> Callable[[dict[str, Any]], None]:
    """A property's schema without the keywords the instructions state for it (the model still enforces them)."""

    def drop(schema: dict[str, Any]) -> None:
        for keyword in keywords:
            schema.pop(keyword, None)

    return drop


TAG_LIST_SCHEMA = WithJsonSchema({"type": "array", "items": {"type": "string"}})
# A synced folder's freshness (ingest/folders.SyncedFolder) named in words: its nested schema cost every tools/list
# 620 bytes, and an agent reads these fields from the answer itself (issue 53: room for two more tools).
SYNCED_FOLDERS_SCHEMA = WithJsonSchema({"type": "array", "items": {"type": "object", "description": (
    "folder, watched, last_synced; last_result and full_result: counts; changed_since; error, error_at; "
    "failing ('file: reason') and failing_total."
)}})  # fmt: skip
TagsArg = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=MAX_TAG_LENGTH)]] | None,
    Field(default=None, max_length=MAX_TAGS),
    TAG_LIST_SCHEMA,
]
TagFilterArg = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=MAX_TAG_LENGTH)]] | None,
    Field(default=None, max_length=MAX_TAGS, description="Only passages carrying every one of these tags."),
    TAG_LIST_SCHEMA,
]
# The values of these two are in the instructions (server.INSTRUCTIONS), with what each does; listing them in every
# tool that takes them cost ~400 bytes of each tools/list. The model still refuses any other value, naming them.
ChunkingArg = Annotated[
    Literal["default", "dense", "sparse"], Field(default="default", json_schema_extra=said_once("default", "enum"))
]
# What 'detailed' adds is named in each output schema's description.
FormatArg = Annotated[
    Literal["concise", "detailed"], Field(default="concise", json_schema_extra=said_once("default", "enum"))
]
SourceArg = Annotated[str | None, Field(default=None, max_length=2048)]
ForceArg = Annotated[bool, Field(default=False, json_schema_extra=said_once("default"))]
# Where a page of a list or a text starts (0: the start); the instructions say how paging goes.
OffsetArg = Annotated[int, Field(default=0, ge=0, json_schema_extra=said_once("default", "minimum"))]
MetadataArg = Annotated[dict[str, Any] | None, Field(default=None)]
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
    """How the ingested thing was named by the caller: each ingest tool fills its own of these IngestOutput fields
    (one output shape for the three tools: shown once in tools/list)."""

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
    status: Literal["indexed", "replaced", "updated", "skipped"] | None = None  # said in the instructions
    collection: str | None = None
    chunks_created: int | None = None
    job_id: str | None = None  # still running: the instructions say to poll get_job_status
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
    # what was ingested, named as the tool names it: ingest_document file_name, ingest_text name, ingest_from_url
    # url and content_type
    file_name: str | None = None
    name: str | None = None
    url: str | None = None
    content_type: str | None = None


class ScoreParts(BaseModel):
    """score = dense (meaning) + keyword (BM25) + phrase parts; ranks from 1, absent: not ranked. phrase: what
    holding the query word for word added (absent: it does not)."""

    dense: float
    keyword: float
    phrase: float | None = None
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
    more: SkipJsonSchema[int | None] = None  # per_document: the document's other matching passages
    # detailed only (named in SearchOutput's description)
    tags: SkipJsonSchema[list[str] | None] = None
    metadata: SkipJsonSchema[dict[str, Any] | None] = None
    file_type: SkipJsonSchema[str | None] = None
    updated: SkipJsonSchema[str | None] = None  # the document's last change (file mtime, page date)
    why: SkipJsonSchema[ScoreParts | None] = None
    regions: SkipJsonSchema[list[PageRegions] | None] = None  # where it lies on its pages (evidence.py)
    units: SkipJsonSchema[list[UnitItem] | None] = None  # the tables and figures it holds
    cited: SkipJsonSchema[list[list[int]] | None] = None  # [start, end] in text of the 1-2 sentences to quote
    # Any format: the document's file now fails (a synced folder's), this is its last good version (issue 48).
    stale: SkipJsonSchema[str | None] = None


class SearchOutput(ToolOutput):
    model_config = ConfigDict(
        json_schema_extra={
            "description": "'detailed' adds searched_chunks, search_time_ms; per result tags, metadata, file_type, "
            "updated (last change), why (score parts, ranks), regions, units, cited (sentences to quote)."
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
    # The index it lives in (lance, milvus-lite, milvus) and its vectors' precision (fp32, int8): in the answer, not
    # in the schema (no tools/list bytes).
    engine: SkipJsonSchema[str | None] = None
    precision: SkipJsonSchema[str | None] = None


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
    synced_folders: Annotated[list[SyncedFolder] | None, SYNCED_FOLDERS_SCHEMA] = None
    engine: SkipJsonSchema[str | None] = None
    precision: SkipJsonSchema[str | None] = None


def render_error(failure: ToolFailure) -> dict[str, Any]:
    body: dict[str, Any] = {"success": False, "error": failure.message}
    if failure.suggestion:
        body["suggestion"] = failure.suggestion
    for key in ("available_collections", "allowed_keys"):
        if key in failure.details:
            body[key] = failure.details[key]
    return body
