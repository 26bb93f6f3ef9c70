"""Outputs of the primary library, job and collection-management tools."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from .primary_models import SearchResultItem, ToolOutput


class DocumentItem(BaseModel):
    doc_id: str
    name: str = Field(description="File name or title, for people.")
    key: str = Field(default="", description="The document's identity: absolute path, URL or text name.")
    source: str = Field(description="Source label given at ingest (defaults to the path).")
    collection: str
    chunk_count: int
    updated_at: str
    # detailed only
    title: str | None = None
    file_type: str | None = None
    content_hash: str | None = None
    tags: list[str] | None = None
    metadata: dict[str, Any] | None = None
    token_count: int | None = None
    last_modified: str | None = None


class DocumentListOutput(ToolOutput):
    documents: list[DocumentItem] | None = None
    total: int | None = None
    offset: int | None = None
    next_offset: int | None = Field(default=None, description="Pass as offset for the next page; absent at the end.")


class DocumentOutput(ToolOutput):
    doc_id: str | None = None
    name: str | None = None
    source: str | None = None
    collection: str | None = None
    title: str | None = None
    content: str | None = None
    chunk_count: int | None = None
    truncated: bool | None = None
    metadata: dict[str, Any] | None = None


class DeleteOutput(ToolOutput):
    doc_id: str | None = None
    collection: str | None = None
    deleted_chunks: int | None = None
    deleted_documents: int | None = None


class SimilarOutput(ToolOutput):
    doc_id: str | None = None
    name: str | None = None
    similar: list[SearchResultItem] | None = None


class JobInfo(BaseModel):
    job_id: str
    type: str
    description: str
    status: Literal["running", "completed", "failed", "cancelled"]
    progress: float = Field(description="0-100, never decreases.")
    current_step: str
    start_time: str
    end_time: str | None = None
    step_ms: dict[str, float] | None = None
    result: dict[str, Any] | None = None
    error: str | None = None
    suggestion: str | None = None


class JobOutput(ToolOutput):
    job: JobInfo | None = None


class JobListOutput(ToolOutput):
    jobs: list[JobInfo] | None = None


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


class CollectionOutput(ToolOutput):
    name: str | None = None
    document_count: int | None = None
    chunk_count: int | None = None
    deleted_documents: int | None = None
    deleted_chunks: int | None = None
