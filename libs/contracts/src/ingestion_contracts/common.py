"""Types shared by every service: names, errors, health."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

# Collection, library and vector-store names, as users write them. The gateway maps each to a Milvus name
# (vector_gateway/names.py); names that start with '_' stay reserved for the gateway's own collections.
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,254}$"
# A document id as the gateway derives it (upsert.derive_doc_id) or a caller chose it.
DOC_ID_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
MAX_NAME_LENGTH = 255
NAME_RULE = "1-255 letters, digits, '-', '_' or '.', starting with a letter or digit"
_NAME_RE = re.compile(NAME_PATTERN)

DEFAULT_COLLECTION = "rag_gateway"
MAX_TAGS = 32
MAX_TAG_LENGTH = 64


def check_name(name: str, what: str = "name") -> str:
    """Return ``name`` if it is a valid collection, library or store name, else raise ValueError."""
    if not _NAME_RE.fullmatch(name):
        shown = name if len(name) <= 40 else f"{name[:40]}... ({len(name)} characters)"
        raise ValueError(f"Invalid {what} {shown!r}: use {NAME_RULE} (for example 'legal-docs.2026').")
    return name


def check_collection_name(name: str) -> str:
    return check_name(name, "collection name")


# A tool argument: the pattern is in its JSON schema, and a refusal says what is allowed, with an example.
UserName = Annotated[str, Field(json_schema_extra={"pattern": NAME_PATTERN}), AfterValidator(check_name)]


CollectionName = Annotated[
    str,
    Field(min_length=1, max_length=MAX_NAME_LENGTH, pattern=NAME_PATTERN),
    AfterValidator(check_collection_name),
]
Tag = Annotated[str, Field(min_length=1, max_length=MAX_TAG_LENGTH)]


class WireModel(BaseModel):
    """Base for request/response bodies: unknown fields are refused, not ignored."""

    model_config = ConfigDict(extra="forbid")


class ErrorBody(BaseModel):
    """Every service answers an error with this body (and a matching HTTP status)."""

    error: str = Field(description="What went wrong, in one or two sentences.")
    code: str = Field(description="Stable machine-readable code, e.g. UNSUPPORTED_FORMAT.")
    suggestion: str | None = Field(default=None, description="What to do instead.")
    details: dict[str, object] | None = None
    request_id: str | None = None


MISSING_LISTED = 50  # a "not found" names at most this many collections in its message (details: all)


def collection_missing(name: str, available: list[str]) -> ErrorBody:
    """The one answer for a collection that does not exist, built where the name is resolved: by the gateway
    against its store, by the MCP server's access guard against what the caller may read (``available`` then
    lists only those, so a collection the caller may not read answers exactly like a missing one)."""
    listed = ", ".join(available[:MISSING_LISTED]) if available else "none yet"
    if len(available) > MISSING_LISTED:
        listed += f" and {len(available) - MISSING_LISTED} more"
    return ErrorBody(
        error=f"Collection {name!r} not found. Available collections: {listed}.",  # the plan's words, then the list
        code="COLLECTION_NOT_FOUND",
        suggestion="Use one of the available collections, or index a document into a new one (it is created then).",
        details={"collection": name, "available_collections": available},
    )


class HealthStatus(BaseModel):
    status: Literal["ok", "starting", "unavailable"]
    service: str
    version: str
    checks: dict[str, str] = Field(default_factory=dict)
