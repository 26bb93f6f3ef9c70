"""The library pages: collections, a collection's documents, one document (and its delete)."""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

from ingestion_contracts.gateway import MAX_CHUNK_RANGE, MAX_QUERY_CHARS, CollectionInfo, DocumentInfo, SearchHit
from starlette.requests import Request
from starlette.responses import Response

from ..errors import ToolFailure
from ..ingest.folders import synced_folders
from ..state import AppState
from .cited import cited_top, from_param
from .render import Refused, handled, page, see_other, write_form

SHOWN = ("pdf", "image")  # file types whose pages are drawn (from the kept original)
PER_PAGE = 25
SCAN_PAGE = 1000  # the gateway's largest page
SCAN_LIMIT = 20_000  # a text filter looks at this many documents at most (newest first)
CHUNK_PAGE = MAX_CHUNK_RANGE  # chunks a document page shows: one chunk-range read; ?part= pages through the rest


@dataclass
class CollectionRow:
    info: CollectionInfo
    last_ingest: str | None

    @property
    def size(self) -> str:
        """The collection's vectors, as stored (float32): chunks x dimension x 4 bytes."""
        size = self.info.chunk_count * self.info.dimension * 4
        return f"{size / 2**20:.1f} MiB" if size >= 2**20 else f"{size / 2**10:.0f} KiB"


def pages_of(doc: DocumentInfo) -> str:
    """The source's page count; a dash for page-less formats and documents stored before page counts were kept."""
    return "\u2013" if doc.page_count is None else str(doc.page_count)


def _chunk_of(request: Request) -> int | None:
    asked = request.query_params.get("chunk", "")
    return int(asked) if asked.isdigit() and len(asked) < 10 else None


def matches(doc: DocumentInfo, needle: str) -> bool:
    haystack = " ".join([doc.title, doc.key, doc.source, doc.file_type, *doc.tags]).casefold()
    return needle.casefold() in haystack


class LibraryPages:
    def __init__(self, state: AppState) -> None:
        self.state = state

    async def _row(self, info: CollectionInfo) -> CollectionRow:
        newest = await self.state.library.documents(info.name, limit=1)
        return CollectionRow(info, newest.documents[0].updated_at if newest.documents else None)

    @handled
    async def collections(self, request: Request) -> Response:
        """Every collection the caller may read, with its counts and last ingest."""
        listing = await self.state.backend.list_collections()
        infos = sorted(listing.collections, key=lambda c: c.name)
        rows = await asyncio.gather(*(self._row(info) for info in infos))
        return page(request, "collections.html", rows=rows, notice=request.query_params.get("notice"))

    async def _documents(self, request: Request) -> dict[str, Any]:
        name = request.path_params["name"]
        needle = request.query_params.get("q", "").strip()[:200]
        asked = request.query_params.get("page", "1")
        number = max(1, int(asked)) if asked.isdigit() else 1
        if needle:
            found = [doc for doc in await self._scan(name) if matches(doc, needle)]
            total, documents = len(found), found[(number - 1) * PER_PAGE : number * PER_PAGE]
        else:
            listing = await self.state.library.documents(name, offset=(number - 1) * PER_PAGE, limit=PER_PAGE)
            total, documents = listing.total, listing.documents
        pages = max(1, math.ceil(total / PER_PAGE))
        return {"name": name, "q": needle, "documents": documents, "total": total, "number": number,
                "pages": pages, "pages_of": pages_of}  # fmt: skip

    async def _scan(self, name: str) -> list[DocumentInfo]:
        documents: list[DocumentInfo] = []
        while len(documents) < SCAN_LIMIT:
            listing = await self.state.library.documents(name, offset=len(documents), limit=SCAN_PAGE)
            documents += listing.documents
            if not listing.documents or len(documents) >= listing.total:
                break
        return documents

    @handled
    async def collection(self, request: Request) -> Response:
        """A collection's documents, paged and filtered."""
        info = await self.state.library.collection_info(request.path_params["name"])
        context = await self._documents(request)
        folders = (await synced_folders(self.state.folders)).get(info.name, [])
        return page(request, "collection.html", info=info, notice=request.query_params.get("notice"), folders=folders,
                    **context)  # fmt: skip

    @handled
    async def documents(self, request: Request) -> Response:
        """The documents table alone (htmx: the filter as one types)."""
        return page(request, "_documents.html", **await self._documents(request))

    @handled
    async def document(self, request: Request) -> Response:
        """One document: its Markdown as text, its pages and sections, its chunks as stored."""
        name, doc_id = request.path_params["name"], request.path_params["doc_id"]
        doc = await self.state.library.document(name, doc_id)
        parts = max(1, math.ceil(doc.chunk_count / CHUNK_PAGE))
        asked = request.query_params.get("part", "1")
        part = min(parts, max(1, int(asked))) if asked.isdigit() else 1
        first, last = (part - 1) * CHUNK_PAGE, min(doc.chunk_count, part * CHUNK_PAGE) - 1
        chunks: list[SearchHit] = []
        if doc.chunk_count:
            chunks = (await self.state.backend.get_chunks(name, doc_id, first, last)).chunks
        pages = sorted({p for chunk in chunks for p in (chunk.page, chunk.page_end) if p is not None})
        sections = list(dict.fromkeys(" > ".join(chunk.heading_path) for chunk in chunks if chunk.heading_path))
        return page(request, "document.html", name=name, doc=doc, chunks=chunks, pages=pages, sections=sections,
                    part=part, parts=parts, first=first, last=last, shown=doc.file_type in SHOWN)  # fmt: skip

    @handled
    async def page_view(self, request: Request) -> Response:
        """One page of a PDF or image, drawn from its kept original, a passage (?chunk=) marked: what an agent gets
        from get_document_pages with image='page'."""
        name, doc_id, number = request.path_params["name"], request.path_params["doc_id"], request.path_params["page"]
        doc = await self.state.library.structure(name, doc_id)
        chunk = _chunk_of(request)
        if doc.file_type not in SHOWN:
            raise ToolFailure(f"'{doc.title or doc.key}' is a {doc.file_type} document: only PDFs and images are "
                              "shown as pages.", "Read its Markdown on the document page.", code="NO_PAGE_IMAGES",
                              status=422)  # fmt: skip
        count = doc.page_count or (doc.page_starts[-1].page if doc.page_starts else 1)
        if not 1 <= number <= count:
            raise ToolFailure(f"The document has {count} pages; there is no page {number}.",
                              f"Choose a page from 1 to {count}.", code="PAGE_NOT_FOUND", status=404)  # fmt: skip
        passage = await self.state.library.passage(name, doc_id, chunk) if chunk is not None else None
        passage_pages = sorted({b.page for b in passage.boxes or []}) if passage is not None else []
        query = request.query_params.get("q", "")[:MAX_QUERY_CHARS]
        cited = from_param(request.query_params.get("cited", ""), len(passage.text)) if passage is not None else []
        top = cited_top(passage, cited, number) if passage is not None else None
        return page(request, "page.html", name=name, doc=doc, number=number, count=count, chunk=chunk,
                    passage=passage, passage_pages=passage_pages, query=query, cited=cited, cited_top=top)  # fmt: skip

    @handled
    async def page_image(self, request: Request) -> Response:
        """The page picture itself (PNG or WebP), for the page view's <img>."""
        name, doc_id, number = request.path_params["name"], request.path_params["doc_id"], request.path_params["page"]
        query = request.query_params.get("q", "")[:MAX_QUERY_CHARS] or None
        picture = await self.state.library.page_image(name, doc_id, number, chunk=_chunk_of(request), query=query)
        headers = {"X-Marked": str(picture.marked), "X-Cited": str(picture.cited)}
        return Response(picture.data, media_type=picture.media_type, headers=headers)

    @handled
    async def delete_document(self, request: Request) -> Response:
        """Delete a document through the library facade (the same delete the tool makes)."""
        await write_form(request)
        name, doc_id = request.path_params["name"], request.path_params["doc_id"]
        gone = await self.state.library.delete_document(name, doc_id)
        notice = f"Deleted document {doc_id} ({gone.deleted_chunks} chunks)."
        return see_other(f"/collections/{quote(name)}?{urlencode({'notice': notice})}", request)

    @handled
    async def delete_collection(self, request: Request) -> Response:
        """Delete a whole collection through the library facade (the delete_collection tool's call; the admin right).
        The form must repeat the collection's name, as the tool asks for confirm=true."""
        form = await write_form(request)
        name = request.path_params["name"]
        if str(form.get("confirm_name") or "").strip() != name:
            raise Refused(f"Not deleted: the name typed does not match the collection '{name}'.",
                          "Type the collection's name exactly to confirm that it goes with all its documents.",
                          code="CONFIRMATION_REQUIRED", status=400)  # fmt: skip
        gone = await self.state.library.delete_collection(name)
        await self.state.collection_deleted(name)
        notice = f"Deleted collection {name} ({gone.deleted_documents} documents, {gone.deleted_chunks} chunks)."
        return see_other(f"/?{urlencode({'notice': notice})}", request)
