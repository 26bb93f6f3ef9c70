"""Watched folders: a change seen on disk becomes one sync_folder job, and exactly one process acts on it.

`sync_folder(..., watch=true)` stores watch=true in the folder's record (ingest/folders.py); nothing is held
only in memory. Every server process runs `watch_forever`, but only the leader watches: with a broker, the
holder of a Redis lease (renewed while it lives, taken over within `watch_lease_s` when it dies); without
one, the holder of an exclusive lock on a file in the data folder (released by the kernel when it dies).
The leader re-reads the records every `watch_refresh_s` (at once when this process set a watch), follows
each watched folder with watchfiles (inotify, or polling where asked), and on a debounced batch of changes
(an editor's save storm is one batch: `watch_step_ms` of quiet, at most `watch_debounce_ms`) queues one
sync_folder job as the watch's owner and waits for it; changes seen meanwhile make the next batch. On
taking the lead, each watched folder is synced once: what changed while nobody watched is caught up (after
the sync that the sync_folder call setting the watch queued, never beside it).
The sync itself is the one engine (ingest/folder_sync.py): a batch only says "look again", never what to write.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import math
import os
import socket
import uuid
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import IO, Any, Protocol

import anyio
from anyio.streams.memory import MemoryObjectSendStream

from ..access.audit import record as audit
from ..access.policy import Caller, LivePolicy, acting_as
from ..errors import ToolFailure
from ..jobs import Job, JobStore
from ..settings import McpSettings
from ..sources.file_names import escaped
from ..sources.paths import allowed_real_roots, inside_any
from .acquire import now_iso
from .folder_sync import SyncOptions, folder_identity, matches_filters
from .folders import FolderRecord, FolderStore
from .ignores import Ignores, is_ignore_file
from .walk import SKIPPED_EXTENSIONS, extension_of
from .watch_rights import RightsProblem, rights_problem

log = logging.getLogger("ingestion_mcp.watch")
LEADER_KEY = "ingestion-mcp:watch-leader"
RETRY_S = 10.0  # a watch that failed for another reason than its folder (a broker away) is tried again after this
# How often a watched folder is checked (there, the same folder, readable, inside the roots), and how soon one that
# came back is watched again. inotify cannot say it: a watch on a deleted folder stays silent forever, and a
# folder made again under the same name is a new inode that the old watch never sees.
CHECK_S = 1.0
MAX_PATHS = 1000  # a batch with more changed paths than this (a checkout, a restore) syncs the whole folder
# Renew the lease only while it is still ours; answers 1 when renewed.
_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
"""


class Leadership(Protocol):
    async def hold(self) -> bool: ...
    async def release(self) -> None: ...


class FileLeadership:
    """The lead is an exclusive flock on <data_dir>/watch.lock, held open while this process lives."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._handle: IO[str] | None = None

    async def hold(self) -> bool:
        if self._handle is not None:
            return True
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(self.path, "a")  # noqa: SIM115 - held open for as long as this process leads
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            return False
        self._handle = handle
        return True

    async def release(self) -> None:
        if self._handle is not None:
            self._handle.close()  # closing drops the lock
            self._handle = None


class RedisLeadership:
    """The lead is a Redis key with this process's token, set only when absent and renewed while held."""

    def __init__(self, settings: McpSettings) -> None:
        from ..jobs.queue import broker_client

        self.redis = broker_client(settings.broker_url or "", settings.broker_timeout_s)
        # Who watches, readable in the broker (`GET ingestion-mcp:watch-leader`): host, pid, then a unique part.
        self.token = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"
        self.ttl_ms = int(settings.watch_lease_s * 1000)
        self._renew = self.redis.register_script(_RENEW)

    async def hold(self) -> bool:
        from redis.exceptions import RedisError

        try:
            if await self._renew(keys=[LEADER_KEY], args=[self.token, self.ttl_ms]):
                return True
            return bool(await self.redis.set(LEADER_KEY, self.token, nx=True, px=self.ttl_ms))
        except RedisError as exc:  # a broker away: lead nothing until it answers (another may take over)
            log.warning("watching paused: the broker did not answer (%s)", type(exc).__name__)
            return False

    async def release(self) -> None:
        with contextlib.suppress(Exception):
            if await self.redis.get(LEADER_KEY) == self.token.encode():
                await self.redis.delete(LEADER_KEY)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        return _reason(exc.exceptions[0])
    if isinstance(exc, FolderProblem | RightsProblem):
        return str(exc)
    return exc.message if isinstance(exc, ToolFailure) else f"{type(exc).__name__}: {exc}"


def leadership(settings: McpSettings) -> Leadership:
    if settings.broker_url:
        return RedisLeadership(settings)
    return FileLeadership(settings.data_dir.expanduser().resolve() / "watch.lock")


def change_filter(root: Path, options: SyncOptions) -> Callable[[Any, str], bool]:
    """Which changes wake the sync: files the sync would read (not hidden, not ignored, not of a type that is
    skipped, taken by the globs), extension-less paths (a folder moved or deleted as a whole is one event about
    the folder), and the ignore files (a changed one is a change of what the folder holds)."""
    ignores = Ignores(root, options.ignore_files)

    def wanted(change: Any, path: str) -> bool:
        try:
            parts = Path(path).relative_to(root).parts
        except ValueError:
            return False
        if not parts or any(part.startswith(".") for part in parts[:-1]):
            return False
        rel = "/".join(parts)
        if is_ignore_file(parts[-1]):
            if options.ignore_files:
                ignores.forget()  # what follows is judged by the new rules
            return options.ignore_files
        if parts[-1].startswith(".") or ignores.path_ignored(rel, os.path.isdir(path)):
            return False
        extension = extension_of(parts[-1])
        if extension in SKIPPED_EXTENSIONS:
            return False
        return not PurePosixPath(rel).suffix or matches_filters(rel, options.include, options.exclude)

    return wanted


def folder_problem(root: Path, settings: McpSettings) -> str | None:
    """Why a watched folder cannot be watched now (None: it can). Never names a path outside the roots."""
    try:
        real = root.resolve(strict=True)
    except (OSError, RuntimeError):
        return "the folder is not there (deleted, moved or unmounted); its documents are kept until it is back"
    if not settings.allowed_roots:  # none yet: the client's roots not declared (yet), or none set
        return "no folder may be read now (no allowed roots: see sync_folder's error); its documents are kept"
    if not inside_any(real, allowed_real_roots(settings.allowed_roots)):
        return "the folder now leads outside the allowed folders; its documents are kept"
    if real != root or not real.is_dir():
        return "the path now leads elsewhere (a link was put in its place); its documents are kept"
    try:
        with os.scandir(root) as entries:
            next(entries, None)
    except OSError as exc:
        return f"the folder cannot be read ({exc.strerror or type(exc).__name__}); its documents are kept"
    return None


class FolderProblem(Exception):
    """The watched folder is gone, unreadable or out of the roots: shown on the record until it is back."""


class FolderReplaced(Exception):
    """The watched folder was deleted or moved and made again: watched again at once (the old watch is blind)."""


def _first(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def options_of(record: FolderRecord) -> SyncOptions:
    return SyncOptions(
        folder=record.folder, collection=record.collection, include=tuple(record.include),
        exclude=tuple(record.exclude), recursive=record.recursive, prune=record.prune,
        ignore_files=record.ignore_files,
    )  # fmt: skip


def job_params(record: FolderRecord, trigger: str, paths: list[str] | None = None) -> dict[str, Any]:
    return {
        "folder": record.folder, "collection": record.collection, "include": record.include,
        "exclude": record.exclude, "recursive": record.recursive, "prune": record.prune,
        "ignore_files": record.ignore_files, "trigger": trigger, "paths": paths or [],
    }  # fmt: skip


def relative(root: Path, changes: set[tuple[Any, str]]) -> set[str]:
    """The changed paths, relative to the watched folder (forward slashes)."""
    found = set()
    for _, path in changes:
        try:
            found.add(PurePosixPath(*Path(path).relative_to(root).parts).as_posix())
        except ValueError:
            continue
    return found


class Watcher:
    """The leader's watchers, one task per watched folder, kept in step with the stored records."""

    def __init__(
        self, settings: McpSettings, folders: FolderStore, jobs: JobStore, lead: Leadership | None = None,
        policy: LivePolicy | None = None,
    ) -> None:  # fmt: skip
        self.settings = settings
        self.policy = policy  # the access policy as it is now: a watch acts with its owner's current rights
        self.folders = folders
        self.jobs = jobs
        self.lead = lead or leadership(settings)
        self.running: dict[str, tuple[FolderRecord, anyio.CancelScope]] = {}
        self.wakeup = anyio.Event()
        self.syncs = 0  # jobs queued (for tests and the log)
        self.leading = False

    def poke(self) -> None:
        """Re-read the records now (a watch was set or dropped in this process)."""
        self.wakeup.set()

    async def run(self) -> None:
        async with anyio.create_task_group() as tasks:
            try:
                while True:
                    try:
                        leading = await self.lead.hold()
                        if leading != self.leading:
                            log.info(
                                "this process %s the synced folders", "now watches" if leading else "no longer watches"
                            )
                            self.leading = leading
                        if leading:
                            await self.reconcile(tasks)
                        else:
                            self.stop_all()
                    except Exception:
                        log.exception("watching: a round failed")
                    with anyio.move_on_after(self.settings.watch_refresh_s):
                        await self.wakeup.wait()
                    self.wakeup = anyio.Event()
            finally:
                self.stop_all()
                with anyio.CancelScope(shield=True):
                    await self.lead.release()

    def stop_all(self) -> None:
        for _, scope in self.running.values():
            scope.cancel()
        self.running.clear()

    async def reconcile(self, tasks: anyio.abc.TaskGroup) -> None:
        wanted = {r.id: r for r in await self.folders.all() if r.watch}
        for key, (was, scope) in list(self.running.items()):
            now = wanted.get(key)
            # A new sync_job is a new sync_folder(watch=true): it re-arms the watch, whatever state it was in.
            if (
                now is None
                or options_of(now) != options_of(was)
                or (now.owner, now.sync_job) != (was.owner, was.sync_job)
            ):
                scope.cancel()
                del self.running[key]
        for key, record in wanted.items():
            if key not in self.running:
                scope = anyio.CancelScope()
                self.running[key] = (record, scope)
                tasks.start_soon(self.follow, record, scope)

    async def follow(self, record: FolderRecord, scope: anyio.CancelScope) -> None:
        """Watch the folder for as long as the record says so: a folder that goes (deleted, unreadable, out of
        the roots) is shown broken on its record, checked every CHECK_S, and watched again once it is back."""
        with scope:
            while True:
                try:
                    await self.watch_and_sync(record)
                except anyio.get_cancelled_exc_class():
                    raise
                except Exception as exc:  # noqa: BLE001 - a folder that cannot be watched now is tried again later
                    cause = _first(exc)
                    if isinstance(cause, FolderReplaced):
                        log.info("watching %s (%s) again: the folder was made anew", record.folder, record.collection)
                        continue
                    reason = _reason(cause)
                    log.warning("watching %s (%s) paused: %s", record.folder, record.collection, reason)
                    await self.broken(record, reason)
                    if isinstance(cause, FolderProblem):
                        await self.until_back(Path(record.folder))
                    elif isinstance(cause, RightsProblem):
                        await self.until_allowed(record)
                    else:
                        await anyio.sleep(RETRY_S)

    async def broken(self, record: FolderRecord, reason: str) -> None:
        """The watch's error and since when on the record (get_collections, the console); the first time kept."""
        with contextlib.suppress(ToolFailure, OSError):
            stored = await self.folders.get(record.collection, record.folder)
            if stored is None or stored.watch_error != reason[:300]:
                await self.folders.change(
                    record.collection, record.folder, watch_error=reason[:300], watch_error_at=now_iso()
                )

    async def working(self, record: FolderRecord) -> None:
        """A watch in place again says so at once: a catch-up sync of a large folder (minutes) would otherwise
        leave "the folder is not there" on the record of a folder that is there and watched."""
        with contextlib.suppress(ToolFailure, OSError):
            stored = await self.folders.get(record.collection, record.folder)
            if stored is not None and stored.watch_error is not None:
                await self.folders.change(record.collection, record.folder, watch_error=None, watch_error_at=None)

    async def until_allowed(self, record: FolderRecord) -> None:
        """Until the watch's owner may write to its collection again (its record re-read: its claims may change)."""
        while True:
            stored = await self.folders.get(record.collection, record.folder)
            if stored is None or rights_problem(self.policy, stored) is None:
                return
            await anyio.sleep(CHECK_S)

    def check_rights(self, record: FolderRecord) -> None:
        if (problem := rights_problem(self.policy, record)) is not None:
            raise RightsProblem(problem)

    async def current(self, record: FolderRecord) -> FolderRecord:
        """The record as stored now (the owner's claims refreshed), or as it was when it cannot be read."""
        with contextlib.suppress(ToolFailure, OSError):
            return await self.folders.get(record.collection, record.folder) or record
        return record

    async def until_back(self, root: Path) -> None:
        while folder_problem(root, self.settings) is not None:
            await anyio.sleep(CHECK_S)

    async def guard(
        self, root: Path, identity: tuple[int, int] | None, stop: anyio.Event, record: FolderRecord | None = None
    ) -> None:
        """Ends the watch when its folder goes or is replaced (awatch does not: see CHECK_S). However the watch
        ends, `stop` tells watchfiles' thread at once (a cancel alone waits out its 5 s wait for events)."""
        try:
            while True:
                await anyio.sleep(CHECK_S)
                if (problem := folder_problem(root, self.settings)) is not None:
                    raise FolderProblem(problem)
                if self.policy is not None and record is not None:
                    self.check_rights(await self.current(record))
                if folder_identity(root) != identity:
                    raise FolderReplaced()
        finally:
            stop.set()

    async def watch_and_sync(self, record: FolderRecord) -> None:
        """Watch first, then catch up, then one sync per batch: a change made at any moment is never missed.

        Batches that arrive while a sync runs wait in the stream and make one sync together."""

        root, options = Path(record.folder), options_of(record)
        if (problem := folder_problem(root, self.settings)) is not None:
            raise FolderProblem(problem)
        self.check_rights(await self.current(record))
        identity = folder_identity(root)
        # A batch of changed paths, or None: "look at the whole folder" (the watch library lost a batch).
        send, receive = anyio.create_memory_object_stream[set[str] | None](math.inf)
        stop = anyio.Event()

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(self.changes, record, root, options, send, stop)
            tasks.start_soon(self.guard, root, identity, stop, record)
            await anyio.sleep(0.05)  # the watcher is in place before the catch-up sync looks
            await self.working(record)  # watched again: the error goes now, not after the catch-up sync
            await self.finished(record.sync_job)  # the sync queued with the watch runs first, alone
            await self.sync(record, "resume")  # what changed while nobody watched
            async with receive:
                async for batch in receive:
                    paths = batch
                    while True:  # everything already waiting goes into this one sync
                        try:
                            more = receive.receive_nowait()
                        except anyio.WouldBlock:
                            break
                        paths = None if paths is None or more is None else paths | more
                    await self.note_changes(record, len(paths) if paths is not None else 1)
                    # Only what changed is looked at (a batch costs what it holds, not what the folder holds);
                    # a very large batch, or one the library lost, is a whole-folder sync.
                    await self.sync(record, "watch", sorted(paths) if paths and len(paths) <= MAX_PATHS else None)
            # awatch ended without the guard seeing why: watched again if the folder is fine, else shown broken.
            problem = folder_problem(root, self.settings)
            raise FolderProblem(problem) if problem is not None else FolderReplaced()

    async def changes(
        self, record: FolderRecord, root: Path, options: SyncOptions,
        send: MemoryObjectSendStream[set[str] | None], stop: anyio.Event,
    ) -> None:  # fmt: skip
        """The folder's batches of changes, into `send`. A file name the watch library cannot decode (bytes that
        are not UTF-8) fails the library's whole batch and every later one: then it is started again and the whole
        folder is synced (the lost batch is not known), never taken for the folder going away (issue 48)."""
        from watchfiles import awatch
        from watchfiles._rust_notify import WatchfilesRustInternalError  # public in its stub's __all__

        async with send:
            while not stop.is_set():
                try:
                    async for found in awatch(
                        root, watch_filter=change_filter(root, options), debounce=self.settings.watch_debounce_ms,
                        step=self.settings.watch_step_ms, recursive=record.recursive,
                        force_polling=self.settings.watch_force_polling, ignore_permission_denied=True,
                        stop_event=stop,
                    ):  # fmt: skip
                        send.send_nowait(relative(root, found))
                    return
                except (WatchfilesRustInternalError, ExceptionGroup) as exc:  # (awatch's task group may wrap it)
                    if not isinstance(_first(exc), WatchfilesRustInternalError):
                        raise
                    log.info("watching %s: the watch library lost a batch (%s); the whole folder is synced",
                             escaped(record.folder), escaped(str(_first(exc)))[:200])  # fmt: skip
                    send.send_nowait(None)
                    await anyio.sleep(0.1)  # a name that fails on every event does not make a busy loop

    async def note_changes(self, record: FolderRecord, count: int) -> None:
        stored = await self.folders.get(record.collection, record.folder)
        before = (stored.changed_since or 0) if stored else 0
        await self.folders.change(record.collection, record.folder, changed_since=before + count)

    async def finished(self, job_id: str | None) -> None:
        """Until that job has ended (at once when it is unknown: ended long ago, or its record expired)."""
        job = await self.jobs.get(job_id) if job_id is not None else None
        if job is not None:
            await self.ended(job)

    async def ended(self, job: Job) -> Job:
        while not job.finished:
            job = await self.jobs.wait(job.id, 30.0)
        return job

    async def sync(self, record: FolderRecord, trigger: str, paths: list[str] | None = None) -> None:
        """Queue one sync of the folder as the watch's owner, with the rights it has now, and wait."""
        self.check_rights(await self.current(record))
        owner = Caller(subject=record.owner, grants=Caller.everything().grants)
        with acting_as(owner):
            params = job_params(record, trigger, paths)
            job = await self.jobs.submit("sync_folder", params, f"watch {record.folder}")
            audit("watch_sync", record.collection, record.folder, f"queued:{job.id}")
        self.syncs += 1
        job = await self.ended(job)
        if job.failure is not None:
            log.warning("watch sync of %s failed: %s", record.folder, job.failure.message)
