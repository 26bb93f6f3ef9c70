"""Keep a collection in step with a folder: walk, compare, ingest what changed, prune what is gone.

One engine for the `sync_folder` tool, watching and `ingestion-index update` (issue 29; issue 37 made it safe:
docs/sync.md). What is looked at (globs, ignore files, links, which files can be read) is ingest/walk.py.

Where the per-file state lives: in the collection itself. The gateway registry already keeps, per
document, its key, content_hash and metadata, durably and shared by every replica and worker; each
synced document also carries `sync_size` and `sync_mtime_ns` in its metadata. So a restart or another
replica sees the same state, and there is no second store to drift from the index. An unchanged file
(same size and mtime as recorded) is skipped without reading its body; otherwise its sha256 (read in
blocks) decides, the same hash the ingest pipeline stores. Each document is written whole (the gateway
replaces one atomically), so a sync stopped anywhere (cancelled, its worker killed, its folder gone) leaves
whole documents that the next sync finds in step: it goes on, it does not write them twice.

Removal is bounded (ingest/removal_bound.py): a sync that would take the folder's removals of the last 10 minutes
past 25% and 10 of its documents, or past half of them, removes none (rsync's and rclone's --max-delete), says so,
and still adds and replaces; `max_removals` sets the bound; an include or exclude glob that matched no file removes
nothing. A folder that disappears or is replaced during the sync prunes nothing.

Memory: files are sent in batches of `settings.index_batch_size`; what is held for the whole run is one small
tuple per indexed document (key, doc_id, hash, size, mtime) and one small record per file walked (its path, size and
mtime: the walk is kept, not done twice), never file bodies.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import stat
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass
from pathlib import Path

from ingestion_contracts.gateway import MAX_KEY_CHARS

from ..backend import Backend
from ..errors import CollectionNotFound, ToolFailure, UpstreamError, failure_from
from ..settings import McpSettings
from ..sources.file_names import escaped, file_of
from ..sources.paths import allowed_real_roots, ensure_inside
from .acquire import from_file
from .folder_lock import folder_sync_lock, lock_path
from .pipeline import BatchItem, Ingestor, IngestOutcome
from .removal_bound import NoWindow, Window, judge
from .sync_report import Failure, Known, Settled, SyncReport
from .walk import Entry, Refusal, Skipped, SyncOptions, Walk, check_patterns, matches_filters, scope_labels

log = logging.getLogger("ingestion_mcp.sync")
__all__ = ["FolderSync", "SyncOptions", "SyncReport", "check_patterns", "folder_root", "matches_filters"]
SIZE_KEY = "sync_size"
MTIME_KEY = "sync_mtime_ns"
HASH_BLOCK = 1 << 20
PROGRESS_EVERY_S = 0.5  # while comparing files, at most this often
# Failures that mean "this file has nothing to index", not "something went wrong".
NOTHING_TO_INDEX = frozenset({"NO_TEXT", "EMPTY", "TEXT_TOO_SHORT"})
# Failures the file's content decides (with the converter's 4xx answers): the same bytes fail the same way.
SETTLED_CODES = NOTHING_TO_INDEX | {"UNSUPPORTED_FORMAT", "FILE_TOO_LARGE", "TEXT_TOO_LONG"}
Progress = Callable[[float, int, str], Awaitable[None]]  # files done, files in all, message
TagsFor = Callable[[str], list[str]]
# Told of each file's verdict as it is reached: (verdict, folder-relative path, detail). Verdicts: added,
# replaced, unchanged, removed, refused, empty, failed, service (a service failed, not the file).
OnFile = Callable[[str, str, str], None]
# The pipeline's stages as a sync's progress names them ("file 37/1,204: embedding").
STAGES = {"downloading": "reading"}


def folder_identity(root: Path) -> tuple[int, int] | None:
    """(device, inode) of the folder, None when it is not there: a folder deleted or moved, even if made again
    under the same name, is another folder."""
    try:
        st = os.stat(root)
    except OSError:
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISDIR(st.st_mode) else None


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


async def _no_progress(done: float, seen: int, message: str) -> None:
    return None


def _no_lines(verdict: str, rel: str, detail: str) -> None:
    return None


async def remove_folder_documents(backend: Backend, collection: str, known: dict[str, Known]) -> list[str]:
    """Delete these documents (a folder that is gone, removed on request); the keys removed."""
    removed = []
    for key, was in known.items():
        try:
            await backend.delete_document(collection, was.doc_id)
        except CollectionNotFound:
            break
        except ToolFailure as exc:  # one that cannot be removed now is left; the rest go
            log.warning("a document of a folder that is gone was not removed: %s", exc.message)
            continue
        removed.append(key)
    return removed


def folder_prefix(root: Path) -> str:
    """What every key of the folder's documents starts with: its real path, escaped (ingest/file_names.py), and '/'."""
    return escaped(root.as_posix().rstrip("/")) + "/"


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
        self.window: Window = NoWindow()
        self.moves: dict[str, list[tuple[str, str]]] | None = None  # content hash -> documents whose file is gone
        self.seen_moved: set[str] = set()
        self.owned: list[str] = []

    async def known(self, collection: str, prefix: str) -> dict[str, Known]:
        """What the registry holds under `prefix` (known_documents)."""
        return await known_documents(self.backend, collection, prefix)

    async def remove(self, collection: str, known: dict[str, Known]) -> list[str]:
        """Delete these documents (remove_folder_documents); the keys removed."""
        return await remove_folder_documents(self.backend, collection, known)

    async def run(
        self, options: SyncOptions, *, tags_for: TagsFor = lambda rel: [], progress: Progress = _no_progress,
        cancelled: Callable[[], bool] = lambda: False, on_file: OnFile = _no_lines, report: SyncReport | None = None,
        window: Window | None = None, settled: Mapping[str, Settled] | None = None,
    ) -> SyncReport:  # fmt: skip
        """Sync once. `report` (given) is filled as the sync goes: what was done before a failure is in it.
        `window`: the folder's recent removals, which the bound counts (None: this sync's alone). `settled`: files
        that failed for their content at an earlier sync (the folder's record), not read again while unchanged."""
        check_patterns(options.include, options.exclude)
        root = folder_root(options.folder, self.settings)
        prefix = folder_prefix(root) if options.key_prefix is None else options.key_prefix
        report = report if report is not None else SyncReport()
        report.dry_run, report.max_removals = options.dry_run, options.max_removals
        # One sync of this folder into this collection at a time, whichever process runs it (folder_lock.py):
        # the second reads the state the first left, so it finds nothing left to do.
        async with folder_sync_lock(lock_path(self.settings.data_dir, options.collection, prefix)):
            self.window = window or NoWindow()
            self.settled = {} if options.recheck else dict(settled or {})
            self.moves, self.seen_moved = None, set()
            self.owned = [folder_prefix(Path(f)) for f in options.elsewhere]
            await self._run(options, root, prefix, tags_for, progress, cancelled, on_file, report)
        return report

    async def _run(
        self, options: SyncOptions, root: Path, prefix: str, tags_for: TagsFor, progress: Progress,
        cancelled: Callable[[], bool], on_file: OnFile, report: SyncReport,
    ) -> None:  # fmt: skip
        identity = folder_identity(root)
        known = await known_documents(self.backend, options.collection, prefix)
        report.folder_documents = len(known)
        walk = Walk(root, allowed_real_roots(self.settings.allowed_roots), options, lambda rel: prefix + rel in known)
        seen: set[str] = set()
        unlisted: list[str] = []  # folders that could not be listed: their documents are kept
        pending: list[Pending] = []
        # Walked once, first (names and stats only): progress reads "file 37/1,204" from the start. The walk is kept
        # (one small record per file) rather than walked again: at 10,000 files the second walk was 0.45 s of a 1.8 s
        # unchanged re-sync (issue 48).
        items = list(walk.in_scope())
        expected = sum(1 for item in items if not isinstance(item, Skipped))
        done = walked = 0
        told = time.monotonic()
        await progress(0, expected, f"file 0/{expected:,}: comparing")
        async with InFlight() as sends:  # the next batch is read and chunked while one is embedded
            for item in items:
                if cancelled():
                    report.cancelled = True
                    break
                if isinstance(item, Skipped):
                    report.skipped[item.extension] = report.skipped.get(item.extension, 0) + 1
                    continue
                walked += 1
                total = max(expected, walked)  # files added during the run count too
                send = self._look(item, prefix + item.rel, known, options, report, on_file, seen, unlisted)
                if send is None:
                    done += 1
                else:
                    pending.append(send)
                if len(pending) >= self.settings.index_batch_size:
                    stage = sends.in_turn(_batch(progress, done, total, pending))
                    await sends.send(self._send(pending, options, known, report, tags_for, on_file, stage))
                    done += len(pending)
                    pending = []
                    told = time.monotonic()
                elif time.monotonic() - told >= PROGRESS_EVERY_S:  # hashing a large folder's touched files
                    await progress(done, total, f"file {done:,}/{total:,}: comparing")
                    told = time.monotonic()
            total = max(expected, walked)
            if pending and not report.cancelled:
                stage = sends.in_turn(_batch(progress, done, total, pending))
                await sends.send(self._send(pending, options, known, report, tags_for, on_file, stage))
                done += len(pending)
            await sends.drain()
            await progress(done, total, f"file {done:,}/{total:,}: done")
        tally = walk.tally
        report.ignored, report.excluded, report.hidden = dict(tally.ignored), tally.excluded, tally.hidden
        report.owned = tally.owned
        if not options.paths:  # a watch batch looks at a few paths: a glob matching none of those means nothing
            report.unmatched = tally.unmatched(options)
        self._stale(report, known, prefix, unlisted)
        if folder_identity(root) != identity:  # gone, or moved and made again: what was not seen is not "gone"
            raise vanished(report)
        if options.prune and not report.cancelled:
            await self._prune(known, seen, unlisted, prefix, options, report, on_file)

    @staticmethod
    def _stale(report: SyncReport, known: dict[str, Known], prefix: str, unlisted: list[str]) -> None:
        """The documents kept while their file fails: a file that fails (not a service), a folder not listed."""
        reasons = {f.rel: f.reason for f in report.failed if f.kind != "service"}
        for rel in unlisted:
            under = prefix if rel == "." else prefix + rel.rstrip("/") + "/"
            count = sum(1 for key in known if key.startswith(under))
            report.unreadable += count
            if count:
                why = reasons.pop(rel, "cannot list folder")
                report.stale["" if rel == "." else rel.rstrip("/") + "/"] = (f"{why} ({count} documents kept)", count)
        report.stale.update({rel: (why, 1) for rel, why in reasons.items() if prefix + rel in known})

    def _look(
        self, item: Entry | Refusal, key: str, known: dict[str, Known], options: SyncOptions, report: SyncReport,
        on_file: OnFile, seen: set[str], unlisted: list[str],
    ) -> Pending | None:  # fmt: skip
        """Judge one walked item: what to send to the pipeline (new or changed), None when it is dealt with."""
        if isinstance(item, Refusal):
            seen.add(key)  # a refused file keeps what it had: no prune on a passing error
            if item.folder:
                unlisted.append(item.rel)
            _fail(report, on_file, Failure(item.rel, item.reason, "refused"))
            return None
        if key in seen:
            return None  # a second name (a link) of a file already looked at
        seen.add(key)
        if len(key) > MAX_KEY_CHARS:
            _fail(report, on_file, Failure(item.rel, too_long(key)))
            return None
        verdict = self._compare(item, known.get(key), options)
        if verdict in ("new", "changed") and (failure := self._still_failing(item)) is not None:
            verdict = failure
        if isinstance(verdict, Failure):
            _fail(report, on_file, verdict)
        elif verdict == "unchanged":
            report.unchanged += 1
            on_file("unchanged", item.rel, "")
        return Pending(item, key) if verdict in ("new", "changed") else None

    def _still_failing(self, item: Entry) -> Failure | None:
        """The failure of a file that failed for its content at an earlier sync and has not changed since: it would
        fail the same way, so it is not read again (a PDF without text cost a conversion on every re-sync: 7 such
        files made an unchanged re-sync of 200 notes 0.8 s instead of 0.03 s). Read again once changed, or an hour
        after it was last read (a setting such as OCR may have changed), or on a recheck."""
        was = self.settled.get(item.rel)
        if was is None or (was.size, was.mtime_ns) != (item.size, item.mtime_ns) or was.expired():
            return None
        return Failure(item.rel, was.reason, was.kind, settled=(item.size, item.mtime_ns), again=True)

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
        tags_for: TagsFor, on_file: OnFile, progress: Callable[[float, str], Awaitable[None]],
    ) -> None:  # fmt: skip
        if options.dry_run:
            for p in pending:
                if (problem := await self._preflight(p)) is not None:
                    _fail(report, on_file, problem)
                    continue
                verdict = "replaced" if p.key in known else "added"
                (report.replaced if verdict == "replaced" else report.added).append(p.entry.rel)
                on_file(verdict, p.entry.rel, "")
            return
        groups: dict[tuple[str, ...], list[Pending]] = {}
        for p in pending:
            groups.setdefault(tuple(tags_for(p.entry.rel)), []).append(p)
        for tags, group in groups.items():
            items = [
                BatchItem(file_path=str(p.entry.path), source=p.entry.rel, key=p.key, as_text=p.entry.text, walked=True,
                          metadata={SIZE_KEY: p.entry.size, MTIME_KEY: p.entry.mtime_ns})
                for p in group
            ]  # fmt: skip
            outcomes = await self.ingestor.ingest_many(
                items, collection=options.collection, tags=list(tags), progress=progress
            )
            for p, outcome in zip(group, outcomes, strict=True):
                _record(report, p, p.key in known, outcome, on_file)
            await self._moved(group, outcomes, known, options, report, on_file)

    async def _moved(
        self, group: list[Pending], outcomes: list[IngestOutcome | ToolFailure], known: dict[str, Known],
        options: SyncOptions, report: SyncReport, on_file: OnFile,
    ) -> None:  # fmt: skip
        """A file moved or renamed (its folder too) is one change: the document of the path that is gone goes as
        soon as the document of the new path with the same content is stored, not at the end of the sync (issue 48:
        a renamed folder's old and new documents were both searchable for 18 s, 341 documents where 286 were)."""
        new = [p for p, o in zip(group, outcomes, strict=True) if isinstance(o, IngestOutcome) and p.key not in known]

        if not new or options.key_prefix is not None:
            return
        if self.moves is None:  # once a sync, when it first adds: the folder's documents whose file is not there
            self.moves = {}
            for key, was in known.items():
                if not any(key.startswith(p) for p in self.owned) and _missing(key):
                    self.moves.setdefault(was.content_hash, []).append((key, was.doc_id))
        for p in new:
            try:
                gone = self.moves.get(digest(p.entry.path))
            except OSError:
                continue
            if not gone:
                continue
            # Same content under several gone paths: the one of the same name first (a folder renamed).
            name = p.key.rsplit("/", 1)[-1]
            key, doc_id = gone.pop(next((i for i, (k, _) in enumerate(gone) if k.endswith("/" + name)), -1))
            try:
                await self.backend.delete_document(options.collection, doc_id)
            except (ToolFailure, OSError):
                continue  # left to the prune
            self.seen_moved.add(key)
            report.removed.append(key)
            report.moved += 1
            on_file("removed", key, "moved")

    async def _preflight(self, p: Pending) -> Failure | None:
        """What the real run's reading would say of this file (not there, too large, empty, text that is not UTF-8
        or has no letters): a dry run fails the files the real run fails, but for what only a conversion tells (a
        damaged PDF)."""
        try:
            doc = await from_file(str(p.entry.path), self.settings, key=p.key, as_text=p.entry.text, walked=True)
            if doc.markdown is not None:
                self.ingestor.check_text(doc.markdown, minimum=False)
        except Exception as exc:  # noqa: BLE001 - as the pipeline reports it, per file
            return _failure(p.entry.rel, failure_from(exc))
        return None

    async def _prune(
        self, known: dict[str, Known], seen: set[str], unlisted: list[str], prefix: str, options: SyncOptions,
        report: SyncReport, on_file: OnFile,
    ) -> None:  # fmt: skip
        scope = scope_labels(options.paths)
        kept = [prefix + rel.rstrip("/") + "/" for rel in unlisted if rel != "."]
        # The documents of a sub-folder synced on its own into the collection are that folder's: never pruned here.
        owned = [folder_prefix(Path(f)) for f in options.elsewhere] if options.key_prefix is None else []
        kept += [p for p in owned if p != prefix and p.startswith(prefix)]
        if "." in unlisted:
            return  # the folder itself could not be listed: nothing it holds is known to be gone

        def in_view(key: str) -> bool:
            rel = key[len(prefix) :]
            return (
                key not in seen and _under(key, prefix, scope) and (options.recursive or "/" not in rel)
                and not any(key.startswith(k) for k in kept)
            )  # fmt: skip

        gone = [(key, was) for key, was in known.items() if in_view(key)]
        prefix_len = len(options.key_prefix or "")  # a label is the key without a folder-relative prefix
        # What a folder loses is what goes less what came in the same sync: a move or a rename removes as many
        # documents as it adds, and is no loss; a slip (a glob, the wrong folder) adds nothing.
        gone = [(key, was) for key, was in gone if key not in self.seen_moved]
        lost = max(0, len(gone) - (len(report.added) - report.moved)) if options.max_removals is None else len(gone)
        verdict = judge(lost, len(known), await self.window.recent(), options.max_removals)
        if gone and (verdict.held or (report.unmatched and options.max_removals is None)):
            report.held = [key[prefix_len:] for key, _ in gone]
            report.bound_why = verdict.why or "a glob matched no file, so what it left out may be a slip"
            return
        for key, was in gone:
            label = key[prefix_len:]
            if key in self.seen_moved:
                continue  # gone with its move
            if not options.dry_run:
                try:
                    await self.backend.delete_document(options.collection, was.doc_id)
                except (ToolFailure, OSError) as exc:  # one failed delete never stops the rest
                    _fail(report, on_file, Failure(label, f"could not remove: {exc}"))
                    continue
            report.removed.append(label)
            on_file("removed", label, "")
        if report.removed and not options.dry_run and (lost := max(0, len(report.removed) - len(report.added))):
            await self.window.add(lost)


def _batch(progress: Progress, done: int, total: int, batch: list[Pending]) -> Callable[[float, str], Awaitable[None]]:
    """The pipeline's progress through one batch as the sync's, from its first file: "file 21/1,204: embedding"."""
    size = len(batch)

    async def stage(fraction: float, step: str) -> None:
        if step == "done":
            return
        name = STAGES.get(step.split(" ", 1)[0], step)
        current = done + min(size, 1 + int(fraction * size))
        await progress(done + fraction * size, total, f"file {current:,}/{total:,}: {name}")

    return stage


class InFlight:
    """At most two batches of a sync in the pipeline at once: the next is read, converted and chunked while the one
    before is embedded and stored, so that the cores do not wait on one batch's serial stages (issue 49: one batch at
    a time, a folder of small files kept 1.6 of 2 cores busy). The oldest batch still running tells the progress
    (the next one's stages would take it back and forth). A batch's failure, or a cancel, ends the other too (the
    pipeline's writes are seen through, as a single batch's are) and is raised where the sync awaits."""

    DEPTH = 2

    def __init__(self) -> None:
        self._running: list[tuple[int, asyncio.Task[None]]] = []
        self._sent = 0

    async def __aenter__(self) -> InFlight:
        return self

    def in_turn(self, stage: Callable[[float, str], Awaitable[None]]) -> Callable[[float, str], Awaitable[None]]:
        """The progress of the batch sent next, told while no batch sent before it still runs."""
        number = self._sent

        async def told(fraction: float, step: str) -> None:
            if next((n for n, task in self._running if not task.done()), number) == number:
                await stage(fraction, step)

        return told

    async def send(self, batch: Coroutine[object, object, None]) -> None:
        """Start ``batch``, once fewer than DEPTH batches run (the oldest is waited for)."""
        try:
            while len(self._running) >= self.DEPTH:
                await self._oldest()
        except BaseException:
            batch.close()  # never started: nothing of it ran
            raise
        self._running.append((self._sent, asyncio.ensure_future(batch)))
        self._sent += 1
        await asyncio.sleep(0)  # let it start before the walk goes on

    async def drain(self) -> None:
        while self._running:
            await self._oldest()

    async def _oldest(self) -> None:
        await self._running[0][1]  # still listed while awaited: the next batch's progress waits its turn
        self._running.pop(0)

    async def __aexit__(self, kind: object, error: object, trace: object) -> None:
        running, self._running = [task for _, task in self._running], []
        try:
            for task in running if error is None else []:
                await task
        finally:  # a failure or a cancel: the batches still running end too (done ones are left as they are)
            for task in running:
                task.cancel()
            await asyncio.gather(*running, return_exceptions=True)


def vanished(report: SyncReport) -> ToolFailure:
    written = len(report.added) + len(report.replaced)
    return ToolFailure(
        f"The folder disappeared during the sync (deleted, moved or unmounted). The {written} documents written "
        "before are whole and kept; nothing was removed.",
        "Put the folder back (or pass its new path) and sync again: the next sync goes on from what was written.",
        code="FOLDER_GONE",
    )


def _missing(key: str) -> bool:
    """Whether the file a key names is not there (not: cannot be looked at, as in a folder that cannot be read)."""
    try:
        os.lstat(file_of(key))
    except FileNotFoundError:
        return True
    except (OSError, ValueError):
        return False
    return False


def too_long(key: str) -> str:
    return (
        f"its path is {len(key):,} characters long, and a document's key holds at most {MAX_KEY_CHARS:,}: shorten "
        "its folders' names, or sync the folder that holds it"
    )


def _under(key: str, prefix: str, paths: list[str] | None) -> bool:
    """Whether a stored key lies at or under one of the changed paths (all keys when the whole folder synced)."""
    return paths is None or any(key == prefix + rel or key.startswith(prefix + rel + "/") for rel in paths)


@dataclass(frozen=True)
class Pending:
    entry: Entry
    key: str


def _fail(report: SyncReport, on_file: OnFile, failure: Failure) -> None:
    report.failed.append(failure)
    on_file(failure.kind, failure.rel, failure.reason)


def _failure(rel: str, exc: ToolFailure, stat: tuple[int, int] | None = None) -> Failure:
    """The failure of one file; ``stat`` (its size and mtime) is kept when its content decided it (SETTLED_CODES, or
    a converter that answered 4xx: a damaged or unreadable document)."""
    service_down = isinstance(exc, UpstreamError) and (exc.status is None or exc.status >= 500)
    content = exc.code in SETTLED_CODES or (isinstance(exc, UpstreamError) and not service_down)
    settled = stat if content else None
    if exc.code in NOTHING_TO_INDEX:
        return Failure(rel, exc.message, "empty", settled=settled)
    return Failure(rel, exc.message, "service" if service_down else "failed", settled=settled)


def _record(
    report: SyncReport, p: Pending, existed: bool, outcome: IngestOutcome | ToolFailure, on_file: OnFile
) -> None:
    rel = p.entry.rel
    if isinstance(outcome, ToolFailure):
        _fail(report, on_file, _failure(rel, outcome, (p.entry.size, p.entry.mtime_ns)))
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
