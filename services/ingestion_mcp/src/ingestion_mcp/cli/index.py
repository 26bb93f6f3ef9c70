"""What `ingestion-index` does to a folder of notes: scan it, sync it into the index, clear, report.

Notes are indexed exactly as the obsidian profile expects them: source = the vault-relative path, one
`folder:` tag per ancestor folder (notes.folder_tags). Unchanged files are recognised by the
sha256 of their bytes, the same hash the ingest pipeline stores.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from ingestion_contracts.docling import EXTENSIONS

from ..backend import Backend
from ..errors import CollectionNotFound, ToolFailure, UpstreamError
from ..ingest.notes import folder_tags
from ..ingest.pipeline import BatchItem, Ingestor, IngestOutcome
from ..settings import McpSettings

# Failures that mean "this file has nothing to index", not "something went wrong".
NOTHING_TO_INDEX = frozenset({"NO_TEXT", "EMPTY", "TEXT_TOO_SHORT"})
OnProgress = Callable[[int, list[str]], None]  # files done in this step, lines to print in verbose mode


@dataclass(frozen=True)
class VaultFile:
    rel: str  # vault-relative, forward slashes: the document's source
    path: Path

    def digest(self) -> str:
        return hashlib.sha256(self.path.read_bytes()).hexdigest()


@dataclass
class SyncReport:
    indexed: int = 0
    replaced: int = 0
    unchanged: int = 0
    removed: int = 0
    empty: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    api_failed: list[tuple[str, str]] = field(default_factory=list)

    def summary(self) -> str:
        failed = len(self.failed) + len(self.api_failed)
        parts = [
            f"{self.indexed} indexed", f"{self.replaced} updated", f"{self.unchanged} unchanged",
            f"{self.removed} removed", f"{len(self.empty)} without text", f"{failed} failed",
        ]  # fmt: skip
        return ", ".join(parts)


def _hidden(parts: tuple[str, ...]) -> bool:
    return any(part.startswith(".") for part in parts)


def scan_vault(vault: Path) -> list[VaultFile]:
    """Every supported document under the vault, hidden folders (.obsidian, .git, .trash) and links skipped."""
    found = []
    for path in sorted(vault.rglob("*")):
        rel = path.relative_to(vault)
        if _hidden(rel.parts) or path.is_symlink() or not path.is_file():
            continue
        if path.suffix.lower() in EXTENSIONS:
            found.append(VaultFile(PurePosixPath(*rel.parts).as_posix(), path))
    return found


async def indexed_hashes(backend: Backend, collection: str) -> dict[str, tuple[str, str]]:
    """source -> (doc_id, content_hash) of everything in the collection ({} when it does not exist)."""
    known: dict[str, tuple[str, str]] = {}
    offset = 0
    while True:
        try:
            page = await backend.list_documents(collection, offset=offset, limit=1000)
        except CollectionNotFound:
            return known
        known.update({(doc.key or doc.source): (doc.doc_id, doc.content_hash) for doc in page.documents})
        offset += len(page.documents)
        if not page.documents or offset >= page.total:
            return known


def batches(files: list[VaultFile], size: int) -> Iterator[list[VaultFile]]:
    """Files of one folder together (they share their folder tags), at most `size` per batch."""
    by_folder: dict[str, list[VaultFile]] = defaultdict(list)
    for item in files:
        by_folder[str(PurePosixPath(item.rel).parent)].append(item)
    for group in by_folder.values():
        for start in range(0, len(group), size):
            yield group[start : start + size]


def _record(report: SyncReport, item: VaultFile, outcome: IngestOutcome | ToolFailure) -> str:
    if isinstance(outcome, IngestOutcome):
        counts = {"indexed": "indexed", "replaced": "replaced", "updated": "replaced", "skipped": "unchanged"}
        name = counts[outcome.status]
        setattr(report, name, getattr(report, name) + 1)
        return f"{name:9} {item.rel} ({outcome.chunks} chunks)"
    if outcome.code in NOTHING_TO_INDEX:
        report.empty.append(item.rel)
        return f"{'no text':9} {item.rel}"
    service_down = isinstance(outcome, UpstreamError) and (outcome.status is None or outcome.status >= 500)
    (report.api_failed if service_down else report.failed).append((item.rel, outcome.message))
    return f"{'FAILED':9} {item.rel}: {outcome.message}"


class VaultIndexer:
    def __init__(self, backend: Backend, settings: McpSettings) -> None:
        self.backend = backend
        self.settings = settings
        self.collection = settings.obsidian_collection
        self.ingestor = Ingestor(backend, settings)

    async def plan(self, vault: Path, *, only_changed: bool) -> tuple[list[VaultFile], list[tuple[str, str]]]:
        """(files to send, (source, doc_id) of indexed documents whose file is gone)."""
        files = scan_vault(vault)
        known = await indexed_hashes(self.backend, self.collection)
        present = {item.rel for item in files}
        stale = [(source, doc_id) for source, (doc_id, _) in known.items() if source not in present]
        if only_changed:
            files = [item for item in files if known.get(item.rel, ("", ""))[1] != item.digest()]
        return files, stale

    async def sync(self, files: list[VaultFile], stale: list[tuple[str, str]], on_progress: OnProgress) -> SyncReport:
        report = SyncReport()
        for batch in batches(files, self.settings.index_batch_size):
            items = [BatchItem(file_path=str(item.path), source=item.rel, key=item.rel) for item in batch]
            tags = folder_tags(batch[0].rel)
            outcomes = await self.ingestor.ingest_many(items, collection=self.collection, tags=tags)
            lines = [_record(report, item, outcome) for item, outcome in zip(batch, outcomes, strict=True)]
            on_progress(len(batch), lines)
        for source, doc_id in stale:
            await self.backend.delete_document(self.collection, doc_id)
            report.removed += 1
            on_progress(0, [f"{'removed':9} {source}"])
        return report

    async def clear(self) -> tuple[int, int] | None:
        """Delete the notes collection: (documents, chunks) deleted, or None when there was none."""
        try:
            deleted = await self.backend.delete_collection(self.collection)
        except CollectionNotFound:
            return None
        return deleted.deleted_documents, deleted.deleted_chunks
