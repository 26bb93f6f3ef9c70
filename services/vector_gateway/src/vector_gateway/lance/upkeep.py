"""A Lance table's upkeep: its indexes made and kept current, small fragments compacted, old versions removed.

New rows are searched by a flat scan until the table is optimised. After each write the store calls
``check``: once enough rows sit outside the indexes, enough commits piled up or too many small fragments
are left (a writer that stopped before its upkeep), one background thread optimises the table; a table
big enough gets its vector index (IVF, exact distances inside the probed partitions) first. The
compaction holds the table's writes (it rewrites fragments a delete may name); the replaced files are
removed KEEP_VERSIONS later, once no read can still be on them.
"""

from __future__ import annotations

import logging
import threading
import time
import warnings
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from ..lexical import Analysis

log = logging.getLogger("vector_gateway.lance")

# A table is optimised (small fragments compacted, new rows added to its indexes, old versions removed)
# once this many rows are outside its indexes or this many commits were made since the last time.
OPTIMIZE_UNINDEXED_ROWS = 20_000
OPTIMIZE_COMMITS = 200
OPTIMIZE_SMALL_FRAGMENTS = 32  # e.g. left by a writer that stopped before its upkeep: every read visits each
# The vector index is built once a table holds this many rows; below it a flat scan is exact and fast
# (a few milliseconds per 10,000 rows).
VECTOR_INDEX_MIN_ROWS = 50_000
ROWS_PER_PARTITION = 1_000  # IVF partitions: rows / this (about sqrt(rows) at a million)
UPKEEP_CHECK_S = 5.0  # a table's index statistics are read at most this often (checked after every write)
# Old versions are kept this long after an optimisation, for reads still running on them.
KEEP_VERSIONS = timedelta(minutes=1)
FTS_COLUMN = "search_text"


class Upkeep:
    """The upkeep of one store's tables. ``table`` opens a table by collection name; ``writing`` is the
    lock that serialises that table's writes; ``closed`` is set when the store closes (nothing runs then)."""

    def __init__(
        self, table: Callable[[str], Any], writing: Callable[[str], threading.Lock], closed: threading.Event,
        *, maintain: bool,
    ) -> None:  # fmt: skip
        self.table = table
        self.writing = writing
        self.closed = closed
        self.maintain = maintain
        self._lock = threading.Lock()
        self._commits: dict[str, int] = {}
        self._checked: dict[str, float] = {}
        self._optimizing: set[str] = set()
        self._timers: set[threading.Timer] = set()

    def committed(self, name: str) -> None:
        self._commits[name] = self._commits.get(name, 0) + 1

    def check(self, name: str) -> None:
        """Start the table's upkeep in the background when it is due. Never raises: the write that called it
        is committed, and the next check looks again."""
        if not self.maintain or self.closed.is_set():
            return
        try:
            due = self._due(name)
        except Exception as exc:  # noqa: BLE001 - the write is committed; upkeep is checked again later
            log.warning("checking the upkeep of %s failed: %s", name, exc)
            return
        if due:
            self._start(name)

    def stop(self) -> None:
        with self._lock:
            for timer in self._timers:
                timer.cancel()
            self._timers.clear()

    def _due(self, name: str) -> bool:
        if name in self._optimizing:
            return False
        if self._commits.get(name, 0) >= OPTIMIZE_COMMITS:
            return True
        if time.monotonic() - self._checked.get(name, -UPKEEP_CHECK_S) < UPKEEP_CHECK_S:
            return False
        self._checked[name] = time.monotonic()
        table = self.table(name)
        if needs_vector_index(table):
            return True
        if table.stats()["fragment_stats"]["num_small_fragments"] >= OPTIMIZE_SMALL_FRAGMENTS:
            return True
        return any(
            table.index_stats(i.name).num_unindexed_rows >= OPTIMIZE_UNINDEXED_ROWS for i in table.list_indices()
        )

    def _start(self, name: str) -> None:
        with self._lock:
            if name in self._optimizing:
                return
            self._optimizing.add(name)
        worker = threading.Thread(target=self._optimize_quietly, args=(name,), name=f"lance-optimize-{name}")
        worker.daemon = True
        worker.start()

    def _optimize_quietly(self, name: str) -> None:
        try:
            if not self.closed.is_set():
                self.optimize(name)
        except Exception as exc:  # noqa: BLE001 - upkeep only: searches stay right (flat scans), the next check retries
            log.warning("optimising %s failed: %s", name, exc)
        finally:
            self._optimizing.discard(name)

    def optimize(self, name: str, *, keep: timedelta = KEEP_VERSIONS) -> None:
        """Build the table's vector index when it is big enough, then compact small fragments and index new rows.

        The index is trained while writes go on (rows added meanwhile are searched flat until the next
        upkeep); the compaction holds the table's writes, because it rewrites fragments a delete may name."""
        table = self.table(name)
        if needs_vector_index(table):
            from lancedb.index import IvfFlat

            rows = table.count_rows()
            log.info("building the vector index of %s (%d rows)", name, rows)
            partitions = max(1, rows // ROWS_PER_PARTITION)
            table.create_index("vector", config=IvfFlat(distance_type="cosine", num_partitions=partitions))
        with self.writing(name):
            self._commits[name] = 0
            with warnings.catch_warnings():  # keep=0 is asked for where no one else reads (a migration's copy)
                warnings.filterwarnings("ignore", "optimize\\(cleanup_older_than=0\\)", UserWarning)
                table.optimize(cleanup_older_than=keep)
        if self.maintain and not self.closed.is_set():  # the replaced files go once no read can be on them
            timer = threading.Timer(KEEP_VERSIONS.total_seconds() + 1, self._clean_quietly, args=(name,))
            timer.daemon = True
            with self._lock:
                self._timers.add(timer)
            timer.start()

    def _clean_quietly(self, name: str) -> None:
        """Remove the versions (and files) older than KEEP_VERSIONS. Lance's only way without its Python
        package is an optimize() pass, which also compacts and indexes what arrived meanwhile (little)."""
        with self._lock:
            self._timers.difference_update({t for t in self._timers if t.finished.is_set()})
        if self.closed.is_set():
            return
        try:
            with self.writing(name):
                self.table(name).optimize(cleanup_older_than=KEEP_VERSIONS)
        except Exception as exc:  # noqa: BLE001 - disk only: the next upkeep removes them
            log.info("removing old versions of %s failed: %s", name, exc)


def needs_vector_index(table: Any) -> bool:
    """A chunk table (not a vector store: those are searched exactly) big enough and not indexed yet."""
    if FTS_COLUMN not in table.schema.names or any(i.columns == ["vector"] for i in table.list_indices()):
        return False
    return bool(table.count_rows() >= VECTOR_INDEX_MIN_ROWS)


def bm25_index(analysis: Analysis) -> Any:
    """BM25 over the gateway's analysed text (lexical.py): split on spaces, nothing else changed, so a query
    analysed the same way matches the terms Milvus' analyzer would (stemmed, lower-cased, no stop words).
    A "raw" collection (copied from an index made before stemming) gets words, lower-cased, stop words out."""
    from lancedb.index import FTS

    if analysis == "raw":
        return FTS(base_tokenizer="simple", lower_case=True, stem=False, remove_stop_words=True, ascii_folding=False)
    return FTS(base_tokenizer="whitespace", lower_case=False, stem=False, remove_stop_words=False, ascii_folding=False)


def key_indexes(table: Any, columns: list[str]) -> None:
    """B-tree indexes on the columns looked up by value: an `IN` of ten keys reads a few pages, not every row."""
    from lancedb.index import BTree

    for column in columns:
        table.create_index(column, config=BTree())
