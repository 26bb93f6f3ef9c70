"""Types shared by every service: names, errors, health."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

# Milvus allows letters, digits and underscores, starting with a letter or underscore.
# Names that start with an underscore are reserved for the gateway's own bookkeeping.
COLLECTION_NAME_PATTERN = r"^[A-Za-z][A-Za-z0-9_]{0,62}$"
_COLLECTION_RE = re.compile(COLLECTION_NAME_PATTERN)

DEFAULT_COLLECTION = "rag_gateway"
MAX_TAGS = 32
MAX_TAG_LENGTH = 64


def check_collection_name(name: str) -> str:
    """Return ``name`` if it is a valid collection name, else raise ValueError."""
    if not _COLLECTION_RE.fullmatch(name):
        raise ValueError(
            f"Invalid collection name {name!r}: use 1-63 letters, digits or underscores, "
            "starting with a letter (for example 'legal_docs')."
        )
    return name


CollectionName = Annotated[
    str,
    Field(min_length=1, max_length=63, pattern=COLLECTION_NAME_PATTERN),
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


class HealthStatus(BaseModel):
    status: Literal["ok", "starting", "unavailable"]
    service: str
    version: str
    checks: dict[str, str] = Field(default_factory=dict)
