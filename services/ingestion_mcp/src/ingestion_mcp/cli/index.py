"""What `ingestion-index` does to a folder of notes: sync it into the index, clear it, report.

`full` and `update` run the one folder-sync engine (ingest/folder_sync.py, also behind the `sync_folder` tool and
watching) with the notes' own keys: key = source = the vault-relative path, one `folder:` tag per ancestor
folder (notes.folder_tags), as the obsidian profile expects. `update` skips a file whose size and mtime are
as recorded without reading it, and compares the sha256 of the others; `full` hands every file to the
pipeline, which still skips an unchanged hash. Both drop the documents of files gone from the vault.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..backend import Backend
from ..errors import CollectionNotFound, ToolFailure
from ..ingest.acquire import now_iso
from ..ingest.folder_sync import FolderSync, SyncOptions
from ..ingest.folders import LastSync, folder_store
from ..ingest.notes import folder_tags
from ..settings import McpSettings

OnProgress = Callable[[int, list[str]], None]  # files done in this step, lines to print in verbose mode
# The engine's verdicts as this command has always named them in its lines.
LABELS = {"added": "indexed", "replaced": "updated", "unchanged": "unchanged", "removed": "removed",
          "empty": "no text", "refused": "FAILED", "failed": "FAILED", "service": "FAILED"}  # fmt: skip


@dataclass
class SyncReport:
    indexed: int = 0
    replaced: int = 0
    unchanged: int = 0
    removed: int = 0
    empty: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    api_failed: list[tuple[str, str]] = field(default_factory=list)
    held: int = 0  # notes gone from the vault kept by the removal bound

    def summary(self) -> str:
        failed = len(self.failed) + len(self.api_failed)
        parts = [
            f"{self.indexed} indexed", f"{self.replaced} updated", f"{self.unchanged} unchanged",
            f"{self.removed} removed", f"{len(self.empty)} without text", f"{failed} failed",
        ]  # fmt: skip
        return ", ".join(parts)


class VaultIndexer:
    def __init__(self, backend: Backend, settings: McpSettings) -> None:
        self.backend = backend
        self.settings = settings
        self.collection = settings.obsidian_collection
        self.engine = FolderSync(backend, settings)

    async def sync(
        self, vault: Path, *, only_changed: bool, on_progress: OnProgress, max_removals: int | None = None
    ) -> SyncReport:
        """Bring the notes collection in step with the vault (every file re-checked unless ``only_changed``)."""
        options = SyncOptions(folder=str(vault), collection=self.collection, key_prefix="", recheck=not only_changed,
                              max_removals=max_removals)  # fmt: skip

        def line(verdict: str, rel: str, detail: str) -> None:
            if verdict == "unchanged" and not detail:  # skipped by size and mtime: not even sent, not printed
                on_progress(1, [])
                return
            label = LABELS[verdict]
            on_progress(0 if verdict == "removed" else 1, [f"{label:9} {rel}" + (f": {detail}" if label == "FAILED"
                        else f" ({detail})" if detail else "")])  # fmt: skip

        began = time.perf_counter()
        done = await self.engine.run(options, tags_for=folder_tags, on_file=line)
        seconds = round(time.perf_counter() - began, 2)
        last = LastSync(at=now_iso(), trigger="cli", seconds=seconds, counts=done.counts())
        # get_collections and the console show the vault's last sync like any synced folder's; a record that
        # cannot be written loses only that (the index is in step)
        with contextlib.suppress(ToolFailure, OSError):
            await folder_store(self.settings).change(self.collection, str(vault), last_sync=last)
        return SyncReport(
            indexed=len(done.added), replaced=len(done.replaced), unchanged=done.unchanged, removed=len(done.removed),
            empty=[f.rel for f in done.of_kind("empty")],
            failed=[(f.rel, f.reason) for f in done.of_kind("failed", "refused")],
            api_failed=[(f.rel, f.reason) for f in done.of_kind("service")], held=len(done.held),
        )  # fmt: skip

    async def clear(self) -> tuple[int, int] | None:
        """Delete the notes collection: (documents, chunks) deleted, or None when there was none."""
        try:
            deleted = await self.backend.delete_collection(self.collection)
        except CollectionNotFound:
            return None
        return deleted.deleted_documents, deleted.deleted_chunks
