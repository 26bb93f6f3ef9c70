"""Outputs of the primary library, job and collection-management tools."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema

from .models import PassageItem, ToolOutput


class DocumentItem(BaseModel):
    doc_id: str
    name: str
    key: str = ""  # the identity: path, URL or text name (said in the instructions)
    source: str
    collection: str
    chunk_count: int
    updated_at: str
    # detailed only (named in DocumentListOutput's description)
    title: SkipJsonSchema[str | None] = None
    file_type: SkipJsonSchema[str | None] = None
    content_hash: SkipJsonSchema[str | None] = None
    tags: SkipJsonSchema[list[str] | None] = None
    metadata: SkipJsonSchema[dict[str, Any] | None] = None
    token_count: SkipJsonSchema[int | None] = None
    last_modified: SkipJsonSchema[str | None] = None
    stale: SkipJsonSchema[str | None] = None  # any format: its synced file now fails (why, since when)


class DocumentListOutput(ToolOutput):
    model_config = ConfigDict(
        json_schema_extra={
            "description": "'detailed' adds to each document title, file_type, content_hash, tags, metadata, "
            "token_count, last_modified."
        }
    )
    documents: list[DocumentItem] | None = None
    total: int | None = None
    offset: int | None = None
    next_offset: int | None = Field(default=None, description="Absent on the last page.")


class DocumentStats(BaseModel):
    """What a document holds, counted over all of it (not only the page of content returned)."""

    characters: int
    words: int
    estimated_tokens: int
    chunks: int
    pages: int | None = None  # a PDF's or slides' pages; absent: the format has none
    sections: int  # headed sections (text before the first heading is not one)
    headings: dict[str, int]  # level ("1".."6", or "?" where the level is not known) -> how many


class DocumentOutput(ToolOutput):
    model_config = ConfigDict(
        json_schema_extra={
            "description": "'detailed' adds stats: characters, words, estimated_tokens, chunks, pages, sections, "
            "headings per level."
        }
    )
    doc_id: str | None = None
    name: str | None = None
    source: str | None = None
    collection: str | None = None
    title: str | None = None
    content: str | None = None
    chunk_count: int | None = None
    truncated: bool | None = None
    next_start_char: int | None = None
    metadata: dict[str, Any] | None = None
    stats: SkipJsonSchema[DocumentStats | None] = None  # detailed only


class DeleteOutput(ToolOutput):
    doc_id: str | None = None
    collection: str | None = None
    deleted_chunks: int | None = None


class SimilarOutput(ToolOutput):
    doc_id: str | None = None
    name: str | None = None
    similar: list[PassageItem] | None = None


class RunningJob(BaseModel):
    job_id: str
    type: str
    description: str
    status: Literal["running", "completed", "failed", "cancelled"]
    progress: float
    current_step: str
    start_time: str
    step_ms: dict[str, float] | None = None


class JobInfo(RunningJob):
    end_time: str | None = None
    result: dict[str, Any] | None = None
    error: str | None = None
    suggestion: str | None = None


class JobOutput(ToolOutput):
    job: JobInfo | None = None


class JobStatusOutput(JobOutput):
    # a failed or cancelled job: success=false, with the job's error and what to do
    error: str | None = None
    suggestion: str | None = None


class JobListOutput(ToolOutput):
    jobs: list[JobInfo] | None = None  # running ones: no end, result or error yet


class BatchItemResult(BaseModel):
    item: str
    success: bool
    status: str | None = None
    chunks_created: int | None = None
    error: str | None = None


class BatchOutput(ToolOutput):
    job_id: str | None = None
    collection: str | None = None
    results: list[BatchItemResult] | None = None
    succeeded: int | None = None
    failed: int | None = None


class CreatedCollectionOutput(ToolOutput):
    name: str | None = None
    document_count: int | None = None
    chunk_count: int | None = None


class DeletedCollectionOutput(ToolOutput):
    name: str | None = None
    deleted_documents: int | None = None
    deleted_chunks: int | None = None
