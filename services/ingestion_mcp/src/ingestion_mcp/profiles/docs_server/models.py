"""Inputs, outputs and the error shape of the docs_server profile (docs/specs/docs-server-api.md).

Keys are camelCase as in the spec. Every error, synchronous or in a job, uses one of the spec's codes:
INVALID_PATH, UNSUPPORTED_FORMAT, INDEX_NOT_FOUND, INVALID_REPO_URL, REPOMIX_FAILED, REPO_TOO_LARGE,
INVALID_URL, DOWNLOAD_FAILED, FILE_TOO_LARGE, PROCESSING_FAILED; plus JOB_NOT_FOUND (an unknown jobId)
and INVALID_INPUT (an argument the schema cannot refuse, e.g. a blank query).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, field_validator

from ...errors import ToolFailure
from ...sources import SourceError

SPEC_CODES = frozenset(
    {
        "INVALID_PATH", "UNSUPPORTED_FORMAT", "INDEX_NOT_FOUND", "INVALID_REPO_URL", "REPOMIX_FAILED",
        "REPO_TOO_LARGE", "INVALID_URL", "DOWNLOAD_FAILED", "FILE_TOO_LARGE", "PROCESSING_FAILED",
    }
)  # fmt: skip
EXTRA_CODES = frozenset({"JOB_NOT_FOUND", "INVALID_INPUT"})
# Codes of the layers below, translated to the spec's nearest code.
CODE_MAP = {
    "URL_BLOCKED": "INVALID_URL",
    "TLS_ERROR": "DOWNLOAD_FAILED",
    "TIMEOUT": "DOWNLOAD_FAILED",
    "NO_TEXT": "UNSUPPORTED_FORMAT",
    "EMPTY": "UNSUPPORTED_FORMAT",
    "COLLECTION_NOT_FOUND": "INDEX_NOT_FOUND",
}
JobType = Literal["fetch_repo", "fetch_file"]


def spec_code(code: str) -> str:
    if code in SPEC_CODES or code in EXTRA_CODES:
        return code
    return CODE_MAP.get(code, "PROCESSING_FAILED")


def as_failure(exc: BaseException) -> BaseException:
    """A source fetcher's error as a ToolFailure with the same code; anything else unchanged."""
    if isinstance(exc, SourceError):
        return ToolFailure(exc.message, exc.suggestion, code=exc.code, status=exc.status)
    return exc


class ErrorDetail(BaseModel):
    code: str = Field(description="One of the spec's error codes, e.g. INDEX_NOT_FOUND.")
    message: str
    suggestion: str | None = None


def render_error(failure: ToolFailure) -> dict[str, Any]:
    detail = ErrorDetail(code=spec_code(failure.code), message=failure.message, suggestion=failure.suggestion)
    return {"error": detail.model_dump(exclude_none=True)}


def render_job_error(failure: ToolFailure) -> dict[str, Any]:
    """get_job_status's own failure in the shape of a failed Job (`error` a string, its code in `errorCode`): one
    schema then covers both answers, where `error` as a string or an object needs an anyOf strict clients refuse."""
    message = " ".join(part for part in (failure.message, failure.suggestion) if part)
    return {"error": message, "errorCode": spec_code(failure.code)}


# -- inputs -------------------------------------------------------------------------------
class SearchOptions(BaseModel):
    limit: int = Field(default=10, ge=1, le=100, description="Most chunks to return (1-100).")
    minScore: float = Field(
        default=0.7, ge=0.0, le=1.0, description="Smallest relevance to keep (0-1; 0.7 or more: relevant)."
    )
    includeMetadata: bool = Field(default=True, description="Add fileSize, lastModified, chunkOffset, tokenCount.")


DEFAULT_INCLUDE = ["*.txt", "*.md", "*.json", "*.rst", "*.yaml", "*.yml"]
DEFAULT_EXCLUDE = ["**/node_modules/**", "**/.git/**"]


class RepoOptions(BaseModel):
    includePatterns: list[Annotated[str, Field(min_length=1, max_length=256)]] = Field(
        default_factory=lambda: list(DEFAULT_INCLUDE), max_length=64, description="Glob patterns of files to keep."
    )
    excludePatterns: list[Annotated[str, Field(min_length=1, max_length=256)]] = Field(
        default_factory=lambda: list(DEFAULT_EXCLUDE), max_length=64, description="Glob patterns of files to skip."
    )
    maxFiles: int = Field(default=1000, ge=1, le=10000, description="Refuse repositories with more matching files.")
    outputStyle: Literal["markdown"] = Field(default="markdown", description="Fixed: the repository becomes Markdown.")
    removeComments: bool = Field(default=False, description="Not supported: comments are always kept.")
    showLineNumbers: bool = Field(default=True, description="Prefix each line of code with its number.")


class FileOptions(BaseModel):
    overwrite: bool = Field(default=True, description="Replace a file of the same name in docFolder.")
    indexAfterSave: bool = Field(default=True, description="Chunk, embed and index the file once saved.")
    # More than 0, as before, but checked here rather than listed as exclusiveMinimum: Gemini refuses that keyword
    # (and with it every request of the session); the spec itself says only "number (default: 10)".
    maxFileSizeMB: float = Field(
        default=10, le=1024, description="Refuse downloads larger than this (MB, more than 0)."
    )

    @field_validator("maxFileSizeMB")
    @classmethod
    def _positive(cls, value: float) -> float:
        if not value > 0:
            raise ValueError("maxFileSizeMB must be more than 0 (megabytes); leave it out for the default, 10")
        return value


# -- outputs ------------------------------------------------------------------------------
class ChunkMetadata(BaseModel):
    fileSize: int = Field(description="Size of the indexed file in bytes (0 when unknown).")
    lastModified: str = Field(description="ISO 8601 time the file was last modified.")
    chunkOffset: int = Field(description="Character offset of the chunk in the file's Markdown.")
    tokenCount: int


class DocumentChunk(BaseModel):
    id: str
    filePath: str
    chunkIndex: int
    content: str
    score: float | None = Field(
        default=None, description="Relevance to the query (0-1, one scale for every query; 0.7 or more: relevant)."
    )
    metadata: ChunkMetadata | None = None


class SearchDocumentsOutput(BaseModel):
    """The spec's array of chunks, best first ([] when none scores options.minScore). The text block is that
    JSON array; structuredContent must be an object in MCP, so it wraps the array as {"result": [...]}, as the
    MCP SDK does for a tool returning a list. A failed call answers {"error": {...}} instead."""

    result: list[DocumentChunk] | None = None
    error: ErrorDetail | None = None


class FileDetailsOutput(BaseModel):
    filePath: str | None = None
    title: str | None = None
    totalChunks: int | None = None
    content: str | None = Field(default=None, description="The whole file as Markdown, or the target chunk.")
    chunkIndex: int | None = None
    contextSize: int | None = None
    chunks: list[DocumentChunk] | None = Field(default=None, description="Target chunk with its neighbours.")
    metadata: dict[str, Any] | None = None
    truncated: bool | None = None
    message: str | None = None
    error: ErrorDetail | None = None


class RemoveFileOutput(BaseModel):
    success: bool | None = None
    message: str | None = None
    filePath: str | None = None
    chunksDeleted: int | None = None
    error: ErrorDetail | None = None


class JobStarted(BaseModel):
    jobId: str | None = None
    type: JobType | None = None
    status: Literal["running", "completed", "failed", "cancelled"] | None = None
    message: str | None = None
    error: ErrorDetail | None = None


class JobView(BaseModel):
    id: str
    type: JobType
    status: Literal["running", "completed", "failed", "cancelled"]
    progress: float = Field(description="0-100, never decreases.")
    currentStep: str = Field(description="downloading, converting, chunking, embedding, storing; done or failed.")
    startTime: str
    endTime: str | None = None
    result: dict[str, Any] | None = None
    error: str | None = None
    errorCode: str | None = Field(default=None, description="The spec error code of a failed job.")


class JobStatusOutput(BaseModel):
    """The Job object itself (spec's `interface Job`), or an error."""

    id: str | None = None
    type: JobType | None = None
    status: Literal["running", "completed", "failed", "cancelled"] | None = None
    progress: float | None = None
    currentStep: str | None = None
    startTime: str | None = None
    endTime: str | None = None
    result: dict[str, Any] | None = None
    error: str | None = Field(default=None, description="A failed job's message, or why the call failed.")
    errorCode: str | None = None


class ActiveJobsOutput(BaseModel):
    """The spec's array of running jobs: the text block is the JSON array, structuredContent {"result": [...]}.
    A failed call answers {"error": {...}} instead."""

    result: list[JobView] | None = None
    error: ErrorDetail | None = None
