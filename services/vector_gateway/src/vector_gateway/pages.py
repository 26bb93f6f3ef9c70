"""A document's pages as images: its kept original (originals.py) drawn with a passage's boxes marked
(page_images.py). Blocking: runs in worker threads."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from servicekit import NotFound, Unprocessable

from .boxes import stored_boxes, stored_units
from .cited import cited_sentences
from .documents import DocumentReader
from .filters import in_collection
from .index import DocumentIndex
from .originals import Originals
from .page_images import Box, ImageFormat, PageImage, render
from .records import CHUNK_OUTPUT_FIELDS
from .where import And, Eq

PAGED = ("pdf", "image")


@dataclass(frozen=True)
class ShownPage:
    image: PageImage
    marked: int  # boxes of the passage drawn on this page
    cited: list[Box]  # ... of them, those of the sentences cited for the query (drawn apart)
    passage_pages: list[int]  # every page the passage has boxes on (empty: none, or no passage asked)
    figures: list[Box]  # the passage's figures on this page

    @property
    def cited_box(self) -> Box | None:
        """The box around the cited lines (a viewer scrolls to it)."""
        if not self.cited:
            return None
        return (min(b[0] for b in self.cited), min(b[1] for b in self.cited), max(b[2] for b in self.cited),
                max(b[3] for b in self.cited))  # fmt: skip


class PageViews:
    def __init__(self, store: DocumentIndex, documents: DocumentReader, originals: Originals) -> None:
        self.store = store
        self.documents = documents
        self.originals = originals

    def keep(self, collection: str, content_hash: str, data: bytes) -> bool:
        """Keep the original of a document about to be written; False when it was kept already."""
        return self.originals.put(collection, content_hash, data)

    def _passage(self, collection: str, row: dict[str, Any], chunk: int) -> dict[str, Any]:
        where = And((Eq("doc_id", row["doc_id"]), Eq("version", row["version"]), Eq("chunk_index", chunk)))
        found = self.store.query(collection, where, CHUNK_OUTPUT_FIELDS, limit=1)
        if not found:
            raise NotFound(
                f"The document has {row['chunk_count']} passages (chunk_index 0-{int(row['chunk_count']) - 1}); "
                f"there is no passage {chunk}.",
                code="PASSAGE_NOT_FOUND",
                suggestion="Give the chunk_index of a search result of this document.",
            )
        return found[0]

    def show(
        self,
        collection: str,
        doc_id: str,
        page: int,
        *,
        chunk: int | None = None,
        crop: Box | None = None,
        fmt: ImageFormat = "png",
        max_side: int = 1568,
        query: str | None = None,
    ) -> ShownPage:
        """Page ``page`` of the document's original (or its ``crop``), passage ``chunk``'s boxes marked: those of the
        sentences it cites for ``query`` (cited.py) in full, the rest lighter."""
        row = self.documents.registry_row(collection, doc_id)
        if row["file_type"] not in PAGED:
            raise Unprocessable(
                f"The document is a {row['file_type']} file: only PDFs and images are shown as pages.",
                code="NO_PAGE_IMAGES",
                suggestion="Read its text with get_document_pages or get_document_section instead.",
            )
        path = self.originals.path(collection, row["content_hash"])
        if path is None:
            raise NotFound(
                "The document's original is not kept here (indexed before originals were kept, kept by none while "
                "VECTOR_GATEWAY_ORIGINALS_MAX_MB was 0, or refused when the folder was full), so its pages cannot be "
                "shown.",
                code="ORIGINAL_NOT_KEPT",
                suggestion="Ingest the document again with force=true to keep its original; its text stays readable.",
            )
        marks: list[Box] = []
        cited: list[Box] = []
        figures: list[Box] = []
        pages: list[int] = []
        if chunk is not None:
            passage = self._passage(collection, row, chunk)
            boxes = stored_boxes(passage.get("metadata")) or []
            units = stored_units(passage.get("metadata")) or []
            spans = cited_sentences(passage["text"], query) if query else []
            on_page = [b for b in boxes if b.page == page]
            marks = [b.box for b in on_page]
            cited = [b.box for b in on_page if any(b.start < end and start < b.end for start, end in spans)]
            figures = [u.box for u in units if u.page == page and u.kind == "figure"]
            pages = sorted({b.page for b in boxes} | {u.page for u in units})
        image = render(path, row["file_type"], page, marks=marks, cited=cited, figures=figures, crop=crop, fmt=fmt,
                       max_side=max_side)  # fmt: skip
        return ShownPage(image=image, marked=len(marks), cited=cited, passage_pages=pages, figures=figures)

    def release(self, collection: str, content_hash: str) -> None:
        """Drop the original of ``content_hash`` if no document of the collection names it any more."""

        def still_named() -> bool:
            where = And((in_collection(collection), Eq("content_hash", content_hash)))
            return bool(self.store.registry_query(where, ["key"]))

        self.originals.release(collection, content_hash, still_named)

    def sweep(self, grace_s: float) -> int:
        """Originals no document names any more (older than ``grace_s``) go."""

        def named(milvus_name: str) -> set[str]:
            rows = self.store.registry_query(Eq("collection", milvus_name), ["content_hash"])
            return {row["content_hash"] for row in rows}

        return self.originals.sweep(named, grace_s)
