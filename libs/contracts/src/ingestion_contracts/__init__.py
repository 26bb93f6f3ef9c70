"""Wire contracts between the ingestion-mcp services. Depends on pydantic alone."""

from .common import (
    DEFAULT_COLLECTION,
    NAME_PATTERN,
    CollectionName,
    ErrorBody,
    HealthStatus,
    check_collection_name,
)

__all__ = [
    "DEFAULT_COLLECTION",
    "NAME_PATTERN",
    "CollectionName",
    "ErrorBody",
    "HealthStatus",
    "check_collection_name",
]
