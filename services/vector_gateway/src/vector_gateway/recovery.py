"""Sweep: remove chunk rows of versions that no live writer can commit any more (a writer killed mid-write).

Searches already ignore such rows (only the registry's version is live); the sweep keeps chunk counts and
storage honest. It follows the rule of versions.py: a version's rows go only when the registry does not
name it and no live write lease covers it, so a write in flight on any replica is never touched, even
one that has written all its rows and not yet committed (docs/consistency.md).
"""

from __future__ import annotations

from .filters import in_collection
from .index import DocumentIndex
from .versions import dead_versions, delete_versions
from .where import And, Cmp


def sweep_collection(store: DocumentIndex, collection: str, now_ms: int) -> int:
    """Delete dead versions' rows in ``collection``, then its expired leases; the number of rows deleted."""
    # Right after a crash, Lite may answer "released" to the first query although loading was asked for:
    # the store loads again then (a forced load here could release it under a search running meanwhile).
    store.ensure_loaded(collection)
    removed = delete_versions(store, collection, dead_versions(store, collection, None, now_ms), count=True)
    # An expired lease counts as no lease (its writer commits nothing after it): its row is only clutter.
    store.leases_delete(And((in_collection(collection), Cmp("expires_ms", "<=", now_ms))))
    return removed
