"""Wire models of the gateway's raw vector stores: caller-supplied embeddings of any dimension, by id."""

from __future__ import annotations

import re
import unicodedata
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator

from .common import WireModel
from .gateway import FilterValue, Metadata, check_metadata

# Namespaces never contain '/': a vector's key is "<namespace>/<id>".
NAMESPACE_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9_.:-]{0,127}$"
METADATA_FILTER_KEY_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,63}$"
DEFAULT_VECTOR_STORE = "default"
MAX_DIMENSION = 32_768  # Milvus' limit for a FLOAT_VECTOR field
MAX_VECTOR_ID = 512
MAX_K = 1000

VectorMetric = Literal["cosine", "dot", "euclidean"]
VectorAddStatus = Literal["added", "updated"]
FiniteFloat = Annotated[float, Field(allow_inf_nan=False)]
Embedding = Annotated[list[FiniteFloat], Field(min_length=1, max_length=MAX_DIMENSION)]
Namespace = Annotated[str | None, Field(default=None, pattern=NAMESPACE_PATTERN)]
_FILTER_KEY_RE = re.compile(METADATA_FILTER_KEY_PATTERN)


def check_vector_id(value: str) -> str:
    """Ids are free text, but no control characters (they could not be escaped in a filter)."""
    if any(unicodedata.category(char) in ("Cc", "Cs") for char in value):
        raise ValueError("A vector id must be printable text (no control characters).")
    return value


VectorId = Annotated[str, Field(min_length=1, max_length=MAX_VECTOR_ID)]


class VectorAddRequest(WireModel):
    id: VectorId
    embedding: Embedding
    metadata: Metadata = Field(default_factory=dict)
    namespace: Namespace
    metric: VectorMetric = Field(
        default="cosine", description="Used only when this add creates the store; a store keeps its first metric."
    )

    @field_validator("id")
    @classmethod
    def _printable_id(cls, value: str) -> str:
        return check_vector_id(value)

    @field_validator("metadata")
    @classmethod
    def _bounded_metadata(cls, value: dict[str, Any]) -> dict[str, Any]:
        return check_metadata(value)


class VectorAddResponse(WireModel):
    status: VectorAddStatus
    id: str
    store: str
    namespace: str | None
    dimension: int
    metric: VectorMetric


class VectorSearchRequest(WireModel):
    query: Embedding
    k: int = Field(default=10, ge=1, le=MAX_K)
    namespace: Namespace = Field(default=None, description="None searches every namespace of the store.")
    metadata_filter: dict[str, FilterValue] = Field(
        default_factory=dict, max_length=16, description="Metadata keys that must equal these values (AND)."
    )

    @field_validator("metadata_filter")
    @classmethod
    def _identifier_keys(cls, value: dict[str, FilterValue]) -> dict[str, FilterValue]:
        if not all(_FILTER_KEY_RE.fullmatch(key) for key in value):
            raise ValueError("metadata_filter keys are 1-64 letters, digits or underscores, not starting with a digit.")
        return value


class VectorHit(WireModel):
    id: str
    score: float = Field(description="cosine similarity, dot product (higher first), or euclidean distance (lower).")
    metadata: dict[str, Any]
    namespace: str | None


class VectorSearchResponse(WireModel):
    results: list[VectorHit]
    total_searched: int = Field(description="Vectors in the searched namespace that pass the metadata filter.")
    metric: VectorMetric | None = Field(description="The store's metric; None when the store does not exist.")


class VectorDeleteResponse(WireModel):
    deleted: bool
    id: str


class VectorStoreInfo(WireModel):
    store: str
    namespace: str | None
    count: int = Field(description="Vectors in the store (or namespace); 0 when the store does not exist.")
    dimension: int | None = Field(description="Fixed by the store's first vector; None before it exists.")
    metric: VectorMetric | None
