"""Milvus Lite slows as a collection grows: past ~100,000 chunks the gateway says so, once per collection.

Measured here (docs/scale.md, bench.scale): a search through the MCP tool takes ~0.7 s at 100k chunks on Milvus Lite
and ~1.4 s at 300k, its memory ~23 KB a chunk (a million chunks do not fit a laptop), where Lance answers in under
0.1 s at 1M. So the warning names the move: vector-gateway-migrate, or VECTOR_GATEWAY_MIGRATE_LITE at the next
start. Counts are read after writes at most every CHECK_EVERY_S per collection, and whenever a listing counts anyway.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from ingestion_contracts.gateway import LITE_SLOWS_AT_CHUNKS

log = logging.getLogger("vector_gateway")

LITE_SLOWS_AT = LITE_SLOWS_AT_CHUNKS  # chunks in one collection
CHECK_EVERY_S = 30.0


class LiteGrowth:
    """Warns once per collection that passes LITE_SLOWS_AT chunks; ``active`` is False on any other engine."""

    def __init__(self, active: bool, command: str) -> None:
        self.active = active
        self.command = command
        self._warned: set[str] = set()
        self._checked: dict[str, float] = {}
        self._lock = threading.Lock()

    def seen(self, collection: str, chunks: int) -> None:
        """A count read anyway (a listing, a collection's stats): warn if it passed the mark."""
        if not self.active or chunks < LITE_SLOWS_AT:
            return
        with self._lock:
            if collection in self._warned:
                return
            self._warned.add(collection)
        log.warning(
            "collection %r holds %d chunks on Milvus Lite, which slows past ~%d (a search ~0.7 s at 100k and ~1.4 s "
            "at 300k chunks, ~23 KB of memory a chunk). Lance, the default engine, answers in under 0.1 s at 1M: "
            "stop the server and run `%s`, or restart with VECTOR_GATEWAY_MIGRATE_LITE=true (nothing is lost; the "
            "Lite files stay as they were)",
            collection, chunks, LITE_SLOWS_AT, self.command,
        )  # fmt: skip

    def check(self, collection: str, count: Callable[[], int]) -> None:
        """At start and after writes: count the collection (``count``) unless it warned already or counted lately."""
        if not self.active or collection in self._warned:
            return
        now = time.monotonic()
        with self._lock:
            if now - self._checked.get(collection, -CHECK_EVERY_S) < CHECK_EVERY_S:
                return
            self._checked[collection] = now
        try:
            self.seen(collection, count())
        except Exception as exc:  # noqa: BLE001 - the write succeeded; a count that fails only costs the warning
            log.debug("counting %s for the Lite growth check failed: %s", collection, exc)
