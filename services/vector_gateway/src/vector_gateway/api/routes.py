"""HTTP routes: validate, call the gateway service, answer. No storage or search logic here."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query, Request, Response, status
from ingestion_contracts import NAME_PATTERN, ErrorBody
from ingestion_contracts.common import DOC_ID_PATTERN
from ingestion_contracts.gateway import (
    MAX_QUERY_CHARS,
    CollectionInfo,
    CollectionList,
    CollectionNames,
    CreateCollectionRequest,
    DeleteCollectionResponse,
    DeleteDocumentResponse,
    DocumentChunks,
    DocumentContent,
    DocumentList,
    DocumentStamps,
    DocumentStructure,
    EmbeddingModelInfo,
    EmbedPassagesRequest,
    EmbedRequest,
    EmbedResponse,
    FindDocumentsRequest,
    OriginalKept,
    RelabelRequest,
    SearchRequest,
    SearchResponse,
    UpsertBatchRequest,
    UpsertBatchResponse,
    UpsertDocumentRequest,
    UpsertDocumentResponse,
    WriteOrder,
)
from servicekit import DependencyUnavailable, PayloadTooLarge, Unprocessable

from ..documents import DocumentOrder
from ..model_info import describe
from ..page_images import ImageFormat
from ..service import GatewayService

router = APIRouter(prefix="/v1")


def started(request: Request, attribute: str) -> Any:
    """What the app's start-up put in ``app.state``; 503 + Retry-After until it is there."""
    value = getattr(request.app.state, attribute, None)
    if value is None:
        raise DependencyUnavailable("The gateway is starting.", suggestion="Retry in a few seconds.")
    return value


def get_service(request: Request) -> GatewayService:
    return started(request, "gateway")


ServiceDep = Annotated[GatewayService, Depends(get_service)]
CollectionPath = Annotated[
    str,
    Path(min_length=1, max_length=255, pattern=NAME_PATTERN, description="Collection name, e.g. legal-docs.2026"),
]
DocIdPath = Annotated[str, Path(pattern=DOC_ID_PATTERN, description="Document id")]


def _errors(*codes: int) -> dict[int | str, dict[str, object]]:
    described = {
        404: "Collection or document not found (details list the available collections); or a document's original is "
        "not kept (ORIGINAL_NOT_KEPT), or its passage not found",
        409: "Conflict (collection exists, built with another embedding model, a write conflict, or the commit "
        "deadline passed)",
        422: "Invalid request",
        503: "Embedding model loading or Milvus unreachable (see Retry-After)",
        413: "The original is larger than the gateway takes",
        507: "The originals folder is full, or keeps nothing (VECTOR_GATEWAY_ORIGINALS_MAX_MB)",
    }
    return {code: {"model": ErrorBody, "description": described[code]} for code in codes}


@router.get("/collections", operation_id="list_collections", tags=["collections"], responses=_errors(503))
async def list_collections(service: ServiceDep) -> CollectionList:
    """List collections with document and chunk counts."""
    return await service.list_collections()


@router.get("/collection-names", operation_id="list_collection_names", tags=["collections"], responses=_errors(503))
async def list_collection_names(service: ServiceDep) -> CollectionNames:
    """The collections' names only: what a picker or an access check needs, without counting their rows."""
    return await service.collection_names()


@router.post(
    "/collections",
    operation_id="create_collection",
    tags=["collections"],
    status_code=status.HTTP_201_CREATED,
    responses=_errors(409, 422, 503),
)
async def create_collection(body: CreateCollectionRequest, service: ServiceDep) -> CollectionInfo:
    """Create an empty collection (upserts also create missing collections)."""
    return await service.create_collection(body.name)


@router.get(
    "/collections/{collection}", operation_id="get_collection", tags=["collections"], responses=_errors(404, 503)
)
async def get_collection(collection: CollectionPath, service: ServiceDep) -> CollectionInfo:
    """Counts and embedding model of one collection."""
    return await service.get_collection(collection)


@router.delete(
    "/collections/{collection}", operation_id="delete_collection", tags=["collections"], responses=_errors(404, 503)
)
async def delete_collection(collection: CollectionPath, service: ServiceDep) -> DeleteCollectionResponse:
    """Delete a collection with all its documents and chunks."""
    return await service.delete_collection(collection)


@router.post(
    "/collections/{collection}/documents",
    operation_id="upsert_document",
    tags=["documents"],
    responses=_errors(409, 422, 503),
)
async def upsert_document(
    collection: CollectionPath, body: UpsertDocumentRequest, service: ServiceDep
) -> UpsertDocumentResponse:
    """Embed and store one document's chunks: indexed, replaced, or skipped when its hash is unchanged."""
    results, _ = await service.upsert(collection, [body])
    return results[0]


@router.post(
    "/collections/{collection}/documents/batch",
    operation_id="upsert_documents",
    tags=["documents"],
    responses=_errors(409, 422, 503),
)
async def upsert_documents(
    collection: CollectionPath, body: UpsertBatchRequest, service: ServiceDep
) -> UpsertBatchResponse:
    """Upsert many documents in one pass (one embedding pass, one insert, one flush)."""
    results, timings = await service.upsert(collection, body.documents, commit_within_ms=body.commit_within_ms)
    return UpsertBatchResponse(results=results, timings=timings)


@router.post("/write-order", operation_id="take_write_order", tags=["documents"], responses=_errors(503))
async def take_write_order(service: ServiceDep) -> WriteOrder:
    """A write order for a write submitted now; send it as the document's `order` (the larger order is kept)."""
    return await service.take_order()


@router.get(
    "/collections/{collection}/documents",
    operation_id="list_documents",
    tags=["documents"],
    responses=_errors(404, 503),
)
async def list_documents(
    collection: CollectionPath,
    service: ServiceDep,
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 20,
    source: Annotated[str | None, Query(min_length=1, max_length=2048, description="Exact source")] = None,
    order: Annotated[DocumentOrder, Query(description="updated = newest first; source = A→Z")] = "updated",
    key: Annotated[
        str | None, Query(min_length=1, max_length=2048, description="Exact identity: the document with this key")
    ] = None,
) -> DocumentList:
    """Page through a collection's documents, or find the one with a key."""
    return await service.list_documents(collection, offset=offset, limit=limit, source=source, order=order, key=key)


@router.get(
    "/collections/{collection}/document-stamps",
    operation_id="document_stamps",
    tags=["documents"],
    responses=_errors(404, 503),
)
async def document_stamps(
    collection: CollectionPath,
    service: ServiceDep,
    prefix: Annotated[str, Query(max_length=4096, description="Keys that start with this (all: empty)")] = "",
    meta: Annotated[list[str], Query(max_length=20, description="Metadata keys to include")] = [],  # noqa: B006 - FastAPI copies it
) -> DocumentStamps:
    """Key, doc_id, content hash and the named metadata of every document under a key prefix, in one read (a
    folder sync compares a whole folder with these)."""
    return await service.document_stamps(collection, prefix, meta)


@router.post(
    "/collections/{collection}/documents/find",
    operation_id="find_documents",
    tags=["documents"],
    responses=_errors(404, 422, 503),
)
async def find_documents(collection: CollectionPath, body: FindDocumentsRequest, service: ServiceDep) -> DocumentList:
    """The stored documents with these keys (identities), for dedup before any work; missing keys are absent."""
    return await service.find_documents(collection, body.keys)


@router.post(
    "/collections/{collection}/documents/{doc_id}/labels",
    operation_id="relabel_document",
    tags=["documents"],
    responses=_errors(404, 422, 503),
)
async def relabel_document(
    collection: CollectionPath, doc_id: DocIdPath, body: RelabelRequest, service: ServiceDep
) -> UpsertDocumentResponse:
    """New source, title, tags or metadata for a stored document, without re-embedding: updated or skipped."""
    return await service.relabel(collection, doc_id, body)


@router.get(
    "/collections/{collection}/documents/{doc_id}",
    operation_id="get_document",
    tags=["documents"],
    responses=_errors(404, 503),
)
async def get_document(collection: CollectionPath, doc_id: DocIdPath, service: ServiceDep) -> DocumentContent:
    """A document's Markdown, rebuilt from its chunks with overlaps removed."""
    return await service.get_document(collection, doc_id)


@router.get(
    "/collections/{collection}/documents/{doc_id}/structure",
    operation_id="get_document_structure",
    tags=["documents"],
    responses=_errors(404, 503),
)
async def get_document_structure(
    collection: CollectionPath, doc_id: DocIdPath, service: ServiceDep
) -> DocumentStructure:
    """A document's Markdown (as get_document) with its sections (heading path and levels, pages, offsets)
    and where each page begins: what an outline, a section or a page range is read from."""
    return await service.get_document_structure(collection, doc_id)


@router.get(
    "/collections/{collection}/documents/{doc_id}/chunks",
    operation_id="get_document_chunks",
    tags=["documents"],
    responses=_errors(404, 422, 503),
)
async def get_document_chunks(
    collection: CollectionPath,
    doc_id: DocIdPath,
    service: ServiceDep,
    start: Annotated[int, Query(ge=0, description="First chunk index (inclusive)")] = 0,
    end: Annotated[int | None, Query(ge=0, description="Last chunk index (inclusive); default: the last")] = None,
) -> DocumentChunks:
    """Chunks start..end of a document, in order (context around a search hit). Scores are 0."""
    return await service.get_document_chunks(collection, doc_id, start, end)


@router.delete(
    "/collections/{collection}/documents/{doc_id}",
    operation_id="delete_document",
    tags=["documents"],
    responses=_errors(404, 503),
)
async def delete_document(collection: CollectionPath, doc_id: DocIdPath, service: ServiceDep) -> DeleteDocumentResponse:
    """Delete one document and its chunks."""
    return await service.delete_document(collection, doc_id)


@router.post("/search", operation_id="search", tags=["search"], responses=_errors(404, 409, 422, 503))
async def search(body: SearchRequest, service: ServiceDep) -> SearchResponse:
    """Hybrid (BM25 + dense, fused), semantic or keyword search over one, several or all collections."""
    return await service.search(body)


@router.post("/embed/passages", operation_id="embed_passages", tags=["documents"], responses=_errors(422, 503))
async def embed_passages(body: EmbedPassagesRequest, service: ServiceDep) -> EmbedResponse:
    """Embed a document's chunks as an upsert would (title and headings in front); send the vectors with it."""
    return await service.embed_passages(body)


@router.get("/embed/model", operation_id="embedding_model", tags=["search"])
async def embedding_model(request: Request) -> EmbeddingModelInfo:
    """The model the gateway embeds with and its dimension, without waiting for (or causing) its load; its
    precision once it is loaded."""
    info = describe(started(request, "settings"))
    service = getattr(request.app.state, "gateway", None)
    loaded = service.embedders.loaded() if service is not None else None
    if loaded is not None:
        info.precision = getattr(loaded, "precision", "fp32")
    return info


@router.post("/embed", operation_id="embed", tags=["search"], responses=_errors(422, 503))
async def embed(body: EmbedRequest, service: ServiceDep) -> EmbedResponse:
    """Embed texts with the gateway's model (normalized vectors; cosine = inner product)."""
    return await service.embed(body)


MAX_ORIGINAL_BYTES = 512 * 2**20  # the docling service converts at most DOCLING_MAX_UPLOAD_MB (100 by default)
ContentHashPath = Annotated[str, Path(pattern=r"^[0-9a-f]{64}$", description="sha256 of the original's bytes")]


@router.put(
    "/collections/{collection}/originals/{content_hash}",
    operation_id="keep_original",
    tags=["pages"],
    responses=_errors(413, 422, 507),
)
async def keep_original(
    collection: CollectionPath, content_hash: ContentHashPath, request: Request, service: ServiceDep
) -> OriginalKept:
    """Keep the original (PDF, image) a document of the collection is converted from, so that its pages can be shown
    (GET .../pages/{page}/image). Sent before the document is written; it goes when no document names it."""
    declared = int(request.headers.get("content-length") or 0)
    if declared > MAX_ORIGINAL_BYTES:
        raise PayloadTooLarge(
            f"The original is {declared / 2**20:.0f} MiB; the gateway keeps at most {MAX_ORIGINAL_BYTES // 2**20} MiB.",
            code="ORIGINAL_TOO_LARGE",
            suggestion="Split the document; its text is indexed either way.",
        )
    data = await request.body()
    kept = await service.keep_original(collection, content_hash, data)
    return OriginalKept(content_hash=content_hash, kept=kept, size_bytes=len(data))


def _crop(value: str | None) -> tuple[float, float, float, float] | None:
    if value is None:
        return None
    try:
        x0, top, x1, bottom = (float(part) for part in value.split(","))
    except ValueError:
        raise Unprocessable(
            f"crop={value[:60]!r} is not four numbers.",
            code="INVALID_REQUEST",
            suggestion="Give crop as x0,top,x1,bottom in points (a figure's box).",
        ) from None
    return (x0, top, x1, bottom)


@router.get(
    "/collections/{collection}/documents/{doc_id}/pages/{page}/image",
    operation_id="page_image",
    tags=["pages"],
    responses={**_errors(404, 422, 503), 200: {"content": {"image/png": {}, "image/webp": {}}}},
    response_class=Response,
)
async def page_image(
    collection: CollectionPath,
    doc_id: DocIdPath,
    page: Annotated[int, Path(ge=1, le=1_000_000)],
    service: ServiceDep,
    chunk: Annotated[int | None, Query(ge=0, description="Mark this passage's boxes (its chunk_index)")] = None,
    crop: Annotated[str | None, Query(max_length=100, description="x0,top,x1,bottom in points: this part only")] = None,
    format: Annotated[ImageFormat, Query(description="png (a palette PNG, or WebP, when too large) or webp")] = "png",
    query: Annotated[
        str | None,
        Query(max_length=MAX_QUERY_CHARS, description="A search's query: the passage's cited sentences marked apart"),
    ] = None,
) -> Response:
    """A page of a PDF or image document drawn from its kept original (long side at most 1,568 px, at most 1 MB),
    with a passage's boxes marked (given a query, the lines of the sentences a search cites for it in full, the rest
    lighter). Headers: X-Page-Size (points), X-Marked (boxes drawn on this page), X-Cited (of them, cited lines),
    X-Cited-Box (around them, points), X-Passage-Pages (pages the passage has boxes on), X-Render-Ms."""
    shown = await service.show_page(collection, doc_id, page, chunk=chunk, crop=_crop(crop), fmt=format, query=query)
    image = shown.image
    headers = {
        "X-Page-Size": f"{image.page_width:g},{image.page_height:g}",
        "X-Marked": str(shown.marked),
        "X-Cited": str(len(shown.cited)),
        "X-Passage-Pages": ",".join(map(str, shown.passage_pages)),
        "X-Render-Ms": f"{image.render_ms:g}",
        "Cache-Control": "no-store",
    }
    if shown.cited_box:  # where the cited lines lie together: a viewer scrolls there
        headers["X-Cited-Box"] = ",".join(f"{v:g}" for v in shown.cited_box)
    return Response(content=image.data, media_type=image.media_type, headers=headers)
