"""A Lance table's upkeep: its indexes made and kept current, small fragments compacted, old versions removed.

New rows are searched by a flat scan until the table is optimised, and that is dear: 200 rows outside the
BM25 index add ~12 ms to every keyword ranking of a 1M-chunk table, 1,000 rows ~20 ms at 100k
(bench.experiments.lance_upkeep).
After each write the store calls ``check``; one background thread optimises the table when it is due:
at once when many rows sit outside the indexes, many commits piled up or many small fragments are left (a
writer that stopped before its upkeep), or a table is big enough for its vector index (IVF with int8 vectors,
the best re-ranked exactly), or grew to twice the rows its index was trained on; and for any rows outside an
index, once the optimisations take at most a tenth of the time (an optimisation costs 0.2 s at 2k rows, 1.8 s
at 100k, 12 s at 1M). A check that finds the upkeep due later looks again then (a timer), so the last rows of
an ingest are indexed without another write. The compaction holds the table's writes (it rewrites fragments a
delete may name); the replaced files are removed KEEP_VERSIONS later, once no read can still be on them.
"""

from __future__ import annotations

import logging
import threading
import time
import warnings
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from servicekit import idle_trimmer

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
# Rows added after an index was trained go into its existing partitions: a table that grew from 50,000 rows to a
# million would search partitions twenty times the size it was made for. The index is trained again (the old one
# serves meanwhile) once the table holds this many times the rows it was trained on: at 100k, 200k, 400k, 800k, ...
RETRAIN_GROWTH = 2
# The kind vector_index_config makes: IVF with int8 scalar-quantised vectors, searched with an exact re-rank of the
# best candidates (store.py). On a million real-structured chunks (bench.experiments.lance_levers, docs/scale.md) it
# reaches a recall@10 of 0.97 against an exact scan at 96 of 1,000 partitions, where IVF_FLAT needs 40 probes for
# 0.957 and reads four times the bytes per row; IVF_PQ and IVF_HNSW_SQ stayed under 0.89 and 0.86.
VECTOR_INDEX_KIND = "IVF_SQ"
UPKEEP_CHECK_S = 5.0  # a table's index statistics are read at most this often (checked after every write)
OPTIMIZE_SHARE = 10  # rows outside an index wait at least this many times the table's last optimisation
# Old versions are kept this long after an optimisation, for reads still running on them.
KEEP_VERSIONS = timedelta(minutes=1)
FTS_COLUMN = "search_text"
# Lance scores the rows its BM25 index holds with the index's statistics, rows written since with the whole table's:
# a passage indexed alone keeps a one-chunk IDF (BM25 0.6) while 5,000 rows written after it wait outside (18.4 once
# indexed with them). A write that leaves the index holding fewer than 1 / BM25_LAG of the table's rows is therefore
# indexed before it answers, so a search right after it scores every passage as the library at rest would (IDF off
# by ln 2 at most). Doubling bounds the cost: a library that grows from nothing to N rows pays about two upkeeps of N.
BM25_LAG = 2


class Upkeep:
    """The upkeep of one store's tables. ``table`` opens a table by collection name; ``writing`` is the
    lock that serialises that table's writes; ``closed`` is set when the store closes (nothing runs then);
    ``changed`` is told of each commit to a table: the store's (``committed``) and the upkeep's own (an
    optimisation, a clean-up)."""

    def __init__(
        self, table: Callable[[str], Any], writing: Callable[[str], threading.Lock], closed: threading.Event,
        *, maintain: bool, changed: Callable[[str], None] | None = None,
    ) -> None:  # fmt: skip
        self.table = table
        self.changed = changed or (lambda name: None)
        self.writing = writing
        self.closed = closed
        self.maintain = maintain
        self._lock = threading.Lock()
        self._commits: dict[str, int] = {}
        self._checked: dict[str, float] = {}
        self._optimizing: set[str] = set()
        self._timers: set[threading.Timer] = set()
        self._later: dict[str, threading.Timer] = {}  # a table's next check, when one is due later
        self._took: dict[str, float] = {}  # a table's last optimisation: seconds, and when it ended
        self._ended: dict[str, float] = {}
        self._indexed: dict[str, int] = {}  # a table's rows when its indexes were last brought up to date
        self._running: dict[str, threading.Lock] = {}  # held while a table is optimised (one at a time)

    def committed(self, name: str) -> None:
        self._commits[name] = self._commits.get(name, 0) + 1
        self.changed(name)

    def check(self, name: str) -> None:
        """Start the table's upkeep in the background when it is due. Never raises: the write that called it
        is committed, and the next check looks again."""
        if not self.maintain or self.closed.is_set():
            return
        try:
            if self._lagging(name):
                self._optimize_now(name)
                return
            wait = self._due(name)
        except Exception as exc:  # noqa: BLE001 - the write is committed; upkeep is checked again later
            log.warning("checking the upkeep of %s failed: %s", name, exc)
            return
        if wait == 0:
            self._start(name)
        elif wait is not None:
            self._check_later(name, wait)

    def stop(self) -> None:
        with self._lock:
            for timer in [*self._timers, *self._later.values()]:
                timer.cancel()
            self._timers.clear()
            self._later.clear()

    def _due(self, name: str) -> float | None:
        """Seconds until the table's upkeep is due: 0 now, None nothing to do (or it runs: it checks again)."""
        if name in self._optimizing:
            return None
        if self._commits.get(name, 0) >= OPTIMIZE_COMMITS:
            return 0.0
        now = time.monotonic()
        since = now - self._checked.get(name, -UPKEEP_CHECK_S)
        if since < UPKEEP_CHECK_S:
            return UPKEEP_CHECK_S - since
        self._checked[name] = now
        table = self.table(name)
        if needs_vector_index(table):
            return 0.0
        if table.stats()["fragment_stats"]["num_small_fragments"] >= OPTIMIZE_SMALL_FRAGMENTS:
            return 0.0
        unindexed = unindexed_rows(table)
        if unindexed >= OPTIMIZE_UNINDEXED_ROWS:
            return 0.0
        if unindexed == 0:
            return None
        pause = max(UPKEEP_CHECK_S, OPTIMIZE_SHARE * self._took.get(name, 0.0))
        return max(0.0, pause - (now - self._ended.get(name, -pause)))

    def _check_later(self, name: str, seconds: float) -> None:
        """One timer per table: the check it runs schedules the next one if the upkeep is still not due."""
        with self._lock:
            pending = self._later.get(name)
            if (pending is not None and not pending.finished.is_set()) or self.closed.is_set():
                return
            timer = threading.Timer(seconds + 0.05, self._check_now, args=(name,))
            timer.daemon = True
            self._later[name] = timer
        timer.start()

    def _check_now(self, name: str) -> None:
        with self._lock:
            self._later.pop(name, None)
        self.check(name)

    def _lagging(self, name: str) -> bool:
        """Whether the table's BM25 index holds some rows but fewer than 1 / BM25_LAG of them (an index that holds
        none scores every row with the table's statistics: nothing to mend)."""
        if name in self._optimizing or not self._commits.get(name):  # nothing written since its last upkeep
            return False
        return self._behind(name)

    def _behind(self, name: str) -> bool:
        table = self.table(name)
        if FTS_COLUMN not in table.schema.names:
            return False
        rows = table.count_rows()
        if name not in self._indexed:  # a table this process has not optimised: ask its index once
            self._indexed[name] = rows - unindexed_rows(table)
        return self._indexed[name] > 0 and rows > BM25_LAG * self._indexed[name]

    def _optimize_now(self, name: str) -> None:
        """Optimise the table in the caller's thread, after any upkeep of it already running."""
        with self._lock:
            self._optimizing.add(name)
        began = time.monotonic()
        try:
            with self._running_lock(name):
                if self._behind(name):  # not mended meanwhile by the upkeep it waited for
                    self.optimize(name)
        finally:
            self._took[name], self._ended[name] = time.monotonic() - began, time.monotonic()
            self._optimizing.discard(name)

    def _running_lock(self, name: str) -> threading.Lock:
        with self._lock:
            return self._running.setdefault(name, threading.Lock())

    def _start(self, name: str) -> None:
        with self._lock:
            if name in self._optimizing:
                return
            self._optimizing.add(name)
        worker = threading.Thread(target=self._optimize_quietly, args=(name,), name=f"lance-optimize-{name}")
        worker.daemon = True
        worker.start()

    def _optimize_quietly(self, name: str) -> None:
        began = time.monotonic()
        try:
            if not self.closed.is_set():  # work for the idle trimmer: it trims (and releases caches) after, not during
                with self._running_lock(name), idle_trimmer().busy():
                    self.optimize(name)
        except Exception as exc:  # noqa: BLE001 - upkeep only: searches stay right (flat scans), the next check retries
            log.warning("optimising %s failed: %s", name, exc)
        finally:
            self._took[name], self._ended[name] = time.monotonic() - began, time.monotonic()
            self._optimizing.discard(name)
        self.check(name)  # rows written meanwhile

    def optimize(self, name: str, *, keep: timedelta = KEEP_VERSIONS) -> None:
        """Build the table's vector index when it is big enough, then compact small fragments and index new rows.

        The index is trained while writes go on (rows added meanwhile are searched flat until the next
        upkeep); the compaction holds the table's writes, because it rewrites fragments a delete may name."""
        table = self.table(name)
        if needs_vector_index(table):
            build_vector_index(table, name)
        with self.writing(name):
            self._commits[name] = 0
            rows = table.count_rows()
            with warnings.catch_warnings():  # keep=0 is asked for where no one else reads (a migration's copy)
                warnings.filterwarnings("ignore", "optimize\\(cleanup_older_than=0\\)", UserWarning)
                table.optimize(cleanup_older_than=keep)
            self._indexed[name] = rows
        self.changed(name)
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
            with self.writing(name), idle_trimmer().busy():
                self.table(name).optimize(cleanup_older_than=KEEP_VERSIONS)
            self.changed(name)
        except Exception as exc:  # noqa: BLE001 - disk only: the next upkeep removes them
            log.info("removing old versions of %s failed: %s", name, exc)


def index_name(rows: int) -> str:
    """The vector index's name records its kind and the rows it was trained on (vector_ivf_sq_t1000000)."""
    return f"vector_{VECTOR_INDEX_KIND.lower()}_t{rows}"


def trained_rows(name: str) -> int | None:
    """The rows an index of this engine's kind was trained on, from its name; None for any other index."""
    prefix = f"vector_{VECTOR_INDEX_KIND.lower()}_t"
    return int(name[len(prefix) :]) if name.startswith(prefix) and name[len(prefix) :].isdigit() else None


def needs_vector_index(table: Any) -> bool:
    """A chunk table (not a vector store: those are searched exactly) big enough, and with no vector index of the
    engine's kind yet, or one trained on a third of its rows or fewer (RETRAIN_GROWTH)."""
    if FTS_COLUMN not in table.schema.names:
        return False
    rows = table.count_rows()
    if rows < VECTOR_INDEX_MIN_ROWS:
        return False
    trained = [trained_rows(i.name) for i in table.list_indices() if i.columns == ["vector"]]
    return not trained or any(t is None or rows >= RETRAIN_GROWTH * t for t in trained)


def build_vector_index(table: Any, name: str) -> None:
    """Train the vector index on the table as it is; the one it replaces serves until the new one is in place."""
    rows = table.count_rows()
    old = [i.name for i in table.list_indices() if i.columns == ["vector"]]
    log.info("building the vector index of %s (%d rows%s)", name, rows, f", replacing {old}" if old else "")
    table.create_index("vector", config=vector_index_config(rows), name=index_name(rows), replace=True)
    for stale in old:
        if stale != index_name(rows):
            table.drop_index(stale)


def vector_index_config(rows: int) -> Any:
    """IVF_SQ with partitions of ROWS_PER_PARTITION rows, said as a target size and not as a count: Lance's
    optimize() re-partitions an index made with a count to its own default size at the next upkeep (80 partitions
    of 1,000 rows became 3; at 1M, 1,000 became 33, so 96 probes read every row: 58 ms a dense ranking instead of
    12), and keeps an index made with a target size as it was."""
    from lancedb.index import IvfSq

    return IvfSq(distance_type="cosine", target_partition_size=max(1, min(rows, ROWS_PER_PARTITION)))


def unindexed_rows(table: Any) -> int:
    """The most rows any of the table's indexes has not taken in yet (searched flat until the next upkeep)."""
    return max((table.index_stats(i.name).num_unindexed_rows for i in table.list_indices()), default=0)


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
