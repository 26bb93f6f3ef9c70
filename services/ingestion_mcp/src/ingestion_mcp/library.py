"""The library facade: what every tool profile asks of the indexed documents, each done one way.

Profiles name things in their own words (library, store, note, filePath) and shape answers to their own
spec; the lookups, the similarity ranking, the paging across collections, the response budget and the
translation of the gateway's error codes live here. Missing things are typed errors (errors.py):
CollectionNotFound, DocumentNotFound, CollectionExists, never an HTTP status or a message's words.
No MCP here: the ingestion-index CLI uses it too.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from pathlib import Path

from ingestion_contracts.gateway import (
    MAX_QUERY_CHARS,
    MAX_TOP_K,
    CollectionInfo,
    CollectionList,
    DeleteCollectionResponse,
    DeleteDocumentResponse,
    DocumentChunks,
    DocumentContent,
    DocumentInfo,
    DocumentList,
    DocumentStructure,
    SearchHit,
    SearchRequest,
    SearchResponse,
)
from ingestion_contracts.vectors import (
    VectorAddRequest,
    VectorAddResponse,
    VectorDeleteResponse,
    VectorSearchRequest,
    VectorSearchResponse,
    VectorStoreInfo,
)
from pydantic import BaseModel

from .backend import Backend
from .backend.page_image import PageImage
from .errors import CollectionExists, CollectionNotFound, DocumentNotFound, NotFound, ToolFailure
from .settings import McpSettings

CHARS_PER_TOKEN = 4
PROBE_CHUNKS = 8  # similar() searches with up to this many chunks of the source document


def estimate_tokens(text: str) -> int:
    """~4 characters a token: good enough to keep answers inside an agent's budget."""
    return len(text) // CHARS_PER_TOKEN + 1


@dataclass(frozen=True)
class ResponseBudget:
    """How much one answer may carry (INGESTION_MCP_RESPONSE_TOKEN_BUDGET): a long text is paged, a long list
    loses its last (lowest-ranked) items."""

    tokens: int

    @property
    def chars(self) -> int:
        return self.tokens * CHARS_PER_TOKEN

    @staticmethod
    def check_start(start: int, total: int, where: str, ask: str) -> None:
        """A paged read that starts at or past the end (``total`` items or characters) is an error that says
        where the end is and what to ask instead (``where``: "offset 900: 'manual.pdf' has 505 sections")."""
        if start > 0 and start >= total:
            raise ToolFailure(f"{where}; nothing is left to read there.", ask, code="PAST_END")

    def window(self, text: str, start: int = 0) -> tuple[str, bool]:
        """The part of `text` from `start` that fits, and whether more follows it."""
        return text[start : start + self.chars], start + self.chars < len(text)

    def trim(self, answer: BaseModel, field: str) -> bool:
        """Drop the last items of the list `answer.<field>` until the answer fits; one item always stays.
        True when some were dropped. Named by field, not handed a list: a model keeps a copy of the list
        it was built from, and popping that list would leave the answer as long as it was."""
        items = getattr(answer, field)
        if not isinstance(items, list):
            raise TypeError(f"{type(answer).__name__}.{field} is not a list")
        dropped = False
        while len(items) > 1 and estimate_tokens(answer.model_dump_json(exclude_none=True)) > self.tokens:
            items.pop()
            dropped = True
        return dropped


class Library:
    """The indexed documents as the tools see them (one per server, over the shared backend)."""

    def __init__(self, backend: Backend, settings: McpSettings) -> None:
        self.backend = backend
        self.budget = ResponseBudget(settings.response_token_budget)

    # -- collections --------------------------------------------------------------------------
    async def collections(self) -> list[str]:
        """The names of the collections, A to Z."""
        return await self.backend.collection_names()

    async def listing(self) -> CollectionList:
        """Every collection with its document and chunk counts (one call to the gateway)."""
        return await self.backend.list_collections()

    async def collection_info(self, name: str) -> CollectionInfo:
        return await self.backend.get_collection(name)

    async def create_collection(self, name: str) -> CollectionInfo:
        try:
            return await self.backend.create_collection(name)
        except CollectionExists:
            raise CollectionExists(
                f"Collection '{name}' already exists.",
                "Ingest into it, or pick another name.",
                code="COLLECTION_EXISTS",
                status=409,
            ) from None

    async def delete_collection(self, name: str) -> DeleteCollectionResponse:
        return await self.backend.delete_collection(name)

    # -- documents ----------------------------------------------------------------------------
    async def documents(self, collection: str, *, offset: int = 0, limit: int = 20) -> DocumentList:
        """One page of a collection's documents, newest first."""
        return await self.backend.list_documents(collection, offset=offset, limit=limit)

    async def documents_across(self, collections: list[str] | None, *, offset: int, limit: int) -> list[DocumentInfo]:
        """One page over several collections in turn (all of them, A to Z, when None): `offset` skips the
        documents of earlier collections first."""
        documents: list[DocumentInfo] = []
        skip = offset
        for name in collections or await self.collections():
            page = await self.documents(name, offset=skip, limit=limit - len(documents))
            documents += page.documents
            skip = max(0, skip - page.total)
            if len(documents) >= limit:
                break
        return documents

    async def find(self, collection: str, *keys: str) -> DocumentInfo | None:
        """The document whose identity (key: a path, URL or name) is the first of `keys` stored, if any.
        Raises CollectionNotFound as the gateway words it: each profile names a missing index its own way."""
        for key in dict.fromkeys(keys):
            listing = await self.backend.find_document(collection, key)
            if listing.documents:
                return listing.documents[0]
        return None

    async def find_key(self, collection: str, key: str) -> DocumentInfo | None:
        """The document whose identity is `key`; a file path is also tried resolved (a link, `~`), the form
        ingest_document stores. Raises CollectionNotFound as the gateway words it."""
        keys = [key]
        if key.startswith(("/", "~")) and "://" not in key:
            with contextlib.suppress(OSError, RuntimeError):  # a symlink loop: the key as given only
                keys.append(str(Path(key).expanduser().resolve()))
        return await self.find(collection, *keys)

    async def chunk_counts(self, collection: str, keys: list[str]) -> dict[str, int]:
        """How many chunks each document (by key) has; 0 for one not stored."""
        unique = list(dict.fromkeys(keys))
        found = await asyncio.gather(*(self.find(collection, key) for key in unique))
        return {key: doc.chunk_count if doc else 0 for key, doc in zip(unique, found, strict=True)}

    async def locate(self, doc_id: str) -> str | None:
        """The collection that holds a document known by its doc_id alone (None: none does)."""
        for name in await self.collections():
            try:
                await self.backend.get_chunks(name, doc_id, 0, 0)
                return name
            except NotFound:
                continue
        return None

    async def document(self, collection: str, doc_id: str) -> DocumentContent:
        """A document's Markdown, rebuilt from its chunks."""
        try:
            return await self.backend.get_document(collection, doc_id)
        except NotFound as exc:
            raise self._missing(collection, doc_id, exc) from None

    async def structure(self, collection: str, doc_id: str) -> DocumentStructure:
        """A document's Markdown with its map: sections (heading path and levels, pages, offsets) and where
        each page begins; an outline, a section or a page range is a slice of it."""
        try:
            return await self.backend.get_structure(collection, doc_id)
        except NotFound as exc:
            raise self._missing(collection, doc_id, exc) from None

    async def passage(self, collection: str, doc_id: str, chunk_index: int) -> SearchHit:
        """One passage (chunk) of a document, with where it lies on its pages."""
        try:
            found = await self.backend.get_chunks(collection, doc_id, chunk_index, chunk_index)
        except NotFound as exc:
            raise self._missing(collection, doc_id, exc) from None
        if not found.chunks:
            raise ToolFailure(
                f"The document has {found.chunk_count} passages (chunk_index 0-{found.chunk_count - 1}); there is no "
                f"passage {chunk_index}.",
                "Give the chunk_index of a search result of this document.",
                code="PASSAGE_NOT_FOUND",
            )
        return found.chunks[0]

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
        """A page drawn from the document's kept original, passage ``chunk`` marked (the sentences it cites for
        ``query`` apart), or a ``crop`` of it."""
        try:
            return await self.backend.page_image(collection, doc_id, page, chunk=chunk, crop=crop, query=query)
        except (CollectionNotFound, DocumentNotFound) as exc:
            raise self._missing(collection, doc_id, exc) from None

    async def chunks(self, collection: str, doc_id: str, first: int, last: int) -> DocumentChunks:
        """A document's chunks `first` to `last` (inclusive), in order."""
        return await self.backend.get_chunks(collection, doc_id, first, last)

    async def doc_id_of(self, collection: str, key: str) -> str:
        """The doc_id of the document whose identity is `key` (a path, URL or name, as it was ingested; a
        path is also tried resolved)."""
        found = await self.find_key(collection, key)
        if found is None:
            raise DocumentNotFound(
                f"No document with key '{key}' in collection '{collection}'.",
                "The key is the path, URL or name it was ingested with; list_documents shows each document's key.",
                code="DOCUMENT_NOT_FOUND",
                status=404,
            )
        return found.doc_id

    async def delete_document(self, collection: str, doc_id: str) -> DeleteDocumentResponse:
        try:
            return await self.backend.delete_document(collection, doc_id)
        except NotFound as exc:
            raise self._missing(collection, doc_id, exc) from None

    @staticmethod
    def _missing(collection: str, doc_id: str, exc: NotFound) -> ToolFailure:
        if isinstance(exc, CollectionNotFound):
            return exc  # said where the name was resolved (the guard, the gateway), listing what the caller may read
        return DocumentNotFound(
            f"Document '{doc_id}' not found in collection '{collection}'.",
            "Use list_documents or search to find the doc_id; it may have been deleted or replaced.",
            code="DOCUMENT_NOT_FOUND",
            status=404,
        )

    # -- search -------------------------------------------------------------------------------
    async def search(self, request: SearchRequest) -> SearchResponse:
        """The gateway's search; a missing collection it names (an argument or filters.collection) is a
        CollectionNotFound."""
        return await self.backend.search(request)

    async def similar(self, collection: str, doc: DocumentInfo, top_k: int) -> list[SearchHit]:
        """The documents of a collection closest in meaning to `doc`, best first, `doc` itself left out: each
        of its first chunks (up to PROBE_CHUNKS) is a query, and a document ranks by its best passage."""
        if doc.chunk_count == 0:
            return []
        probes = await self.backend.get_chunks(collection, doc.doc_id, 0, min(doc.chunk_count, PROBE_CHUNKS) - 1)
        wanted = min(MAX_TOP_K, top_k * 4 + doc.chunk_count)
        searches = await asyncio.gather(*(
            self.search(SearchRequest(
                query=chunk.text[:MAX_QUERY_CHARS], collections=[collection], mode="semantic", top_k=wanted,
                exact_phrase=False,  # by meaning: a whole chunk as a phrase would cost a BM25 query per probe
            ))
            for chunk in probes.chunks if chunk.text.strip()
        ))  # fmt: skip
        best: dict[str, SearchHit] = {}
        for hit in (hit for found in searches for hit in found.hits if hit.doc_id != doc.doc_id):
            if hit.doc_id not in best or hit.score > best[hit.doc_id].score:
                best[hit.doc_id] = hit
        return sorted(best.values(), key=lambda hit: hit.score, reverse=True)[:top_k]

    # -- vector stores (the vector_store profile: the caller's own vectors, no documents) ------
    async def add_vector(self, store: str, request: VectorAddRequest) -> VectorAddResponse:
        return await self.backend.vector_add(store, request)

    async def delete_vector(self, store: str, vector_id: str, namespace: str | None) -> VectorDeleteResponse:
        return await self.backend.vector_delete(store, vector_id, namespace)

    async def search_vectors(self, store: str, request: VectorSearchRequest) -> VectorSearchResponse:
        return await self.backend.vector_search(store, request)

    async def vector_store(self, store: str, namespace: str | None) -> VectorStoreInfo:
        return await self.backend.vector_store(store, namespace)
