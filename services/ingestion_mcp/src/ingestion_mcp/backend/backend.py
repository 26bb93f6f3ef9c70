"""Typed calls to the docling, chunker and vector-gateway services (one method per endpoint)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from ingestion_contracts.chunker import ChunkBatchRequest, ChunkBatchResponse, ChunkRequest, ChunkResponse
from ingestion_contracts.docling import ConvertResponse, ConvertStreamEvent
from ingestion_contracts.gateway import (
    CollectionInfo,
    CollectionList,
    CollectionNames,
    DeleteCollectionResponse,
    DeleteDocumentResponse,
    DocumentChunks,
    DocumentContent,
    DocumentList,
    DocumentStamps,
    DocumentStructure,
    EmbeddingModelInfo,
    EmbedPassagesRequest,
    EmbedResponse,
    FindDocumentsRequest,
    OriginalKept,
    PassageIn,
    RelabelRequest,
    SearchRequest,
    SearchResponse,
    UpsertBatchRequest,
    UpsertBatchResponse,
    UpsertDocumentRequest,
    UpsertDocumentResponse,
    WriteOrder,
)
from ingestion_contracts.vectors import (
    VectorAddRequest,
    VectorAddResponse,
    VectorDeleteResponse,
    VectorSearchRequest,
    VectorSearchResponse,
    VectorStoreInfo,
)

from ..errors import ToolFailure, UpstreamError, upstream_error
from .clients import ServiceClient
from .page_image import PageImage

# (pages done, pages in all) of a document being converted.
PageProgress = Callable[[int, int], Awaitable[None]]


def seg(value: str) -> str:
    """One URL path segment. Names come from callers: '?', '#' and '%' are encoded, and a '/' or a dot
    segment is refused (servers decode %2F before routing, so no encoding keeps it inside one segment)."""
    if "/" in value or "\\" in value or value in ("", ".", ".."):
        raise ToolFailure(
            f"Invalid name {value!r}: a collection, store or document name is one name, not a path.",
            "Use letters, digits, '-', '_' or '.' (get_collections lists the existing collections).",
            code="INVALID_INPUT",
        )
    return quote(value, safe="")


def _body(model: Any) -> dict[str, Any]:
    return model.model_dump(mode="json", exclude_none=True)


@dataclass
class Backend:
    docling: ServiceClient
    chunker: ServiceClient
    gateway: ServiceClient

    # docling -----------------------------------------------------------------------------
    async def convert(self, data: bytes, file_name: str, progress: PageProgress | None = None) -> ConvertResponse:
        """The document converted; ``progress(done, total)`` hears a PDF's pages as they are converted."""
        files = {"file": (file_name, data, "application/octet-stream")}
        if progress is None:
            return await self.docling.json("POST", "/v1/convert", ConvertResponse, files=files)
        results: list[ConvertResponse] = []

        async def on_line(line: str) -> None:
            event = ConvertStreamEvent.model_validate_json(line)
            if event.event == "progress" and event.pages_total:
                await progress(event.pages_done or 0, event.pages_total)
            elif event.event == "result" and event.result is not None:
                results.append(event.result)
            elif event.error is not None:
                body = event.error
                status = event.status or 422
                raise upstream_error(body.error, body.suggestion, code=body.code, status=status, details=body.details)

        # Cancelling this call closes the stream: the docling service kills the worker converting the document.
        await self.docling.stream_lines("POST", "/v1/convert/stream", on_line, files=files)
        if not results:
            raise UpstreamError(
                "The docling service ended its answer without the converted document.",
                "Retry; if it keeps failing, check the docling service's logs.",
                code="PROCESSING_FAILED",
                status=502,
            )
        return results[0]

    # chunker -----------------------------------------------------------------------------
    async def chunk(self, request: ChunkRequest) -> ChunkResponse:
        return await self.chunker.json("POST", "/v1/chunk", ChunkResponse, json=_body(request))

    async def chunk_batch(self, requests: list[ChunkRequest]) -> ChunkBatchResponse:
        body = _body(ChunkBatchRequest(items=requests))
        return await self.chunker.json("POST", "/v1/chunk/batch", ChunkBatchResponse, json=body)

    # gateway: documents ------------------------------------------------------------------
    async def upsert(self, collection: str, request: UpsertDocumentRequest) -> UpsertDocumentResponse:
        path = f"/v1/collections/{seg(collection)}/documents"
        return await self.gateway.json("POST", path, UpsertDocumentResponse, json=_body(request))

    async def upsert_batch(
        self, collection: str, documents: list[UpsertDocumentRequest], *, commit_within_ms: int | None = None
    ) -> UpsertBatchResponse:
        path = f"/v1/collections/{seg(collection)}/documents/batch"
        body = _body(UpsertBatchRequest(documents=documents, commit_within_ms=commit_within_ms))
        return await self.gateway.json("POST", path, UpsertBatchResponse, json=body)

    async def write_order(self) -> int:
        """A write order from the gateway (taken when a job is submitted: the last submitted write wins)."""
        return (await self.gateway.json("POST", "/v1/write-order", WriteOrder)).order

    async def list_documents(
        self, collection: str, *, offset: int = 0, limit: int = 20, source: str | None = None
    ) -> DocumentList:
        params: dict[str, Any] = {"offset": offset, "limit": limit}
        if source is not None:
            params["source"] = source
        path = f"/v1/collections/{seg(collection)}/documents"
        return await self.gateway.json("GET", path, DocumentList, params=params)

    async def document_stamps(self, collection: str, prefix: str, meta: list[str]) -> DocumentStamps:
        """Key, doc_id, hash and the named metadata of every document whose key starts with ``prefix``."""
        path = f"/v1/collections/{seg(collection)}/document-stamps"
        return await self.gateway.json("GET", path, DocumentStamps, params={"prefix": prefix, "meta": meta})

    async def find_document(self, collection: str, key: str) -> DocumentList:
        """The document whose identity is `key` (0 or 1 documents)."""
        path = f"/v1/collections/{seg(collection)}/documents"
        return await self.gateway.json("GET", path, DocumentList, params={"key": key})

    async def find_documents(self, collection: str, keys: list[str]) -> DocumentList:
        """The stored documents with these keys (missing keys are absent from the answer)."""
        path = f"/v1/collections/{seg(collection)}/documents/find"
        return await self.gateway.json("POST", path, DocumentList, json=_body(FindDocumentsRequest(keys=keys)))

    async def relabel(self, collection: str, doc_id: str, request: RelabelRequest) -> UpsertDocumentResponse:
        path = f"/v1/collections/{seg(collection)}/documents/{seg(doc_id)}/labels"
        return await self.gateway.json("POST", path, UpsertDocumentResponse, json=_body(request))

    async def embed_passages(self, passages: list[PassageIn]) -> EmbedResponse:
        body = _body(EmbedPassagesRequest(passages=passages))
        return await self.gateway.json("POST", "/v1/embed/passages", EmbedResponse, json=body)

    async def get_document(self, collection: str, doc_id: str) -> DocumentContent:
        path = f"/v1/collections/{seg(collection)}/documents/{seg(doc_id)}"
        return await self.gateway.json("GET", path, DocumentContent)

    async def get_structure(self, collection: str, doc_id: str) -> DocumentStructure:
        path = f"/v1/collections/{seg(collection)}/documents/{seg(doc_id)}/structure"
        return await self.gateway.json("GET", path, DocumentStructure)

    async def get_chunks(self, collection: str, doc_id: str, start: int, end: int) -> DocumentChunks:
        path = f"/v1/collections/{seg(collection)}/documents/{seg(doc_id)}/chunks"
        return await self.gateway.json("GET", path, DocumentChunks, params={"start": start, "end": end})

    async def delete_document(self, collection: str, doc_id: str) -> DeleteDocumentResponse:
        path = f"/v1/collections/{seg(collection)}/documents/{seg(doc_id)}"
        return await self.gateway.json("DELETE", path, DeleteDocumentResponse)

    async def keep_original(self, collection: str, content_hash: str, data: bytes) -> OriginalKept:
        """The original a PDF or image was converted from, kept by the gateway to show its pages."""
        path = f"/v1/collections/{seg(collection)}/originals/{seg(content_hash)}"
        headers = {"content-type": "application/octet-stream"}
        return await self.gateway.json("PUT", path, OriginalKept, content=data, headers=headers)

    async def page_image(
        self,
        collection: str,
        doc_id: str,
        page: int,
        *,
        chunk: int | None = None,
        crop: str | None = None,
        query: str | None = None,
    ) -> PageImage:
        """Page ``page`` drawn from the document's kept original, passage ``chunk`` marked (the sentences it cites for
        ``query`` apart), or the ``crop``."""
        asked = (("chunk", chunk), ("crop", crop), ("query", query))
        params: dict[str, Any] = {k: v for k, v in asked if v is not None}
        path = f"/v1/collections/{seg(collection)}/documents/{seg(doc_id)}/pages/{page}/image"
        return PageImage.from_response(await self.gateway.call("GET", path, params=params))

    # gateway: search and collections -------------------------------------------------------
    async def search(self, request: SearchRequest) -> SearchResponse:
        return await self.gateway.json("POST", "/v1/search", SearchResponse, json=_body(request))

    async def embed(self, texts: list[str]) -> EmbedResponse:
        return await self.gateway.json("POST", "/v1/embed", EmbedResponse, json={"texts": texts})

    async def embedding_model(self) -> EmbeddingModelInfo:
        """The gateway's model and dimension, without making it load the model."""
        return await self.gateway.json("GET", "/v1/embed/model", EmbeddingModelInfo)

    async def list_collections(self) -> CollectionList:
        return await self.gateway.json("GET", "/v1/collections", CollectionList)

    async def collection_names(self) -> list[str]:
        """The collections' names, A to Z, without their counts (one cheap call)."""
        return (await self.gateway.json("GET", "/v1/collection-names", CollectionNames)).names

    async def get_collection(self, name: str) -> CollectionInfo:
        return await self.gateway.json("GET", f"/v1/collections/{seg(name)}", CollectionInfo)

    async def create_collection(self, name: str) -> CollectionInfo:
        return await self.gateway.json("POST", "/v1/collections", CollectionInfo, json={"name": name})

    async def delete_collection(self, name: str) -> DeleteCollectionResponse:
        return await self.gateway.json("DELETE", f"/v1/collections/{seg(name)}", DeleteCollectionResponse)

    # gateway: raw vector stores ------------------------------------------------------------
    async def vector_add(self, store: str, request: VectorAddRequest) -> VectorAddResponse:
        path = f"/v1/vector-stores/{seg(store)}/vectors"
        return await self.gateway.json("POST", path, VectorAddResponse, json=_body(request))

    async def vector_search(self, store: str, request: VectorSearchRequest) -> VectorSearchResponse:
        path = f"/v1/vector-stores/{seg(store)}/search"
        return await self.gateway.json("POST", path, VectorSearchResponse, json=_body(request))

    async def vector_delete(self, store: str, vector_id: str, namespace: str | None) -> VectorDeleteResponse:
        params = {"id": vector_id} | ({"namespace": namespace} if namespace is not None else {})
        path = f"/v1/vector-stores/{seg(store)}/vectors"
        return await self.gateway.json("DELETE", path, VectorDeleteResponse, params=params)

    async def vector_store(self, store: str, namespace: str | None) -> VectorStoreInfo:
        params = {"namespace": namespace} if namespace is not None else {}
        return await self.gateway.json("GET", f"/v1/vector-stores/{seg(store)}", VectorStoreInfo, params=params)

    async def readiness(self) -> dict[str, str]:
        """Each service's /readyz, for the MCP endpoint's own /readyz."""
        checks = {}
        for client in (self.docling, self.chunker, self.gateway):
            try:
                response = await client.http.get("/readyz", timeout=5.0)
                checks[client.name] = "ok" if response.status_code == 200 else f"HTTP {response.status_code}"
            except Exception as exc:  # noqa: BLE001 - any failure means not ready
                checks[client.name] = type(exc).__name__
        return checks

    async def aclose(self) -> None:
        for client in (self.docling, self.chunker, self.gateway):
            await client.aclose()
