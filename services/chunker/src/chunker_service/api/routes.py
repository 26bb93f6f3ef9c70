"""HTTP routes: validate, call the chunking service, answer. No chunking logic here."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from ingestion_contracts import ErrorBody
from ingestion_contracts.chunker import (
    ChunkBatchRequest,
    ChunkBatchResponse,
    ChunkRequest,
    ChunkResponse,
    PresetsResponse,
)
from servicekit import DependencyUnavailable

from ..service import ChunkingService

router = APIRouter(prefix="/v1", tags=["chunking"])

_ERRORS: dict[int | str, dict[str, Any]] = {
    413: {"model": ErrorBody, "description": "Text longer than CHUNKER_MAX_TEXT_CHARS"},
    422: {"model": ErrorBody, "description": "Invalid request (window/preset/overlap, empty text, page spans)"},
    503: {"model": ErrorBody, "description": "Tokenizer not loaded yet"},
}


def get_service(request: Request) -> ChunkingService:
    service = getattr(request.app.state, "chunking", None)
    if service is None:
        raise DependencyUnavailable(
            "The tokenizer is not loaded yet.", suggestion="Retry in a few seconds; /readyz says when it is ready."
        )
    return service


ServiceDep = Annotated[ChunkingService, Depends(get_service)]


def _observe(request: Request, results: list[ChunkResponse]) -> None:
    for result in results:
        request.app.state.metrics.observe_stage("chunk", result.chunking_ms / 1000)


@router.post("/chunk", operation_id="chunk_text", responses=_ERRORS)
async def chunk_text(body: ChunkRequest, service: ServiceDep, request: Request) -> ChunkResponse:
    """Split one text into token windows (Markdown-aware, with heading path and pages)."""
    result = await service.chunk(body)
    _observe(request, [result])
    return result


@router.post("/chunk/batch", operation_id="chunk_batch", responses=_ERRORS)
async def chunk_batch(body: ChunkBatchRequest, service: ServiceDep, request: Request) -> ChunkBatchResponse:
    """Split many texts in one call; results are in the order of the items."""
    results = await service.chunk_batch(body.items)
    _observe(request, results)
    return ChunkBatchResponse(results=results)


@router.get("/presets", operation_id="list_presets", responses={503: _ERRORS[503]})
async def list_presets(service: ServiceDep) -> PresetsResponse:
    """Chunking presets (window and overlap in tokens), the tokenizer and the model's token limit."""
    return service.presets()
