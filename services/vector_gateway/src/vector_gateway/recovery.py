"""Start-up sweep: remove chunk rows of versions the registry never committed (a writer killed mid-write).

Searches already ignore such rows (only the registry's version is live); the sweep keeps chunk
counts and storage honest. A row is deleted only while its document's write lock is held and
after re-reading the registry, so a write in flight when the sweep began is never touched.
"""

from __future__ import annotations

import logging
from collections import defaultdict

from .filters import combine, in_list, quote
from .store import MilvusStore
from .upsert import registry_key

log = logging.getLogger("vector_gateway.recovery")


def uncommitted_versions(store: MilvusStore, collection: str) -> dict[str, set[str]]:
    """doc_id -> versions present in the collection that the registry does not name."""
    # Right after a crash, Lite may answer "released" to the first query although loading was asked for.
    store.client.load_collection(collection)
    rows = store.query(collection, 'doc_id != ""', ["doc_id", "version"])
    live = live_version_map(store, collection)
    stale: dict[str, set[str]] = defaultdict(set)
    for row in rows:
        if live.get(row["doc_id"]) != row["version"]:
            stale[row["doc_id"]].add(row["version"])
    return dict(stale)


def live_version_map(store: MilvusStore, collection: str) -> dict[str, str]:
    rows = store.registry_query(f"collection == {quote(collection)}", ["doc_id", "version"])
    return {row["doc_id"]: row["version"] for row in rows}


def delete_uncommitted(store: MilvusStore, collection: str, doc_id: str, versions: set[str]) -> int:
    """Delete ``versions`` of ``doc_id`` except the one the registry names now. Call under the doc's lock."""
    row = store.registry_get([registry_key(collection, doc_id)]).get(registry_key(collection, doc_id))
    doomed = sorted(versions - {row["version"]} if row else versions)
    if not doomed:
        return 0
    expr = combine(f"doc_id == {quote(doc_id)}", in_list("version", doomed))
    count = store.count(collection, expr)
    store.delete(collection, expr)
    return count
