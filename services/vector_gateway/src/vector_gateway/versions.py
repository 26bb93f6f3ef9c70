"""Document versions and write leases: how any number of gateway replicas share one Milvus safely.

docs/consistency.md explains the design. In short:
- A version id starts with the write's *order* (servicekit.write_order), so "newer" means the same on every
  replica, whatever their clocks say: of two writes of one document the larger order wins.
- Before the first chunk row of a version exists, its writer records a lease on it (writer id, expiry). The
  writer commits (names the version in the registry) only while its lease has a margin left, and before the
  caller's commit deadline, if it gave one; it ends the lease (deletes the lease row) once the version is
  committed or abandoned.
- A write never commits over content of a larger order: it deletes its own rows instead.
- Rows of a version are deleted only when the registry does not name it and no live lease covers it: such a
  version can never become named again, so the registry never names a version whose rows are gone.
Blocking: runs in worker threads.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from ingestion_contracts.gateway import RESERVED_METADATA_KEY
from servicekit import Conflict, DependencyUnavailable

from . import names
from .filters import in_collection
from .index import DocumentIndex
from .records import REGISTRY_FIELDS
from .where import And, Cmp, Eq, In, Ne, Or, Where, in_

log = logging.getLogger("vector_gateway.versions")

LEASE_SECONDS = 600.0
LATE_REWRITES = 2  # how often a commit that landed after its lease, with rows swept meanwhile, is written again
CLOCK_SKEW_SECONDS = 60.0  # how far replica clocks may disagree; a writer stops committing this long before expiry
VERSION_LENGTH = 28  # 16 hex digits of write order, 12 random (ids of 0.4-0.5: 12 of milliseconds, 4 of sequence)
ORDER_DIGITS = 16
DELETE_GROUP = 100  # documents per delete call
_HEX = frozenset("0123456789abcdef")


def version_for(order: int) -> str:
    """A new version id of a write of this order: unique, and sorting as its order does."""
    return f"{order:0{ORDER_DIGITS}x}{secrets.randbits(48):012x}"


def is_ordered(version: str) -> bool:
    """Versions written before 0.4 are random ids with no order."""
    return len(version) == VERSION_LENGTH and set(version) <= _HEX


def order_of(version: str) -> int:
    """The write order of a version; 0 for a pre-0.4 random id. Ids of 0.4-0.5 read as ms << 16 | sequence,
    the layout of servicekit.write_order.clock_floor, so every order taken now is larger."""
    return int(version[:ORDER_DIGITS], 16) if is_ordered(version) else 0


def newer(a: str, b: str) -> bool:
    """True when version ``a`` was written by a later write than ``b``; a pre-0.4 version is older than any other."""
    return is_ordered(a) and (not is_ordered(b) or a > b)


def ingest_of(row: dict[str, Any]) -> dict[str, Any]:
    """The gateway's own bookkeeping in a registry row (the reserved metadata key)."""
    return dict((row.get("metadata") or {}).get(RESERVED_METADATA_KEY) or {})


def content_version(row: dict[str, Any]) -> str:
    """The version that wrote a registry row's content (a relabel copies content under a new version)."""
    return str(ingest_of(row).get("content_version") or row["version"])


def content_order(row: dict[str, Any]) -> int:
    """The write order of the write that stored a registry row's content."""
    return order_of(content_version(row))


def content_status(row: dict[str, Any]) -> Literal["indexed", "replaced", ""]:
    """What the write that stored this content answered (indexed or replaced); '' before 0.6."""
    status = ingest_of(row).get("content_status")
    return "indexed" if status == "indexed" else "replaced" if status == "replaced" else ""


def chunk_id(doc_id: str, version: str, index: int) -> str:
    """A chunk row's primary key: unique per document version."""
    return f"{doc_id}-{version}-{index}"


def lease_key(collection: str, doc_id: str, version: str) -> str:
    return f"{names.collection(collection)}/{doc_id}/{version}"


def _default_writer() -> str:
    return f"{socket.gethostname()[:200]}:{os.getpid()}:{secrets.token_hex(3)}"


@dataclass
class LeasePolicy:
    """How long a write may take between its first chunk row and its commit, and who is writing."""

    seconds: float = LEASE_SECONDS
    skew: float = CLOCK_SKEW_SECONDS
    writer: str = field(default_factory=_default_writer)
    clock: Callable[[], float] = time.time

    def now_ms(self) -> int:
        return int(self.clock() * 1000)

    def expiry_ms(self) -> int:
        return self.now_ms() + int(self.seconds * 1000)

    def may_commit(self, expires_ms: int) -> bool:
        # Other replicas end the lease when their own clock passes expires_ms: stop a skew's length before.
        return self.now_ms() + int(self.skew * 1000) < expires_ms


@dataclass(frozen=True)
class CommitDeadline:
    """Commit only before this moment of the monotonic clock: a queue worker's job lease, as the caller gave it
    (commit_within_ms). A worker whose lease lapsed (a frozen broker, a long pause) may still be running while
    another worker runs the same job; past the deadline its write commits nothing (fencing)."""

    at: float

    @classmethod
    def within_ms(cls, ms: int) -> CommitDeadline:
        return cls(time.monotonic() + ms / 1000)

    def passed(self) -> bool:
        return time.monotonic() >= self.at


class DeadlinePassed(Exception):
    """The commit deadline passed before these versions were committed; their rows are deleted."""


# -- which versions are dead ----------------------------------------------------------------------
def _versions_present(store: DocumentIndex, collection: str, doc_ids: list[str] | None) -> dict[str, set[str]]:
    where: Where = in_("doc_id", doc_ids) if doc_ids is not None else Ne("doc_id", "")
    found: dict[str, set[str]] = defaultdict(set)
    for row in store.query_few(collection, where, ["doc_id", "version"]):
        found[row["doc_id"]].add(row["version"])
    return found


def _live_leases(store: DocumentIndex, collection: str, doc_ids: list[str] | None, now_ms: int) -> set[tuple[str, str]]:
    docs: tuple[Where, ...] = (in_("doc_id", doc_ids),) if doc_ids is not None else ()
    where = And((in_collection(collection), *docs, Cmp("expires_ms", ">", now_ms)))
    return {(row["doc_id"], row["version"]) for row in store.leases_query(where)}


def _named_versions(store: DocumentIndex, collection: str, doc_ids: list[str] | None) -> dict[str, str]:
    if doc_ids is None:
        rows = store.registry_query(in_collection(collection), ["doc_id", "version"])
    else:
        keys = [f"{names.collection(collection)}/{d}" for d in doc_ids]
        rows = list(store.registry_get(keys, ["key", "doc_id", "version"]).values())
    return {row["doc_id"]: row["version"] for row in rows}


def dead_versions(store: DocumentIndex, collection: str, doc_ids: list[str] | None, now_ms: int) -> dict[str, set[str]]:
    """doc_id -> versions with rows that the registry does not name and that no live lease covers.

    The reads go in this order, each after the previous one answered: rows, leases, registry. A writer
    records its lease before its first row, so a version whose rows we saw either still shows its lease,
    or its writer has committed or abandoned it; then, if the registry does not name it, nobody ever will."""
    present = _versions_present(store, collection, doc_ids)
    if not present:
        return {}
    scope = None if doc_ids is None else sorted(present)
    leased = _live_leases(store, collection, scope, now_ms)
    named = _named_versions(store, collection, scope)
    dead = {d: {v for v in vs if v != named.get(d) and (d, v) not in leased} for d, vs in present.items()}
    return {d: vs for d, vs in dead.items() if vs}


def delete_versions(store: DocumentIndex, collection: str, dead: dict[str, set[str]], *, count: bool = False) -> int:
    """Delete the rows of these versions; the number deleted when ``count`` (one more query)."""
    removed = 0
    items = sorted(dead.items())
    for start in range(0, len(items), DELETE_GROUP):
        group = items[start : start + DELETE_GROUP]
        where = Or(tuple(And((Eq("doc_id", d), in_("version", sorted(vs)))) for d, vs in group))
        if count:
            removed += store.count(collection, where)
        store.delete(collection, where)
    return removed


# -- writing a version ----------------------------------------------------------------------------
@dataclass
class NewVersion:
    """One document's new version: its registry row commits it."""

    doc_id: str
    key: str
    version: str
    registry: dict[str, Any]
    based_on: str | None = None  # a relabel copies this version: commit only while the registry still names it
    # Its order came with the request (taken when the write was submitted): stored content of the same order
    # was written by another try of this same write.
    submitted: bool = False
    # committed | superseded (content of a larger order is committed) | duplicate (another try of this write
    # committed first) | conflict (a copy whose source is no longer named)
    outcome: str = "pending"
    current: dict[str, Any] | None = None  # the registry row seen just before committing


def _outcome(new: NewVersion) -> str:
    """Whether ``new`` may be committed over ``new.current``, the registry row read just before committing."""
    if new.based_on is not None:  # a copy (relabel, rewrite): only while the registry still names its source
        return "committed" if (new.current or {}).get("version") == new.based_on else "conflict"
    if new.current is None:
        return "committed"
    stored = content_version(new.current)
    if new.submitted and order_of(stored) == order_of(new.version) and stored != new.version:
        return "duplicate"
    # Equal orders taken on two replicas without a broker (one millisecond, one stored order seen) are two
    # writes on equal footing: the random part of the version decides, the same way everywhere.
    return "superseded" if newer(stored, new.version) else "committed"


def write_conflict(doc_id: str) -> Conflict:
    return Conflict(
        f"Document {doc_id!r} changed while this write was being stored; nothing was changed by it.",
        code="WRITE_CONFLICT",
        suggestion="Read the document again and retry.",
        details={"doc_id": doc_id},
    )


class VersionWriter:
    """Store rows of new versions, commit them, and delete versions nobody can commit any more."""

    def __init__(self, store: DocumentIndex, leases: LeasePolicy, deadline: CommitDeadline | None = None) -> None:
        self.store = store
        self.leases = leases
        self.deadline = deadline

    def write(self, collection: str, news: list[NewVersion], rows: list[dict[str, Any]]) -> None:
        expires = self._open(collection, news)
        try:
            self.store.insert(collection, rows)
        except BaseException:
            self._abandon(collection, news)
            raise
        self._commit(collection, news, expires, rows)

    def _open(self, collection: str, news: list[NewVersion]) -> int:
        expires = self.leases.expiry_ms()
        self.store.leases_open([
            {"key": lease_key(collection, n.doc_id, n.version), "collection": names.collection(collection),
             "doc_id": n.doc_id, "version": n.version, "writer": self.leases.writer, "expires_ms": expires}
            for n in news
        ])  # fmt: skip
        return expires

    def _commit(
        self, collection: str, news: list[NewVersion], expires: int, rows: list[dict[str, Any]], depth: int = 0
    ) -> None:
        current = self.store.registry_get([n.key for n in news], REGISTRY_FIELDS)
        if not self.leases.may_commit(expires):
            self._abandon(collection, news)
            raise DependencyUnavailable(
                f"Storing {len(news)} document(s) took longer than the write lease ({self.leases.seconds:.0f} s); "
                "nothing was committed.",
                suggestion="Retry; for very large documents raise VECTOR_GATEWAY_WRITE_LEASE_S.",
            )
        for n in news:
            n.current = current.get(n.key)
            n.outcome = _outcome(n)
        losers = [n for n in news if n.outcome != "committed"]
        if losers:
            self._abandon(collection, losers)
        winners = [n for n in news if n.outcome == "committed"]
        if winners:
            # A rewrite (depth > 0) only restores content already committed: the deadline was checked for it.
            if depth == 0 and self.deadline is not None and self.deadline.passed():
                self._abandon(collection, winners)  # exactly what a lapsed write lease does
                raise DeadlinePassed
            self._publish(collection, winners)
            if not self.leases.may_commit(expires):  # committed late: a sweep may have taken its rows meanwhile
                self._rewrite_swept(collection, winners, rows, depth)

    def _publish(self, collection: str, winners: list[NewVersion]) -> None:
        try:
            self.store.registry_upsert([n.registry for n in winners])
        except BaseException:
            self._settle(collection, winners)
            raise
        self._end_leases(collection, winners)

    def _rewrite_swept(
        self, collection: str, winners: list[NewVersion], rows: list[dict[str, Any]], depth: int
    ) -> None:
        """A writer that stalled past its lease between its last registry read and its commit call committed a
        version whose rows another replica may have deleted as dead (Milvus has no compare-and-set to refuse
        that commit). Check the rows; where some are gone, write the same content again as a fresh version,
        under a fresh lease, committed only while the registry still names the swept one. The document ends
        whole: with this content (last committed wins), or with whatever a writer committed since."""
        swept = [n for n in winners if self._rows_of(collection, n) < int(n.registry["chunk_count"])]
        if not swept:
            return
        if depth >= LATE_REWRITES:
            raise DependencyUnavailable(
                f"{len(swept)} document(s) were committed after their write lease and their rows were removed "
                "meanwhile; writing them again did not finish within the lease either.",
                suggestion="Retry the write; for very large documents raise VECTOR_GATEWAY_WRITE_LEASE_S.",
            )
        log.warning("%d version(s) committed after their lease lost rows to a sweep: writing them again", len(swept))
        for n in swept:
            version = version_for(order_of(n.version))  # the same write: the same order
            again = NewVersion(n.doc_id, n.key, version, {**n.registry, "version": version}, based_on=n.version)
            copied = [{**r, "version": version, "chunk_id": chunk_id(n.doc_id, version, r["chunk_index"])}
                      for r in rows if r["doc_id"] == n.doc_id]  # fmt: skip
            expires = self._open(collection, [again])
            try:
                self.store.insert(collection, copied)
            except BaseException:
                self._abandon(collection, [again])
                raise
            self._commit(collection, [again], expires, copied, depth + 1)
            if again.outcome == "committed":
                n.version, n.registry = again.version, again.registry
            elif again.current is not None:  # a write committed since: that one stays, whole
                n.outcome, n.current = "superseded", again.current

    def _rows_of(self, collection: str, new: NewVersion) -> int:
        return self.store.count(collection, And((Eq("doc_id", new.doc_id), In("version", (new.version,)))))

    def _settle(self, collection: str, winners: list[NewVersion]) -> None:
        """After a failed commit call: keep the versions it committed anyway, abandon the others."""
        try:
            now = self.store.registry_get([n.key for n in winners], ["key", "version"])
        except Exception:  # unknown outcome: the leases expire and a later sweep decides
            log.exception("commit outcome unknown; leases of %d version(s) will expire", len(winners))
            return
        landed = [n for n in winners if now.get(n.key, {}).get("version") == n.version]
        self._end_leases(collection, landed)
        self._abandon(collection, [n for n in winners if n not in landed])

    def _end_leases(self, collection: str, news: list[NewVersion]) -> None:
        try:
            self.store.leases_end([lease_key(collection, n.doc_id, n.version) for n in news])
        except Exception as exc:  # noqa: BLE001 - a lease left behind only delays clean-up until it expires
            log.warning("could not end %d write lease(s) in %s: %s", len(news), collection, exc)

    def _abandon(self, collection: str, news: list[NewVersion]) -> None:
        """Best effort: delete the rows of versions never committed, then their leases."""
        if not news:
            return
        try:
            delete_versions(self.store, collection, {n.doc_id: {n.version} for n in news})
        except Exception:  # the original error is the one to report; the lease expires, a sweep finishes
            log.exception("could not delete rows of abandoned versions in %s; searches ignore them", collection)
            return
        self._end_leases(collection, news)

    def retire(self, collection: str, doc_ids: list[str]) -> bool:
        """Delete every version of these documents that nobody can commit any more; False if that failed."""
        try:
            dead = dead_versions(self.store, collection, doc_ids, self.leases.now_ms())
            delete_versions(self.store, collection, dead)
        except Exception as exc:  # noqa: BLE001 - committed already; stale rows are invisible to searches
            log.warning("could not delete old chunk versions in %s: %s", collection, exc)
            return False
        return True
