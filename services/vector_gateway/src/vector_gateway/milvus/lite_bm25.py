"""BM25 scored with the whole collection's statistics on Milvus Lite, which scores each segment with its own (issue 52,
point 3).

Milvus Lite (3.x, pure Python) keeps a BM25 index per segment, each with its own document count, average length and
document frequencies (its engine's "TODO: BM25 IDF accuracy"); a Milvus server merges them across segments (the
query node's IDF oracle). The gateway flushes Lite after each write, so a document written alone is a segment of its
own until compaction merges four of a size: a passage written alone kept the IDF of a one-chunk collection in a
library of 5,000 (keyword 0.29, "irrelevant"), and on SciFact 282 of 300 queries ranked their first ten otherwise than
BM25 over the collection (bench.experiments.lite_bm25_stats).

Counting a term's chunks through Lite's API costs a second or more a query (a search per term, a `like` or a
`TEXT_MATCH` filter: the same experiment), so the statistics are kept here, and each keyword ranking Lite returns is
scored again with them, with Lite's own analyzer, formula and constants:

- a collection this store creates starts with empty statistics, and the rows it inserts are added, the rows it
  deletes (read just before the delete, up to DELETE_READ of them) taken out: it is never scanned;
- a collection made by another store, or one whose count another process changed (read at most every
  COUNT_CHECK_S), or a delete of more rows, is scanned once (1.3-1.8 s at 13,195 chunks, 7-9 s at 100,000); a search
  waits for the scan up to SCAN_WAIT_S, and answers with Lite's own scores past that while the scan goes on.

Lite picks the candidates by its own scores, so the store asks for DEPTH of them at least and for every chunk holding
a RARE term (MilvusStore._lite_keyword); their order and scores are the collection's.
"""

from __future__ import annotations

import json
import logging
import math
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from .schema import analyzer_params

# Lite's BM25 constants when an index sets none (the gateway's sets none: schema.chunk_index_params).
K1, B = 1.5, 0.75
COUNT_CHECK_S = 10.0  # how often a collection's row count is compared with the statistics' (other writers)
# Above this many rows a collection keeps Lite's own scores: its scan would take ~20 s, its statistics grow with it
# (2.3 MB for SciFact's 13,094 chunks: bench.experiments.lite_bm25_stats), and its segments (up to 100,000 rows
# each) are large enough that their statistics come close to the collection's.
MAX_ROWS = 200_000
# How long a search waits for a scan of the statistics (7-9 s at 100,000 chunks alone, 19 s beside a build: the
# search answers exactly); past it, Lite's own scores answer until the scan, which goes on, is done.
SCAN_WAIT_S = 30.0
DELETE_READ = 10_000  # rows a delete reads first to take them out of the statistics; a larger delete scans again
SCAN_BATCH = 16_384  # rows a page of the scan: Lite's iterator reads the collection again for each page
DEPTH = 100  # candidates asked of Lite at least (its first by its own scores), scored again here
# A query term in at most this many chunks is rare: when Lite's DEPTH candidates are all there were room for, every
# chunk holding one is read too (a few at the median on SciFact; the more chunks, the longer Lite takes to list them).
RARE = 20
SEARCH_TEXT = "search_text"
logger = logging.getLogger(__name__)


def is_lite(client: Any) -> bool:
    """Whether ``client`` talks to Milvus Lite, in process or as `milvus-lite server` (its version says so)."""
    return str(client.get_server_version()).startswith("milvus_lite")


@dataclass
class Statistics:
    """One collection's BM25 statistics: rows, their total length, each term's document frequency."""

    generation: int
    rows: int = 0
    length: int = 0
    df: Counter[str] = field(default_factory=Counter)
    checked: float = field(default_factory=time.monotonic)

    def add(self, documents: Iterable[Counter[str]]) -> None:
        for counts in documents:
            self.rows += 1
            self.length += sum(counts.values())
            self.df.update(counts.keys())

    def remove(self, documents: Iterable[Counter[str]]) -> None:
        for counts in documents:
            self.rows -= 1
            self.length -= sum(counts.values())
            for term in counts:
                if (left := self.df[term] - 1) > 0:
                    self.df[term] = left
                else:
                    del self.df[term]

    def score(self, query: Counter[str], counts: Counter[str]) -> float:
        """BM25 of a row (its term counts) for a query (its term counts), as Lite's SparseInvertedIndex scores."""
        average = self.length / self.rows if self.rows and self.length else 1.0
        length, total = sum(counts.values()), 0.0
        for term, weight in query.items():
            if tf := counts.get(term, 0):
                df = self.df.get(term, 1)
                idf = math.log((self.rows - df + 0.5) / (df + 0.5) + 1.0)
                total += weight * idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * length / average))
        return total


class LiteBm25:
    """The statistics of each collection a Lite store searches by keyword, kept as the store writes."""

    def __init__(
        self, describe: Callable[[str], dict[str, Any]], scan: Callable[[str], Iterator[dict[str, Any]]]
    ) -> None:
        self._describe = describe  # a collection's description, by the gateway's name
        self._scan = scan  # every row of a collection (its search_text), by the gateway's name
        self._lock = threading.Lock()
        # collection -> its scan while it runs, and until when searches wait for it
        self._scans: dict[str, tuple[threading.Thread, float]] = {}
        self._tables: dict[str, Statistics] = {}
        self._generation: dict[str, int] = {}
        self._analyzers: dict[str, Any] = {}
        self._too_large: dict[str, float] = {}  # collection -> when its count was last found over MAX_ROWS

    # -- writes -------------------------------------------------------------------------
    @contextmanager
    def inserting(self, name: str, rows: list[dict[str, Any]]) -> Iterator[None]:
        """Around an insert of ``rows`` into ``name``: they are added to its statistics when no scan ran meanwhile
        (a scan that did may have counted them already: the next search scans again)."""
        with self._lock:
            before = self._generation.get(name, 0)
        try:
            yield
        except BaseException:
            self.changed(name)  # some rows may be in
            raise
        counts = [self._counts(name, row.get(SEARCH_TEXT) or "") for row in rows] if name in self._tables else []
        self._apply(name, before, lambda table: table.add(counts))

    def created(self, name: str) -> None:
        """``name`` was just created empty by this store: its statistics are kept from its first insert, never read."""
        with self._lock:
            self._stale(name)
            self._tables[name] = Statistics(self._generation[name])

    @contextmanager
    def deleting(self, name: str, texts: Callable[[], list[str] | None]) -> Iterator[None]:
        """Around a delete from ``name``: the rows it removes (their search_text, read by ``texts`` before it; None
        when there are more than DELETE_READ) are taken out of its statistics; otherwise the next search scans."""
        with self._lock:
            before = self._generation.get(name, 0)
            kept = name in self._tables
        removed = texts() if kept else None
        try:
            yield
        except BaseException:
            self.changed(name)  # some rows may be gone
            raise
        counts = [self._counts(name, text) for text in removed] if removed is not None else None
        self._apply(name, before, None if counts is None else lambda table: table.remove(counts))

    def _apply(self, name: str, before: int, change: Callable[[Statistics], None] | None) -> None:
        """A write to ``name`` is done: its statistics take ``change`` when they are the ones that stood at the write's
        start (generation ``before``: no scan, no other change meanwhile); else, or with no change to make, the next
        search scans again. Over MAX_ROWS they are dropped: Lite's own scores from then on (_table)."""
        with self._lock:
            table = self._tables.get(name)
            if change is None or table is None or table.generation != before or self._generation.get(name, 0) != before:
                self._stale(name)
                return
            change(table)
            if table.rows > MAX_ROWS:
                self._stale(name)

    def changed(self, name: str) -> None:
        """Rows of ``name`` were deleted or replaced: its statistics are read again by the next search."""
        with self._lock:
            self._stale(name)

    def forget(self, name: str) -> None:
        with self._lock:
            self._stale(name)
            self._analyzers.pop(name, None)

    def _stale(self, name: str) -> None:
        self._tables.pop(name, None)
        self._generation[name] = self._generation.get(name, 0) + 1

    # -- searches -----------------------------------------------------------------------
    def rescore(
        self, name: str, query: str, hits: list[tuple[float, dict[str, Any]]], count: Callable[[], int]
    ) -> list[tuple[float, dict[str, Any]]]:
        """Lite's keyword hits (each entity with its search_text) scored with the collection's statistics, best
        first, the search_text taken out."""
        table = self._table(name, count)
        if table is None:  # over MAX_ROWS: Lite's own scores
            for _, entity in hits:
                entity.pop(SEARCH_TEXT, None)
            return hits
        terms = self._counts(name, query)
        scored = [(table.score(terms, self._counts(name, e.pop(SEARCH_TEXT, "") or "")), e) for _, e in hits]
        scored.sort(key=lambda pair: -pair[0])
        return [(score, entity) for score, entity in scored if score > 0]

    def rare_terms(self, name: str, query: str, count: Callable[[], int]) -> list[str]:
        """The query's terms that at most RARE chunks of the collection hold (none over MAX_ROWS)."""
        table = self._table(name, count)
        if table is None:
            return []
        return [term for term in self._counts(name, query) if 0 < table.df.get(term, 0) <= RARE]

    def _table(self, name: str, count: Callable[[], int]) -> Statistics | None:
        """The collection's statistics, read now when they are missing or stale (waiting up to SCAN_WAIT_S for the
        scan); None over MAX_ROWS or while a longer scan goes on."""
        if time.monotonic() - self._too_large.get(name, -COUNT_CHECK_S) < COUNT_CHECK_S:
            return None
        with self._lock:
            table = self._tables.get(name)
        if table is not None and time.monotonic() - table.checked >= COUNT_CHECK_S:
            table.checked = time.monotonic()
            if count() != table.rows:  # another process wrote
                self.changed(name)
                table = None
        if table is not None:
            return table
        if count() > MAX_ROWS:
            self._too_large[name] = time.monotonic()
            return None
        with self._lock:  # one scan at a time: a search that finds one running waits for it, up to its deadline
            scan, deadline = self._scans.get(name, (None, 0.0))
            if scan is None or not scan.is_alive():
                scan = threading.Thread(target=self._build_quietly, args=(name,), name="lite-bm25-scan", daemon=True)
                self._scans[name] = (scan, deadline := time.monotonic() + SCAN_WAIT_S)
                scan.start()
        scan.join(max(0.0, deadline - time.monotonic()))
        with self._lock:
            return self._tables.get(name)

    def _build(self, name: str) -> None:
        """The collection's statistics from a scan of its rows, kept unless a write came meanwhile."""
        with self._lock:
            self._generation[name] = generation = self._generation.get(name, 0) + 1
        built = Statistics(generation)
        built.add(self._counts(name, row.get(SEARCH_TEXT) or "") for row in self._scan(name))
        with self._lock:
            if self._generation.get(name) == generation:  # no write meanwhile: keep it
                self._tables[name] = built

    def _build_quietly(self, name: str) -> None:
        try:
            self._build(name)
        except Exception:  # a scan cut short (the store closed, the collection dropped): the next search tries again
            logger.debug("lite_bm25: the statistics of %s were not read", name, exc_info=True)
        finally:
            with self._lock:
                if self._scans.get(name, (None, 0.0))[0] is threading.current_thread():
                    del self._scans[name]

    def _counts(self, name: str, text: str) -> Counter[str]:
        analyzer = self._analyzers.get(name) or self._analyzer(name)
        return Counter(analyzer.tokenize(text))

    def _analyzer(self, name: str) -> Any:
        """The analyzer of the collection's BM25 field, from its schema (the store's default when it names none)."""
        from milvus_lite.analyzer.factory import create_analyzer

        params: Any = analyzer_params("english")
        for described in self._describe(name)["fields"]:
            if described["name"] == SEARCH_TEXT and "analyzer_params" in described.get("params", {}):
                params = described["params"]["analyzer_params"]
                params = json.loads(params) if isinstance(params, str) else params
        self._analyzers[name] = analyzer = create_analyzer(params)
        return analyzer
