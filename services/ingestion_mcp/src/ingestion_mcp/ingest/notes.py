"""The notes collection that `ingestion-index` maintains and the obsidian profile searches.

Notes are keyed by their vault-relative path ("Projects/MyProject.md") and carry one tag per ancestor
folder ("folder:Projects", "folder:Projects/Sub"), so a folder filter is an exact tag match that
includes subfolders. No MCP here: the CLI imports this without the MCP SDK (it starts in well under 2 s).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import PurePosixPath
from typing import Any

from ingestion_contracts.common import MAX_TAG_LENGTH, MAX_TAGS
from ingestion_contracts.gateway import MAX_QUERY_CHARS, SearchHit, SearchRequest

from ..backend import Backend
from ..errors import CollectionNotFound, ToolFailure, UpstreamError, failure_from
from ..library import Library
from ..settings import McpSettings

INDEX_COMMAND = "ingestion-index"
PREVIEW_CHARS = 200
EMBEDDING_PROVIDER = "default"


class ObsidianError(ToolFailure):
    """A failure in the obsidian spec's words: its error_type is also the code the tool's metrics count."""

    def __init__(self, error_type: str, message: str) -> None:
        super().__init__(message, code=error_type)
        self.error_type = error_type


def index_not_found() -> ObsidianError:
    return ObsidianError("IndexNotFoundError", f"Vector index not found. Run '{INDEX_COMMAND} full' to create index.")


def error_json(error: ObsidianError) -> str:
    return json.dumps({"error": True, "error_type": error.error_type, "message": error.message}, ensure_ascii=False)


def as_obsidian_error(exc: BaseException) -> ObsidianError:
    """Any failure as one of the spec's error types (a service's failure is the database's)."""
    if isinstance(exc, ObsidianError):
        return exc
    failure = failure_from(exc)
    if isinstance(exc, UpstreamError) or failure.code in ("INTERNAL_ERROR", "SERVICE_UNAVAILABLE"):
        return ObsidianError("DatabaseError", f"Vector database error: {failure.message}")
    return ObsidianError("ConfigurationError", failure.message)


# -- note paths and folder tags (shared with the ingestion-index CLI) ---------------------
def normalize_folder(folder: str) -> str:
    """'Projects/', '/Projects', 'Projects\\Sub' -> 'Projects', 'Projects/Sub'; '' is the vault root."""
    parts = [p for p in folder.replace("\\", "/").split("/") if p not in ("", ".")]
    if ".." in parts:
        raise ObsidianError("ConfigurationError", f"Invalid folder {folder!r}: '..' is not allowed.")
    return "/".join(parts)


def folder_tag(folder: str) -> str:
    """The tag a note carries for one ancestor folder; long paths are hashed to fit the tag limit."""
    tag = f"folder:{folder}"
    if len(tag) <= MAX_TAG_LENGTH:
        return tag
    return f"folder#{hashlib.sha256(folder.encode()).hexdigest()[:40]}"


def folder_tags(note_path: str) -> list[str]:
    """One tag per ancestor folder of a vault-relative note path (none for notes at the root)."""
    parents = PurePosixPath(note_path).parts[:-1]
    return [folder_tag("/".join(parents[: depth + 1])) for depth in range(min(len(parents), MAX_TAGS))]


def note_summary(hit: SearchHit, total_chunks: int) -> dict[str, Any]:
    path = PurePosixPath(hit.key)
    preview = hit.text if len(hit.text) <= PREVIEW_CHARS else hit.text[:PREVIEW_CHARS].rstrip() + "..."
    return {
        "path": hit.key,
        "title": path.stem,
        "folder": "" if str(path.parent) == "." else str(path.parent),
        "score": round(hit.score, 4),
        "content_preview": preview,
        "chunk_index": hit.chunk_index,
        "total_chunks": total_chunks,
    }


class NoteIndex:
    """The notes collection: search, similarity and status (the tools and the CLI both use it)."""

    def __init__(self, backend: Backend, settings: McpSettings) -> None:
        self.backend = backend
        self.settings = settings
        self.collection = settings.obsidian_collection
        self.library = Library(backend, settings)

    async def _search(self, query: str, top_k: int, tags: list[str] | None = None) -> list[SearchHit]:
        request = SearchRequest(
            query=query[:MAX_QUERY_CHARS], collections=[self.collection], mode="semantic", top_k=top_k,
            tags=tags or [],
        )  # fmt: skip
        try:
            found = await self.library.search(request)
        except CollectionNotFound:
            raise index_not_found() from None
        if found.total_searched == 0:
            raise index_not_found()
        return found.hits

    async def search(self, query: str, n_results: int, folder: str | None) -> dict[str, Any]:
        where = normalize_folder(folder) if folder else ""
        hits = await self._search(query, n_results, [folder_tag(where)] if where else None)
        totals = await self.library.chunk_counts(self.collection, [hit.key for hit in hits])
        results = [note_summary(hit, totals[hit.key]) for hit in hits]
        return {"results": results, "total": len(results), "query": query}

    async def similar(self, path: str, n_results: int) -> dict[str, Any]:
        source = normalize_folder(path)
        try:
            doc = await self.library.find(self.collection, source)
            ranked = await self.library.similar(self.collection, doc, n_results) if doc else []
        except CollectionNotFound:
            raise index_not_found() from None
        if doc is None:
            raise ObsidianError(
                "NoteNotFoundError",
                f"Note not found in index: {path}. Give the vault-relative path (e.g. 'Projects/MyProject.md'), "
                f"or run '{INDEX_COMMAND} update' if the note is new.",
            )
        totals = await self.library.chunk_counts(self.collection, [hit.key for hit in ranked])
        similar = [note_summary(hit, totals[hit.key]) for hit in ranked]
        return {"source_note": source, "similar_notes": similar, "total": len(similar)}

    def data_path(self) -> str:
        if not self.settings.embedded:
            return str(self.settings.vector_gateway_url)
        return str(self.settings.data_dir.expanduser().resolve())

    async def status(self) -> dict[str, Any]:
        dimension: int | None
        try:
            info = await self.backend.get_collection(self.collection)
            chunks, notes = info.chunk_count, info.document_count
            model, dimension = info.embedding_model, info.dimension
        except CollectionNotFound:
            described = await self.backend.embedding_model()
            chunks, notes, model, dimension = 0, 0, described.model, described.dimension
        updated = None
        if notes:
            newest = await self.backend.list_documents(self.collection, limit=1)
            updated = newest.documents[0].updated_at if newest.documents else None
        return {
            "status": "ready" if chunks else "empty",
            "collection_name": self.collection,
            "total_documents": chunks,
            "total_notes": notes,
            "embedding_provider": EMBEDDING_PROVIDER,
            "embedding_model": model,
            "embedding_dimension": dimension,
            "last_updated": updated,
            "chroma_path": self.data_path(),
        }
