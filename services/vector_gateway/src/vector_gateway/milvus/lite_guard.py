"""Milvus Lite, made safe for the gateway's threads: no read runs while a write or a flush does.

Milvus Lite 3.2.2 serves its in-process gRPC server from a thread pool but does not serialise writes. A
flush swaps the memtable out before it takes its own lock, so a query that runs meanwhile sees neither the
old memtable nor the segment it becomes: rows written a moment ago, by this very thread, are missing from
the answer. The gateway reads the registry to decide which versions of a document are dead; a registry row
that was missing for one query got a committed version deleted, and its document lost every chunk (the
load test found it: `scripts/load_test.py`; `tests/test_lite_guard.py` shows the engine fault alone).
Two flushes at once also fail ("current_seq is monotonic").

So every call on a Lite client goes through one readers-writer lock per database: queries, searches and
describes share it; inserts, upserts, deletes, flushes and schema changes hold it alone. A Milvus server has
none of these faults and gets the bare client.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

# Calls that change what a read sees (rows, memtable, segments or the collection set): run alone.
EXCLUSIVE = frozenset({
    "insert", "upsert", "delete", "flush", "compact",
    "create_collection", "drop_collection", "rename_collection", "load_collection", "release_collection",
    "create_index", "drop_index", "create_partition", "drop_partition", "load_partitions", "release_partitions",
    "alter_collection_properties", "close",
})  # fmt: skip


class ReadWriteLock:
    """Many readers or one writer; a waiting writer goes before readers that arrive after it."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._readers = 0
        self._writing = False
        self._writers_waiting = 0

    @contextmanager
    def shared(self) -> Iterator[None]:
        with self._cond:
            while self._writing or self._writers_waiting:
                self._cond.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                if not self._readers:
                    self._cond.notify_all()

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        with self._cond:
            self._writers_waiting += 1
            try:
                while self._writing or self._readers:
                    self._cond.wait()
            finally:
                self._writers_waiting -= 1
            self._writing = True
        try:
            yield
        finally:
            with self._cond:
                self._writing = False
                self._cond.notify_all()


_LOCKS: dict[str, ReadWriteLock] = {}
_LOCKS_GUARD = threading.Lock()


def lock_for(path: str) -> ReadWriteLock:
    """One lock per Lite database in this process (two clients on one file share it)."""
    key = os.path.realpath(os.path.expanduser(path))
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(key, ReadWriteLock())


class _GuardedIterator:
    """A query iterator whose pages are read under the shared lock."""

    def __init__(self, iterator: Any, lock: ReadWriteLock) -> None:
        self._iterator = iterator
        self._lock = lock

    def next(self) -> Any:
        with self._lock.shared():
            return self._iterator.next()

    def close(self) -> None:
        self._iterator.close()


class LiteClient:
    """A pymilvus ``MilvusClient`` on a Lite database, each call under the database's readers-writer lock."""

    def __init__(self, client: Any, path: str) -> None:
        self._client = client
        self._rw = lock_for(path)

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._client, name)
        if not callable(attribute):
            return attribute
        hold = self._rw.exclusive if name in EXCLUSIVE else self._rw.shared
        if name == "query_iterator":
            return functools.partial(self._iterator, attribute)
        return functools.partial(_call_under, hold, attribute)

    def _iterator(self, make: Callable[..., Any], *args: Any, **kwargs: Any) -> _GuardedIterator:
        with self._rw.shared():
            return _GuardedIterator(make(*args, **kwargs), self._rw)


def _call_under(hold: Callable[[], Any], call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    with hold():
        return call(*args, **kwargs)
