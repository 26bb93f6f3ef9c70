"""The gateway's domain errors, each with what went wrong and what to do instead."""

from __future__ import annotations

from ingestion_contracts.common import collection_missing
from servicekit import Conflict, NotFound, Unprocessable

from .int8 import precision_of, vectors_of


def collection_not_found(name: str, available: list[str]) -> NotFound:
    body = collection_missing(name, available)
    return NotFound(body.error, code=body.code, suggestion=body.suggestion, details=body.details)


def collection_exists(name: str) -> Conflict:
    return Conflict(
        f"Collection {name!r} already exists.",
        code="COLLECTION_EXISTS",
        suggestion="Use it as it is, or delete it first to start empty.",
    )


def document_not_found(collection: str, doc_id: str) -> NotFound:
    return NotFound(
        f"Document {doc_id!r} is not in collection {collection!r}.",
        code="DOCUMENT_NOT_FOUND",
        suggestion="List the collection's documents (GET /v1/collections/{collection}/documents) for valid ids.",
        details={"collection": collection, "doc_id": doc_id},
    )


def embedding_mismatch(collection: str, stored: tuple[int, str], model: str, dimension: int) -> Conflict:
    return Conflict(
        f"Collection {collection!r} holds {stored[0]}-d vectors of model {stored[1]!r}, but the gateway runs "
        f"{model!r} ({dimension}-d); its vectors cannot be compared.",
        code="EMBEDDING_MISMATCH",
        suggestion="Index into a new collection, or run the gateway with the collection's model.",
        details={"collection_model": stored[1], "collection_dimension": stored[0], "gateway_model": model},
    )


def precision_mismatch(collection: str, stored: str, model: str) -> Conflict:
    """int8 and fp32 vectors of one model, or two int8 schemes' vectors, are not the same vectors (int8.py): never
    searched or mixed unknowingly."""
    made, runs = vectors_of(stored), vectors_of(model)
    what = "fp32" if made == "fp32" else f"int8 ({made} scheme)"
    if precision_of(stored) == precision_of(model):  # two int8 schemes: the setting cannot tell them apart
        suggestion = ("Start the gateway on this index with VECTOR_GATEWAY_EMBEDDING_PRECISION=auto or int8: it "
                      "takes the scheme the index's collections hold when they agree. Otherwise re-ingest this "
                      "collection into a new one.")  # fmt: skip
    else:
        suggestion = (f"Run the gateway with VECTOR_GATEWAY_EMBEDDING_PRECISION={precision_of(stored)} (auto "
                      "follows an index whose collections agree), or re-ingest into a new collection.")  # fmt: skip
    return Conflict(
        f"Collection {collection!r} holds {what} vectors ({stored!r}), but this gateway embeds with {runs} "
        f"({model!r}); queries and new chunks would not be comparable with them.",
        code="EMBEDDING_MISMATCH",
        suggestion=suggestion,
        details={"collection_model": stored, "gateway_model": model},
    )


def invalid(message: str, suggestion: str, **details: object) -> Unprocessable:
    return Unprocessable(message, code="INVALID_REQUEST", suggestion=suggestion, details=details or None)


def dimension_mismatch(store: str, stored: int, given: int, what: str) -> Conflict:
    return Conflict(
        f"Vector store {store!r} holds {stored}-dimensional vectors, but the {what} has {given} dimensions.",
        code="DIMENSION_MISMATCH",
        suggestion=f"Send {stored}-dimensional vectors (the store's dimension is fixed by its first vector), "
        "or use another store for this embedding model.",
        details={"store": store, "store_dimension": stored, "given_dimension": given},
    )


def commit_deadline_passed(committed: list[str]) -> Conflict:
    before = (
        f"; {len(committed)} document(s) of this batch were committed before it (details.committed), "
        "the others were not written"
        if committed
        else "; nothing was written"
    )
    return Conflict(
        f"The commit deadline (commit_within_ms) passed before this write could commit{before}.",
        code="COMMIT_DEADLINE_PASSED",
        suggestion="The caller's job lease ran out: another worker may run this job now. Leave it to that one, or "
        "submit the write again (with the same order) and a new deadline.",
        details={"committed": committed} if committed else None,
    )
