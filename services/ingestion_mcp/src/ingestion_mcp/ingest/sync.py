"""Keep a collection in step with a folder: walk, compare, ingest what changed, prune what is gone.

One engine for the `sync_folder` tool and `ingestion-index update` (issue 29).

Where the per-file state lives: in the collection itself. The gateway registry already keeps, per
document, its key, content_hash and metadata, durably and shared by every replica and worker; each
synced document also carries `sync_size` and `sync_mtime_ns` in its metadata. So a restart or another
replica sees the same state, and there is no second store to drift from the index. An unchanged file
(same size and mtime as recorded) is skipped without reading its body; otherwise its sha256 (read in
blocks) decides, the same hash the ingest pipeline stores.

Memory: the walk is a generator over os.scandir and files are sent in batches of
`settings.index_batch_size`; what is held for the whole run is one small tuple per indexed document
(key, doc_id, hash, size, mtime), never file bodies.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import stat
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from ingestion_contracts.docling import EXTENSIONS

from ..backend import Backend
from ..errors import CollectionNotFound, ToolFailure, UpstreamError
from ..settings import McpSettings
from ..sources.paths import allowed_real_roots, ensure_inside, inside_any
from .pipeline import BatchItem, Ingestor, IngestOutcome
from .sync_lock import folder_sync_lock, lock_path

SIZE_KEY = "sync_size"
MTIME_KEY = "sync_mtime_ns"
HASH_BLOCK = 1 << 20
# Failures that mean "this file has nothing to index", not "something went wrong".
NOTHING_TO_INDEX = frozenset({"NO_TEXT", "EMPTY", "TEXT_TOO_SHORT"})
Progress = Callable[[int, int, str], Awaitable[None]]  # files done, files in all, message
TagsFor = Callable[[str], list[str]]
# Told of each file's verdict as it is reached: (verdict, folder-relative path, detail). Verdicts: added,
# replaced, unchanged, removed, refused, empty, failed, service (a service failed, not the file).
OnFile = Callable[[str, str, str], None]


@dataclass(frozen=True)
class SyncOptions:
    folder: str
    collection: str
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    recursive: bool = True
    prune: bool = True
    dry_run: bool = False
    key_prefix: str | None = None  # None: the folder's real path; "": folder-relative keys (the notes vault)
    recheck: bool = False  # every file goes to the pipeline, which still skips an unchanged hash (`full`)
    # Only these folder-relative paths (files or folders) changed: a watched folder's batch is synced in time
    # proportional to the batch, not to the folder. Empty: the whole folder.
    paths: tuple[str, ...] = ()


@dataclass(frozen=True)
class Entry:
    rel: str  # folder-relative, forward slashes
    path: Path
    size: int
    mtime_ns: int


@dataclass(frozen=True)
class Refusal:
    rel: str
    reason: str


@dataclass(frozen=True)
class Failure:
    rel: str
    reason: str
    kind: str = "failed"  # refused (by the walk), empty (nothing to index), service (a service failed), failed

    def __str__(self) -> str:
        return f"{self.rel}: {self.reason}"


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
    dry_run: bool = False
    cancelled: bool = False

    def of_kind(self, *kinds: str) -> list[Failure]:
        return [f for f in self.failed if f.kind in kinds]

    def counts(self) -> dict[str, int]:
        return {
            "added": len(self.added), "replaced": len(self.replaced), "unchanged": self.unchanged,
            "removed": len(self.removed), "failed": len(self.failed),
        }  # fmt: skip


def _matches(rel: str, patterns: tuple[str, ...]) -> bool:
    name = PurePosixPath(rel).name
    return any(fnmatch.fnmatchcase(rel, p) or fnmatch.fnmatchcase(name, p) for p in patterns)


def matches_filters(rel: str, options: SyncOptions) -> bool:
    """Whether the include/exclude globs take this folder-relative path."""
    if options.include and not _matches(rel, options.include):
        return False
    return not _matches(rel, options.exclude)


def walk(root: Path, roots: list[Path], options: SyncOptions, start: Path | None = None) -> Iterator[Entry | Refusal]:
    """Every candidate file under `root` (or its sub-folder `start`), streamed; links out of `roots` (real paths)
    and special files refused."""
    stack = [start or root]
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            yield Refusal(_rel(root, Path(folder)) or ".", f"cannot list folder: {exc.strerror or exc}")
            continue
        for entry in entries:
            if entry.name.startswith("."):
                continue
            path = Path(entry.path)
            rel = _rel(root, path)
            yield from _one(path, rel, root, roots, options, stack)


def in_scope(root: Path, roots: list[Path], options: SyncOptions) -> Iterator[Entry | Refusal]:
    """The whole folder, or only the changed paths: a folder among them is walked, a file looked at, and a path
    that is gone yields nothing (the prune drops its documents). Hidden paths and, without recursion, paths in
    sub-folders are out of scope as in a full walk."""
    if not options.paths:
        yield from walk(root, roots, options)
        return
    wanted = set(options.paths)
    for rel in sorted(wanted):
        parts = PurePosixPath(rel).parts
        if any("/".join(parts[:n]) in wanted for n in range(1, len(parts))):
            continue  # a folder above it is in the batch: walked once, with it
        if not parts or rel.startswith("/") or ".." in parts or any(p.startswith(".") for p in parts):
            continue
        if not options.recursive and len(parts) > 1:
            continue
        path = root.joinpath(*parts)
        if path.is_dir() and not path.is_symlink():
            if options.recursive:
                yield from walk(root, roots, options, start=path)
        elif path.exists() or path.is_symlink():
            yield from _one(path, rel, root, roots, options, [])


def _under(key: str, prefix: str, paths: tuple[str, ...]) -> bool:
    """Whether a stored key lies at or under one of the changed paths (all keys when the whole folder synced)."""
    return not paths or any(key == prefix + rel or key.startswith(prefix + rel.rstrip("/") + "/") for rel in paths)


def _one(
    path: Path, rel: str, root: Path, roots: list[Path], options: SyncOptions, stack: list[Path]
) -> Iterator[Entry | Refusal]:
    if path.is_symlink():
        try:
            real = path.resolve(strict=True)
        except (OSError, RuntimeError):
            yield Refusal(rel, "broken or looping symbolic link")
            return
        if not inside_any(real, roots):
            yield Refusal(rel, "symbolic link that leads outside the allowed folders")
            return
        if real.is_dir():
            return  # linked folders are not followed: no loops, no double counting
    try:
        st = path.stat()
    except OSError as exc:
        yield Refusal(rel, f"cannot stat: {exc.strerror or exc}")
        return
    if stat.S_ISDIR(st.st_mode):
        if options.recursive and not path.is_symlink():
            stack.append(path)
        return
    if not stat.S_ISREG(st.st_mode):
        if matches_filters(rel, options):
            yield Refusal(rel, "not a regular file (fifo, socket or device)")
        return
    if path.suffix.lower() not in EXTENSIONS or not matches_filters(rel, options):
        return
    if not os.access(path, os.R_OK):
        yield Refusal(rel, "file is not readable (permission denied)")
        return
    yield Entry(rel, path, st.st_size, st.st_mtime_ns)


def _rel(root: Path, path: Path) -> str:
    return PurePosixPath(*path.relative_to(root).parts).as_posix() if path != root else ""


def digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(HASH_BLOCK):
            h.update(block)
    return h.hexdigest()


def _int(value: object) -> int | None:
    return value if isinstance(value, int) else None


async def known_documents(backend: Backend, collection: str, prefix: str) -> dict[str, Known]:
    """key -> what the registry holds, for every document whose key lies under `prefix` (one read)."""
    try:
        stamps = await backend.document_stamps(collection, prefix, [SIZE_KEY, MTIME_KEY])
    except CollectionNotFound:
        return {}
    return {
        s.key: Known(s.doc_id, s.content_hash, _int(s.metadata.get(SIZE_KEY)), _int(s.metadata.get(MTIME_KEY)))
        for s in stamps.stamps
    }


async def _no_progress(done: int, seen: int, message: str) -> None:
    return None


def _no_lines(verdict: str, rel: str, detail: str) -> None:
    return None


def folder_root(folder: str, settings: McpSettings) -> Path:
    """The real path of a folder under the allowed roots; anything else is refused (before a job is queued)."""
    root = ensure_inside(folder, settings.allowed_roots)
    if not root.is_dir():
        raise ToolFailure(f"Not a folder: {folder}.", "Pass a folder under the allowed roots.")
    return root


class FolderSync:
    """The one sync engine: `run` walks, ingests new and changed files, and prunes what is gone."""

    def __init__(self, backend: Backend, settings: McpSettings, ingestor: Ingestor | None = None) -> None:
        self.backend = backend
        self.settings = settings
        self.ingestor = ingestor or Ingestor(backend, settings)

    async def run(
        self, options: SyncOptions, *, tags_for: TagsFor = lambda rel: [], progress: Progress = _no_progress,
        cancelled: Callable[[], bool] = lambda: False, on_file: OnFile = _no_lines,
    ) -> SyncReport:  # fmt: skip
        root = folder_root(options.folder, self.settings)
        prefix = root.as_posix().rstrip("/") + "/" if options.key_prefix is None else options.key_prefix
        # One sync of this folder into this collection at a time, whichever process runs it (sync_lock.py):
        # the second reads the state the first left, so it finds nothing left to do.
        async with folder_sync_lock(lock_path(self.settings.data_dir, options.collection, prefix)):
            return await self._run(options, root, prefix, tags_for, progress, cancelled, on_file)

    async def _run(
        self, options: SyncOptions, root: Path, prefix: str, tags_for: TagsFor, progress: Progress,
        cancelled: Callable[[], bool], on_file: OnFile,
    ) -> SyncReport:  # fmt: skip
        roots = allowed_real_roots(self.settings.allowed_roots)
        known = await known_documents(self.backend, options.collection, prefix)
        report = SyncReport(dry_run=options.dry_run)
        seen: set[str] = set()
        pending: list[Pending] = []
        # Counted first (names and stats only, streamed): progress reads "file 37/1,204" from the start.
        expected = sum(1 for _ in in_scope(root, roots, options))
        done = walked = 0
        for item in in_scope(root, roots, options):
            if cancelled():
                report.cancelled = True
                break
            walked += 1
            total = max(expected, walked)  # files added during the run count too
            if isinstance(item, Refusal):
                seen.add(prefix + item.rel)  # a refused file keeps what it had: no prune on a passing error
                _fail(report, on_file, Failure(item.rel, item.reason, "refused"))
                done += 1
                continue
            key = prefix + item.rel
            seen.add(key)
            verdict = self._compare(item, known.get(key), options)
            if isinstance(verdict, Failure) or verdict == "unchanged":
                if isinstance(verdict, Failure):
                    _fail(report, on_file, verdict)
                else:
                    report.unchanged += 1
                    on_file("unchanged", item.rel, "")
                done += 1
                continue
            pending.append(Pending(item, key))
            if len(pending) >= self.settings.index_batch_size:
                done += await self._send(pending, options, known, report, tags_for, on_file)
                pending = []
                await progress(done, total, f"file {done:,}/{total:,}")
        if pending and not report.cancelled:
            done += await self._send(pending, options, known, report, tags_for, on_file)
        total = max(expected, walked)
        await progress(done, total, f"file {done:,}/{total:,}")
        if options.prune and not report.cancelled:
            await self._prune(known, seen, prefix, options, report, on_file)
        return report

    @staticmethod
    def _compare(item: Entry, was: Known | None, options: SyncOptions) -> str | Failure:
        """new, changed or unchanged (by size and mtime, else by content hash)."""
        if was is None:
            return "new"  # nothing stored to compare with: the pipeline reads and hashes it once
        if options.recheck:
            return "changed"  # the pipeline compares the hash itself
        if was.size == item.size and was.mtime_ns == item.mtime_ns:
            return "unchanged"  # no file body read
        try:
            fresh = digest(item.path)
        except OSError as exc:
            return Failure(item.rel, f"cannot read: {exc.strerror or exc}")
        # Same content, new mtime (a checkout, a copy, a save without edits): unchanged, nothing written. It is
        # hashed again at the next sync: a read costs far less than the relabel that would record the new mtime
        # (the gateway rewrites every chunk of a relabelled document: 249 s for 1,000 files, bench.sync).
        return "unchanged" if was.content_hash == fresh else "changed"

    async def _send(
        self, pending: list[Pending], options: SyncOptions, known: dict[str, Known], report: SyncReport,
        tags_for: TagsFor, on_file: OnFile,
    ) -> int:  # fmt: skip
        if options.dry_run:
            for p in pending:
                verdict = "replaced" if p.key in known else "added"
                (report.replaced if verdict == "replaced" else report.added).append(p.entry.rel)
                on_file(verdict, p.entry.rel, "")
            return len(pending)
        groups: dict[tuple[str, ...], list[Pending]] = {}
        for p in pending:
            groups.setdefault(tuple(tags_for(p.entry.rel)), []).append(p)
        for tags, group in groups.items():
            items = [
                BatchItem(file_path=str(p.entry.path), source=p.entry.rel, key=p.key,
                          metadata={SIZE_KEY: p.entry.size, MTIME_KEY: p.entry.mtime_ns})
                for p in group
            ]  # fmt: skip
            outcomes = await self.ingestor.ingest_many(items, collection=options.collection, tags=list(tags))
            for p, outcome in zip(group, outcomes, strict=True):
                _record(report, p, p.key in known, outcome, on_file)
        return len(pending)

    async def _prune(
        self, known: dict[str, Known], seen: set[str], prefix: str, options: SyncOptions, report: SyncReport,
        on_file: OnFile,
    ) -> None:  # fmt: skip
        prefix_len = len(options.key_prefix or "")  # a label is the key without a folder-relative prefix
        for key, was in known.items():
            if key in seen or not _under(key, prefix, options.paths):
                continue
            label = key[prefix_len:]
            if not options.dry_run:
                try:
                    await self.backend.delete_document(options.collection, was.doc_id)
                except (ToolFailure, OSError) as exc:  # one failed delete never stops the rest
                    _fail(report, on_file, Failure(label, f"could not remove: {exc}"))
                    continue
            report.removed.append(label)
            on_file("removed", label, "")


@dataclass(frozen=True)
class Pending:
    entry: Entry
    key: str


def _fail(report: SyncReport, on_file: OnFile, failure: Failure) -> None:
    report.failed.append(failure)
    on_file(failure.kind, failure.rel, failure.reason)


def _failure(rel: str, exc: ToolFailure) -> Failure:
    if exc.code in NOTHING_TO_INDEX:
        return Failure(rel, exc.message, "empty")
    service_down = isinstance(exc, UpstreamError) and (exc.status is None or exc.status >= 500)
    return Failure(rel, exc.message, "service" if service_down else "failed")


def _record(
    report: SyncReport, p: Pending, existed: bool, outcome: IngestOutcome | ToolFailure, on_file: OnFile
) -> None:
    rel = p.entry.rel
    if isinstance(outcome, ToolFailure):
        _fail(report, on_file, _failure(rel, outcome))
        return
    detail = f"{outcome.chunks} chunks"
    if outcome.status == "skipped":
        report.unchanged += 1
        on_file("unchanged", rel, detail)
    elif existed or outcome.status in ("replaced", "updated"):
        report.replaced.append(rel)
        on_file("replaced", rel, detail)
    else:
        report.added.append(rel)
        on_file("added", rel, detail)
