"""The backend as the caller may use it: rights checked on every call that names a collection.

Every profile's tools, the Library facade, the ingest pipeline and the note index reach the services through
the app state's backend, so checking here checks all five profiles at once. A collection the caller may not
read answers as a missing one (its name does not leak), however it is named (an argument, search's
``filters.collection``); every "available collections" list holds readable ones only, the gateway's too; a write
without the right is refused with FORBIDDEN before anything is sent; every write, delete and collection change
leaves one audit record (access/audit.py).
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any, TypeVar

from ingestion_contracts import check_collection_name
from ingestion_contracts.common import NAME_RULE
from ingestion_contracts.gateway import (
    CollectionInfo,
    CollectionList,
    DeleteCollectionResponse,
    DeleteDocumentResponse,
    DocumentChunks,
    DocumentContent,
    DocumentList,
    DocumentStamps,
    DocumentStructure,
    OriginalKept,
    RelabelRequest,
    SearchRequest,
    SearchResponse,
    UpsertBatchResponse,
    UpsertDocumentRequest,
    UpsertDocumentResponse,
)
from ingestion_contracts.vectors import (
    VectorAddRequest,
    VectorAddResponse,
    VectorDeleteResponse,
    VectorSearchRequest,
    VectorSearchResponse,
    VectorStoreInfo,
)

from ..backend import Backend
from ..backend.page_image import PageImage
from ..errors import CollectionNotFound, ToolFailure
from .audit import audited
from .policy import Right, current_caller

T = TypeVar("T")
COLLECTION_FILTER = "collection"  # a search filter that selects the collection searched, not a chunk field


class GuardedBackend(Backend):
    """The same clients as the backend it wraps; each collection call asks current_caller() first."""

    @classmethod
    def over(cls, backend: Backend) -> GuardedBackend:
        return cls(docling=backend.docling, chunker=backend.chunker, gateway=backend.gateway)

    async def _readable(self, collection: str) -> None:
        if not current_caller().can("read", collection):
            raise await self._missing(collection)

    async def _missing(self, collection: str) -> CollectionNotFound:
        """What the gateway answers for a collection that does not exist, listing only readable ones; the name
        asked for is in details["collection"] (the facade words the error after it)."""
        available = await self.collection_names()
        listed = ", ".join(available) if available else "none yet"
        return CollectionNotFound(
            f"Collection {collection!r} does not exist. Available collections: {listed}.",
            "Use one of the available collections, or index a document into a new one (it is created then).",
            code="COLLECTION_NOT_FOUND",
            status=404,
            details={"available_collections": available, "collection": collection},
        )

    async def _named(self, collection: str, work: Coroutine[Any, Any, T]) -> T:
        """``work`` on a readable collection; the gateway's "missing" (which lists every collection) is said
        again listing readable ones only, so a missing and an unreadable collection answer alike."""
        try:
            return await work
        except CollectionNotFound:
            raise await self._missing(collection) from None

    async def _write(
        self, right: Right, action: str, collection: str, key: str | None, work: Coroutine[Any, Any, T]
    ) -> T:
        """A write needs its right whether the collection exists or not (so a refusal tells nothing about it)."""
        try:
            return await audited(action, collection, key, right, work)
        except CollectionNotFound:
            raise await self._missing(collection) from None

    # -- reads ---------------------------------------------------------------------------------
    async def collection_names(self) -> list[str]:
        caller = current_caller()
        return [name for name in await super().collection_names() if caller.can("read", name)]

    async def list_collections(self) -> CollectionList:
        listing = await super().list_collections()
        caller = current_caller()
        listing.collections = [c for c in listing.collections if caller.can("read", c.name)]
        return listing

    async def get_collection(self, name: str) -> CollectionInfo:
        await self._readable(name)
        return await self._named(name, super().get_collection(name))

    async def list_documents(
        self, collection: str, *, offset: int = 0, limit: int = 20, source: str | None = None
    ) -> DocumentList:
        await self._readable(collection)
        work = super().list_documents(collection, offset=offset, limit=limit, source=source)
        return await self._named(collection, work)

    async def find_document(self, collection: str, key: str) -> DocumentList:
        await self._readable(collection)
        return await self._named(collection, super().find_document(collection, key))

    async def document_stamps(self, collection: str, prefix: str, meta: list[str]) -> DocumentStamps:
        await self._readable(collection)
        return await self._named(collection, super().document_stamps(collection, prefix, meta))

    async def find_documents(self, collection: str, keys: list[str]) -> DocumentList:
        await self._readable(collection)
        return await self._named(collection, super().find_documents(collection, keys))

    async def get_document(self, collection: str, doc_id: str) -> DocumentContent:
        await self._readable(collection)
        return await self._named(collection, super().get_document(collection, doc_id))

    async def get_structure(self, collection: str, doc_id: str) -> DocumentStructure:
        await self._readable(collection)
        return await self._named(collection, super().get_structure(collection, doc_id))

    async def get_chunks(self, collection: str, doc_id: str, start: int, end: int) -> DocumentChunks:
        await self._readable(collection)
        return await self._named(collection, super().get_chunks(collection, doc_id, start, end))

    async def page_image(
        self, collection: str, doc_id: str, page: int, *, chunk: int | None = None, crop: str | None = None
    ) -> PageImage:
        """A page is read as the document's text is: the collection's read right."""
        await self._readable(collection)
        work = super().page_image(collection, doc_id, page, chunk=chunk, crop=crop)
        return await self._named(collection, work)

    async def search(self, request: SearchRequest) -> SearchResponse:
        """Over the named collections (each must be readable), or over every readable one when none is named.

        ``filters.collection`` names a collection like the argument does (it is sent as the one collection
        searched, never as a filter): the same readable-or-missing rule, and a bad value is blamed as itself."""
        caller = current_caller()
        request = scoped(request)
        if request.collections:
            for name in request.collections:
                await self._readable(name)
        elif not caller.everywhere("read"):
            readable = await self.collection_names()
            if not readable:
                return SearchResponse(hits=[], mode=request.mode, total_searched=0, embedding_ms=0.0, search_ms=0.0)
            request = request.model_copy(update={"collections": readable})
        try:
            return await super().search(request)
        except CollectionNotFound:
            if not request.collections:
                raise
            existing = set(await super().collection_names())
            missing = next((name for name in request.collections if name not in existing), request.collections[0])
            raise await self._missing(missing) from None

    async def vector_search(self, store: str, request: VectorSearchRequest) -> VectorSearchResponse:
        if not current_caller().can("read", store):  # as the gateway answers for a store that does not exist
            return VectorSearchResponse(results=[], total_searched=0, metric=None)
        return await super().vector_search(store, request)

    async def vector_store(self, store: str, namespace: str | None) -> VectorStoreInfo:
        if not current_caller().can("read", store):
            return VectorStoreInfo(store=store, namespace=namespace, count=0, dimension=None, metric=None)
        return await super().vector_store(store, namespace)

    # -- writes --------------------------------------------------------------------------------
    async def upsert(self, collection: str, request: UpsertDocumentRequest) -> UpsertDocumentResponse:
        work = super().upsert(collection, request)
        return await self._write("write", "upsert_document", collection, request.key or request.source, work)

    async def upsert_batch(
        self, collection: str, documents: list[UpsertDocumentRequest], *, commit_within_ms: int | None = None
    ) -> UpsertBatchResponse:
        keys = ", ".join(str(doc.key or doc.source) for doc in documents)
        work = super().upsert_batch(collection, documents, commit_within_ms=commit_within_ms)
        return await self._write("write", "upsert_documents", collection, keys, work)

    async def keep_original(self, collection: str, content_hash: str, data: bytes) -> OriginalKept:
        """Kept before a document is written, with the same right (and audit record) as the write."""
        work = super().keep_original(collection, content_hash, data)
        return await self._write("write", "keep_original", collection, content_hash, work)

    async def relabel(self, collection: str, doc_id: str, request: RelabelRequest) -> UpsertDocumentResponse:
        work = super().relabel(collection, doc_id, request)
        return await self._write("write", "relabel_document", collection, doc_id, work)

    async def delete_document(self, collection: str, doc_id: str) -> DeleteDocumentResponse:
        work = super().delete_document(collection, doc_id)
        return await self._write("write", "delete_document", collection, doc_id, work)

    async def create_collection(self, name: str) -> CollectionInfo:
        return await self._write("write", "create_collection", name, None, super().create_collection(name))

    async def delete_collection(self, name: str) -> DeleteCollectionResponse:
        return await self._write("admin", "delete_collection", name, None, super().delete_collection(name))

    async def vector_add(self, store: str, request: VectorAddRequest) -> VectorAddResponse:
        return await self._write("write", "vector_add", store, None, super().vector_add(store, request))

    async def vector_delete(self, store: str, vector_id: str, namespace: str | None) -> VectorDeleteResponse:
        work = super().vector_delete(store, vector_id, namespace)
        return await self._write("write", "vector_delete", store, vector_id, work)


def scoped(request: SearchRequest) -> SearchRequest:
    """``filters.collection`` as the collection searched: a string that is a collection name, and (with named
    collections) one of them; anything else is refused naming the filter, whatever collections exist."""
    wanted = request.filters.get(COLLECTION_FILTER)
    if wanted is None:
        return request
    shown = repr(wanted)[:80]
    if not isinstance(wanted, str):
        raise bad_filter(f"Filter 'collection' takes a collection name; {shown} is not one.")
    try:
        check_collection_name(wanted)
    except ValueError:
        raise bad_filter(f"Filter 'collection' value {shown} is not a collection name: use {NAME_RULE}.") from None
    if request.collections and wanted not in request.collections:
        raise bad_filter(
            f"Filter 'collection' value {shown} contradicts the collections named ({', '.join(request.collections)})."
        )
    filters = {key: value for key, value in request.filters.items() if key != COLLECTION_FILTER}
    return request.model_copy(update={"collections": [wanted], "filters": filters})


def bad_filter(message: str) -> ToolFailure:
    return ToolFailure(
        message,
        "Give filters.collection a collection name (list them with get_collections), or leave it out.",
        code="INVALID_INPUT",
        status=400,
        details={"filter": COLLECTION_FILTER},
    )
