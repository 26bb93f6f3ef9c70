"""What one folder sync did, as its answer says it: the counts that account for every file, the failures with their
reasons, what the removal bound kept, what is stale, what was passed over (ingest/sync.py fills it)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import NamedTuple

SETTLED_FOR_S = 3600.0  # a settled failure is read again after this long anyway (settings may have changed)


@dataclass(frozen=True)
class Failure:
    rel: str
    reason: str
    kind: str = "failed"  # refused (by the walk), empty (nothing to index), service (a service failed), failed
    # (size, mtime_ns) of the file when its content decided the failure (no text, not UTF-8, a damaged or unsupported
    # file): it fails the same way until it changes, so the next syncs do not read it again (Settled).
    settled: tuple[int, int] | None = None
    again: bool = False  # failed at an earlier sync and unchanged since: not read again this time

    def __str__(self) -> str:
        return f"{self.rel}: {self.reason}" + (" (unchanged since it failed: not read again)" if self.again else "")


class Settled(NamedTuple):
    """A file that failed for its content, as the folder's record keeps it (folders.FolderRecord.settled; a tuple, so
    the record's JSON holds it as a list): not read again while its size and mtime stay and it is not expired."""

    size: int
    mtime_ns: int
    reason: str
    kind: str
    at: float  # when it was last read (epoch seconds)

    def expired(self, now: float | None = None) -> bool:
        return (time.time() if now is None else now) - self.at >= SETTLED_FOR_S


@dataclass(frozen=True)
class Known:
    doc_id: str
    content_hash: str
    size: int | None
    mtime_ns: int | None


@dataclass
class SyncReport:
    added: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    unchanged: int = 0
    removed: list[str] = field(default_factory=list)
    failed: list[Failure] = field(default_factory=list)
    held: list[str] = field(default_factory=list)  # removals the bound withheld (documents kept)
    bound_why: str = ""  # what the bound counted when it held them
    skipped: dict[str, int] = field(default_factory=dict)  # files that cannot be ingested, by extension
    ignored: dict[str, int] = field(default_factory=dict)  # ignore file -> files and folders it hid
    excluded: int = 0  # files the include/exclude globs left out
    hidden: int = 0  # entries named ".*", never looked into
    unmatched: list[str] = field(default_factory=list)  # globs that matched no file (a whole-folder sync's)
    # Documents kept while their file fails (their last good version is still searched): label -> why. A folder that
    # cannot be listed is one entry, its label ending in "/", for all its documents (`unreadable` counts them).
    stale: dict[str, tuple[str, int]] = field(default_factory=dict)  # label -> (why, documents)
    unreadable: int = 0
    moved: int = 0  # documents removed at once because their file moved (their new path's document is in)
    owned: list[str] = field(default_factory=list)  # sub-folders synced on their own into the collection
    folder_documents: int = 0  # the folder's documents in the collection before the sync (the bound's base)
    max_removals: int | None = None
    dry_run: bool = False
    cancelled: bool = False

    def of_kind(self, *kinds: str) -> list[Failure]:
        return [f for f in self.failed if f.kind in kinds]

    def counts(self) -> dict[str, int]:
        """The five counts, then `held` and `skipped` when there are any."""
        counts = {
            "added": len(self.added), "replaced": len(self.replaced), "unchanged": self.unchanged,
            "removed": len(self.removed), "failed": len(self.failed),
        }  # fmt: skip
        if self.held:
            counts["held"] = len(self.held)
        if self.skipped:
            counts["skipped"] = sum(self.skipped.values())
        if self.ignored:
            counts["ignored"] = sum(self.ignored.values())
        if self.excluded:
            counts["excluded"] = self.excluded
        if self.stale:
            counts["stale"] = sum(n for _, n in self.stale.values())
        return counts

    def stale_note(self) -> str:
        """What is kept while its file fails ("" when nothing)."""
        if not self.stale:
            return ""
        folders = ", ".join(rel or "." for rel in self.stale if rel.endswith("/") or not rel)[:200]
        unreadable = (f"; {self.unreadable} of them lie in folders that cannot be listed (kept, unreadable: "
                      f"{folders})") if self.unreadable else ""  # fmt: skip
        return (
            f"{self.counts()['stale']} documents are stale: their files now fail and their last good version is "
            f"still searched, marked stale in search hits, list_documents and get_collections until the file reads "
            f"again or the document is removed{unreadable}."
        )

    def passed_over(self) -> str:
        """What the walk left out, and why ("" when nothing): ignore files by name, the globs, hidden entries."""
        parts = []
        if self.ignored:
            ranked = sorted(self.ignored.items(), key=lambda kv: (-kv[1], kv[0]))
            by = ", ".join(f"{source} {n}" for source, n in ranked)
            parts.append(f"{sum(self.ignored.values())} ignored by ignore files ({by[:300]}; a folder counts once)")
        if self.excluded:
            parts.append(f"{self.excluded} left out by include/exclude")
        if self.hidden:
            parts.append(f"{self.hidden} hidden entries (names starting with '.') not looked into")
        return f"Passed over: {'; '.join(parts)}." if parts else ""

    def owned_note(self) -> str:
        shown = ", ".join(self.owned[:10])
        return (f"Sub-folders synced on their own into this collection own their documents and were left to their "
                f"syncs: {shown}." if self.owned else "")  # fmt: skip

    def bound_note(self) -> str:
        """What the removal bound kept and how to go past it, and the globs that matched nothing ("": neither)."""
        unmatched = ""
        if self.unmatched:
            unmatched = (f"{', '.join(self.unmatched)} matched no file in the folder: check the pattern (globs match "
                         "the path inside the folder or the file name). ")  # fmt: skip
        if not self.held:
            return unmatched.strip()
        n = len(self.held)
        verb = "would keep" if self.dry_run else "kept"
        return (
            f"{unmatched}Removal bound: {verb} all {n} documents whose files are gone or no longer match "
            f"({self.bound_why}). If that is intended, sync again with max_removals={n}; if not, check the folder, "
            "include, exclude and recursive."
        )
