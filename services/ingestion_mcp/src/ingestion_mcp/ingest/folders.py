"""Where synced folders are remembered: what the last sync did, whether the folder is watched, what changed since.

One record per (collection, folder). Kept where the job records are, so every process that runs a sync or
watches sees the same ones and they outlive a restart:
- with a broker (INGESTION_MCP_BROKER_URL): in Redis, one hash per record (each field written on its own,
  so the watcher's "changed since" and a worker's "last sync" never overwrite each other) and a set of ids;
- without: a JSON file in the data folder, read-modify-written under an exclusive file lock (the server and
  `ingestion-index` may share the folder), replaced atomically.
The documents themselves (and each file's size, mtime and hash) stay in the gateway registry (ingest/folder_sync.py):
a record is what get_collections and the console show, and what the watcher reads to know what to watch.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

import anyio
from pydantic import BaseModel, Field, PrivateAttr

from ..errors import ToolFailure
from ..settings import McpSettings
from .acquire import now_iso
from .removal_bound import within
from .sync_report import Failure, Settled

log = logging.getLogger("ingestion_mcp.sync")

PREFIX = "ingestion-mcp:folder:"
INDEX = "ingestion-mcp:folders"
FILE_NAME = "folders.json"
FAILING_KEPT = 1000  # failing files a record lists (the total counts all)
FAILING_PAGE = 20  # listed per folder in one get_collections answer
SETTLED_KEPT = 10_000  # failing files remembered so that an unchanged one is not read again


class LastSync(BaseModel):
    at: str = Field(description="When it ended (UTC, ISO 8601).")
    trigger: str = Field(description="tool (sync_folder), watch (a change seen), resume (a restart), cli.")
    seconds: float
    counts: dict[str, int]
    cancelled: bool = False
    error: str | None = None


class FolderRecord(BaseModel):
    collection: str
    folder: str  # the real path
    include: list[str] = Field(default_factory=list)
    exclude: list[str] = Field(default_factory=list)
    recursive: bool = True
    prune: bool = True
    ignore_files: bool = True
    watch: bool = False
    owner: str | None = None  # the subject that asked for the watch: its syncs are its jobs
    # What the access policy read from the owner's token (scopes, groups), refreshed by its later requests: the watch
    # asks the policy as it is now what the owner may do (ingest/watch_rights.py). None: no policy, every right.
    owner_claims: dict[str, list[str]] | None = None
    last_sync: LastSync | None = None
    last_full: LastSync | None = None  # the last sync of the whole folder (a watch batch looks at its paths only)
    # Files changed since the last sync, counted by the watcher; None: not known (the folder is not watched).
    changed_since: int | None = None
    watch_error: str | None = None
    watch_error_at: str | None = None  # since when (UTC)
    # The files that fail (folder-relative path -> why), at most FAILING_KEPT of them; failing_total counts all.
    failing: dict[str, str] = Field(default_factory=dict)
    failing_total: int = 0
    # The failing files whose content decided it (folder-relative path -> size, mtime, reason, kind, when read): a
    # sync does not read them again while unchanged (FolderSync.run's `settled`); at most SETTLED_KEPT.
    settled: dict[str, Settled] = Field(default_factory=dict)
    # What the ignore files hid at the last whole-folder sync: ignore file -> files and folders (a folder once).
    ignored_by: dict[str, int] = Field(default_factory=dict)
    # The removals of the last 10 minutes, (ISO time, count): the removal bound counts them (ingest/removal_bound.py).
    removals: list[tuple[str, int]] = Field(default_factory=list)
    # Documents kept while their file fails: folder-relative label -> (why, since when); a label ending in "/" is a
    # folder that cannot be listed (all its documents). Shown on search hits, list_documents, get_collections.
    stale: dict[str, tuple[str, str, int]] = Field(default_factory=dict)  # label -> (why, since, documents)
    # The sync queued by the sync_folder call that set the watch: the watcher's catch-up waits for it instead of
    # walking the folder beside it (both would ingest every new file).
    sync_job: str | None = None

    @property
    def id(self) -> str:
        return record_id(self.collection, self.folder)


def record_id(collection: str, folder: str) -> str:
    return hashlib.sha256(f"{collection}\0{folder}".encode()).hexdigest()[:24]


class SyncedFolder(BaseModel):
    """A folder's freshness, as get_collections and the console show it."""

    folder: str
    watched: bool
    last_synced: str | None = None
    last_result: dict[str, int] | None = None
    full_result: dict[str, int] | None = None  # the last whole-folder sync's counts (not a watch batch's)
    changed_since: int | None = None  # files changed since the last sync; null: not known (not watched)
    error: str | None = None  # the watch's, or the last sync's
    error_at: str | None = None
    failing: list[str] | None = None  # "file: reason", a page of them (get_collections' offset)
    failing_total: int | None = None
    # What the ignore files hid at its last whole sync (ignore file -> files and folders): said in get_collections'
    # message, not a field of its own (the tools/list budget).
    _ignored_by: dict[str, int] = PrivateAttr(default_factory=dict)
    _stale: int = PrivateAttr(default=0)  # stale entries (a folder that cannot be listed counts once)


class FolderStore(Protocol):
    async def all(self) -> list[FolderRecord]: ...
    async def get(self, collection: str, folder: str) -> FolderRecord | None: ...
    async def change(self, collection: str, folder: str, **fields: Any) -> FolderRecord: ...
    async def forget(self, collection: str, folder: str | None = None) -> int: ...


def folder_store(settings: McpSettings) -> FolderStore:
    if settings.broker_url:
        return RedisFolders(settings)
    return FileFolders(settings.data_dir.expanduser().resolve() / FILE_NAME)


def _fields(fields: dict[str, Any]) -> dict[str, Any]:
    return {k: (v.model_dump() if isinstance(v, BaseModel) else v) for k, v in fields.items()}


class FileFolders:
    """Records in one JSON file: small (one line per folder), rewritten whole under a lock."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @contextlib.contextmanager
    def _locked(self) -> Iterator[dict[str, dict[str, Any]]]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_suffix(".lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                records = json.loads(self.path.read_text()) if self.path.is_file() else {}
                before = json.dumps(records, sort_keys=True)
                yield records
                if json.dumps(records, sort_keys=True) != before:
                    tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
                    tmp.write_text(json.dumps(records, indent=1, sort_keys=True))
                    os.replace(tmp, self.path)
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _all(self) -> list[FolderRecord]:
        with self._locked() as records:
            return [FolderRecord.model_validate(r) for r in records.values()]

    def _change(self, collection: str, folder: str, fields: dict[str, Any]) -> FolderRecord:
        key = record_id(collection, folder)
        with self._locked() as records:
            merged = {**records.get(key, {"collection": collection, "folder": folder}), **_fields(fields)}
            record = FolderRecord.model_validate(merged)
            records[key] = record.model_dump()
            return record

    def _forget(self, collection: str, folder: str | None) -> int:
        with self._locked() as records:
            gone = [k for k, r in records.items() if r["collection"] == collection and folder in (None, r["folder"])]
            for key in gone:
                del records[key]
            return len(gone)

    async def all(self) -> list[FolderRecord]:
        return await anyio.to_thread.run_sync(self._all)

    async def get(self, collection: str, folder: str) -> FolderRecord | None:
        key = record_id(collection, folder)
        return next((r for r in await self.all() if r.id == key), None)

    async def change(self, collection: str, folder: str, **fields: Any) -> FolderRecord:
        """Set these fields of the record (made when missing), atomically against every other writer."""
        return await anyio.to_thread.run_sync(self._change, collection, folder, fields)

    async def forget(self, collection: str, folder: str | None = None) -> int:
        """Drop the records of a collection (one folder's, or all of them: the collection was deleted)."""
        return await anyio.to_thread.run_sync(self._forget, collection, folder)


class RedisFolders:
    """Records in Redis beside the jobs: a hash per record, one JSON value per field."""

    def __init__(self, settings: McpSettings) -> None:
        from ..jobs.queue import broker_client

        self.redis = broker_client(settings.broker_url or "", settings.broker_timeout_s)

    async def _read(self, key: str) -> FolderRecord | None:
        raw = await self.redis.hgetall(PREFIX + key)  # type: ignore[misc]  # redis-py types the asyncio client's hash calls as sync-or-awaitable
        if not raw:
            return None
        return FolderRecord.model_validate({k.decode(): json.loads(v) for k, v in raw.items()})

    async def all(self) -> list[FolderRecord]:
        with _broker_errors():
            keys = sorted(k.decode() for k in await self.redis.smembers(INDEX))  # type: ignore[misc]  # as above
            found = [await self._read(key) for key in keys]
        return [r for r in found if r is not None]

    async def get(self, collection: str, folder: str) -> FolderRecord | None:
        with _broker_errors():
            return await self._read(record_id(collection, folder))

    async def change(self, collection: str, folder: str, **fields: Any) -> FolderRecord:
        plain = {"collection": collection, "folder": folder, **_fields(fields)}
        FolderRecord.model_validate(plain)  # a bad value is refused before anything is written
        key = record_id(collection, folder)
        values = {k: json.dumps(v) for k, v in plain.items()}
        with _broker_errors():
            async with self.redis.pipeline(transaction=True) as tx:
                tx.hset(PREFIX + key, mapping=values)
                tx.sadd(INDEX, key)
                await tx.execute()
            record = await self._read(key)
        assert record is not None
        return record

    async def forget(self, collection: str, folder: str | None = None) -> int:
        gone = [r.id for r in await self.all() if r.collection == collection and folder in (None, r.folder)]
        with _broker_errors():
            for key in gone:
                async with self.redis.pipeline(transaction=True) as tx:
                    tx.delete(PREFIX + key)
                    tx.srem(INDEX, key)
                    await tx.execute()
        return len(gone)


@contextlib.contextmanager
def _broker_errors() -> Iterator[None]:
    from redis.exceptions import RedisError

    from ..jobs.queue import broker_down

    try:
        yield
    except RedisError as exc:
        raise broker_down(exc) from exc


class RecordWindow:
    """A folder's recent removals, kept in its record (read and written under the folder's sync lock)."""

    def __init__(self, store: FolderStore, collection: str, folder: str) -> None:
        self.store, self.collection, self.folder = store, collection, folder

    async def recent(self) -> int:
        record = await self.store.get(self.collection, self.folder)
        return sum(n for _, n in within(record.removals)) if record else 0

    async def add(self, count: int) -> None:
        record = await self.store.get(self.collection, self.folder)
        kept = within(record.removals) if record else []
        await self.store.change(self.collection, self.folder, removals=[*kept, (now_iso(), count)])


def latest_sync(folders: list[SyncedFolder]) -> str | None:
    """When the most recent of these folders' syncs ended (None: none has run)."""
    return max((f.last_synced or "" for f in folders), default="") or None


def shown(r: FolderRecord, offset: int = 0, page: int = FAILING_PAGE) -> SyncedFolder:
    """A record as get_collections shows it: a page of its failing files from `offset`."""
    last, full = r.last_sync, r.last_full
    error, at = (r.watch_error, r.watch_error_at) if r.watch and r.watch_error else (None, None)
    if error is None and not os.path.isdir(r.folder):
        error = "the folder is not there (deleted, moved or unmounted); its documents are kept (see sync_folder)"
    if error is None and last is not None and (last.error or last.cancelled):
        error, at = last.error or "the last sync was cancelled before its end", last.at
    failing = [f"{rel}: {why}{_stale_mark(r, rel)}" for rel, why in sorted(r.failing.items())[offset : offset + page]]
    folder = SyncedFolder(
        folder=r.folder, watched=r.watch, last_synced=last.at if last else None,
        last_result=last.counts if last else None, full_result=full.counts if full else None,
        changed_since=r.changed_since if r.watch else None, error=error, error_at=at,
        failing=failing or None, failing_total=r.failing_total or None,
    )  # fmt: skip
    folder._ignored_by, folder._stale = dict(r.ignored_by), sum(n for _, _, n in r.stale.values())
    return folder


def _stale_mark(r: FolderRecord, rel: str) -> str:
    found = r.stale.get(rel) or r.stale.get(rel + "/") or (r.stale.get("") if rel == "." else None)
    return f" [stale since {found[1]}: its last good version is still searched]" if found else ""


async def synced_folders(store: FolderStore, offset: int = 0) -> dict[str, list[SyncedFolder]]:
    """collection -> its synced folders, A to Z ({} when the records cannot be read now: listing goes on)."""
    try:
        records = await store.all()
    except (ToolFailure, OSError, ValueError) as exc:  # a broker away or a damaged file
        log.warning("synced folders not read: %s", getattr(exc, "message", exc))
        return {}
    found: dict[str, list[SyncedFolder]] = {}
    for r in sorted(records, key=lambda r: r.folder):
        found.setdefault(r.collection, []).append(shown(r, offset))
    return found


def stale_after(
    record: FolderRecord | None, stale: dict[str, tuple[str, int]], scope: list[str] | None
) -> dict[str, Any]:
    """The record's stale documents after a sync that looked at `scope` (None: the whole folder): what it found
    stale, each since when it first was (kept across syncs), and, for a scoped sync, the others it did not look at."""
    before = record.stale if record is not None else {}
    now = now_iso()
    found = {rel: (why, before[rel][1] if rel in before else now, n) for rel, (why, n) in stale.items()}
    if scope is not None:
        found = {**{rel: v for rel, v in before.items() if not _looked_at(rel, scope)}, **found}
    return {"stale": dict(sorted(found.items())[:FAILING_KEPT])}


def _looked_at(rel: str, scope: list[str]) -> bool:
    return any(rel.rstrip("/") == p or rel.startswith(p + "/") for p in scope)


class StaleMarks:
    """Which documents are stale, by key, from every folder record (one read per answer)."""

    def __init__(self, records: list[FolderRecord]) -> None:
        from .folder_sync import folder_prefix  # (folder_sync imports this module)

        self.exact: dict[tuple[str, str], str] = {}
        self.folders: list[tuple[str, str, str]] = []  # (collection, key prefix, mark)
        for r in records:
            prefix = folder_prefix(Path(r.folder))
            for rel, (why, since, _) in r.stale.items():
                mark = f"{why} (stale since {since}: the file now fails; this is its last good version)"
                if rel.endswith("/") or not rel:
                    self.folders.append((r.collection, prefix + rel, mark))
                else:
                    self.exact[(r.collection, prefix + rel)] = mark

    def of(self, collection: str, key: str | None) -> str | None:
        if not key:
            return None
        if (mark := self.exact.get((collection, key))) is not None:
            return mark
        return next((m for c, under, m in self.folders if c == collection and key.startswith(under)), None)


async def stale_marks(store: FolderStore) -> StaleMarks:
    """The stale marks of every synced folder (none when the records cannot be read now: answers go on)."""
    try:
        return StaleMarks(await store.all())
    except (ToolFailure, OSError, ValueError) as exc:
        log.warning("stale marks not read: %s", getattr(exc, "message", exc))
        return StaleMarks([])


def failing_after(record: FolderRecord | None, failures: dict[str, str], scope: list[str] | None) -> dict[str, Any]:
    """The record's failing files after a sync that looked at `scope` (None: the whole folder) and found
    `failures` there: a whole sync's replace them, a scoped sync's replace those under its paths."""
    if scope is None or record is None:
        merged, total = dict(failures), len(failures)
    else:

        def looked_at(rel: str) -> bool:
            return any(rel == p or rel.startswith(p + "/") for p in scope)

        kept = {rel: why for rel, why in record.failing.items() if not looked_at(rel)}
        beyond = max(record.failing_total - len(record.failing), 0)  # failures a whole sync counted, not kept
        merged = {**kept, **failures}
        total = len(merged) + beyond
    return {"failing": dict(sorted(merged.items())[:FAILING_KEPT]), "failing_total": max(total, len(merged))}


def settled_after(
    record: FolderRecord | None, failures: list[Failure], scope: list[str] | None, now: float
) -> dict[str, Any]:
    """The record's settled failures after a sync that looked at `scope` (None: the whole folder): each failure of
    this sync that its file's content decided, read now (or, not read again, when it was read before), and, for a
    scoped sync, the earlier ones it did not look at."""
    before = record.settled if record is not None else {}
    found = {}
    for f in failures:
        if f.settled is None:
            continue
        at = before[f.rel].at if f.again and f.rel in before else now
        found[f.rel] = Settled(*f.settled, f.reason, f.kind, at)
    if scope is not None:
        found = {**{rel: v for rel, v in before.items() if not _looked_at(rel, scope)}, **found}
    return {"settled": dict(sorted(found.items())[:SETTLED_KEPT])}
