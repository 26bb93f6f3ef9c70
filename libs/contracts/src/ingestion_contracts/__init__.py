"""Wire contracts between the ingestion-mcp services. Depends on pydantic alone."""

from .common import (
    COLLECTION_NAME_PATTERN,
    DEFAULT_COLLECTION,
    CollectionName,
    ErrorBody,
    HealthStatus,
    check_collection_name,
)

__all__ = [
    "COLLECTION_NAME_PATTERN",
    "DEFAULT_COLLECTION",
    "CollectionName",
    "ErrorBody",
    "HealthStatus",
    "check_collection_name",
]
