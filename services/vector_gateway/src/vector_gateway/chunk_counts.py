"""Each collection's chunk count for the small-library BM25 scale (calibration.keyword_scale), read from the index
at most every ``ttl_s`` seconds and again at once after a write to it: a count costs ~8 ms on Milvus Lite at 14k
chunks, and a keyword ranking needs one."""

from __future__ import annotations

import time

from .index import DocumentIndex


class ChunkCounts:
    def __init__(self, store: DocumentIndex, ttl_s: float = 10.0) -> None:
        self.store, self.ttl_s = store, ttl_s
        self._seen: dict[str, tuple[float, int]] = {}

    def __call__(self, name: str) -> int:
        now = time.monotonic()
        seen = self._seen.get(name)
        if seen is None or now - seen[0] > self.ttl_s:
            seen = self._seen[name] = (now, self.store.count(name))
        return seen[1]

    def forget(self, *names: str) -> None:
        """A write changed these collections: their next search counts again (a library that grew from one chunk
        to 5,000 is not scaled as one chunk for the next ten seconds)."""
        for name in names:
            self._seen.pop(name, None)
