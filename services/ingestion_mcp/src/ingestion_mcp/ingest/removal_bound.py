"""No mass removal by mistake: how many of a folder's documents its syncs may remove, over time (docs/sync.md).

A sync holds (removes none of) the documents whose files are gone when, counting the removals of the same folder
in the last WINDOW_S (10 minutes) with this sync's (each net of what the same sync added: a move or a rename loses
nothing):
- more than BOUND_COUNT (10) and more than BOUND_SHARE (25%) of the folder's documents would go, or
- more than SMALL_SHARE (half) of them would go, however few: a folder of 10 or fewer documents is protected too.
`max_removals` (a call's own confirmation) replaces the rule for that sync.

Issue 48: the bound counted one sync only, so deleting 60% of a watched folder in three waves 6 s apart removed 40%
without a word, and a folder of 10 or fewer documents could be emptied by an include that matched nothing. The
window is kept in the folder's record (ingest/folders.py: `removals`), read and written under the folder's sync lock,
so every process and replica counts the same removals.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Protocol

BOUND_SHARE, BOUND_COUNT = 0.25, 10
SMALL_SHARE = 0.5
WINDOW_S = 600.0


class Window(Protocol):
    """The removals of one folder over the last WINDOW_S: read before a prune, told of its removals after."""

    async def recent(self) -> int: ...
    async def add(self, count: int) -> None: ...


class NoWindow:
    """No record to keep removals in (ingestion-index on a vault): each sync counts alone."""

    async def recent(self) -> int:
        return 0

    async def add(self, count: int) -> None:
        return None


def within(removals: list[tuple[str, int]], now: datetime | None = None) -> list[tuple[str, int]]:
    """The (ISO time, count) entries of the last WINDOW_S."""
    since = (now or datetime.now(UTC)) - timedelta(seconds=WINDOW_S)
    return [(at, n) for at, n in removals if datetime.fromisoformat(at) >= since]


@dataclass(frozen=True)
class Verdict:
    held: bool
    why: str = ""  # what the bound counted, for the answer


def judge(count: int, base: int, recent: int, max_removals: int | None) -> Verdict:
    """Whether removing `count` more of a folder's documents (`base` now, `recent` removed in the window) is past
    the bound."""
    if count == 0:
        return Verdict(False)
    if max_removals is not None:
        return Verdict(count > max_removals, f"more than max_removals={max_removals} allows")
    total, before = count + recent, base + recent
    earlier = f", counting the {recent} removed in the last {WINDOW_S / 60:.0f} minutes" if recent else ""
    if total > BOUND_COUNT and total > BOUND_SHARE * before:
        share = f"{BOUND_SHARE:.0%}"
        return Verdict(True, f"over {share} and over {BOUND_COUNT} of the folder's {before} documents{earlier}")
    if total > SMALL_SHARE * before:
        return Verdict(True, f"more than half of the folder's {before} documents{earlier}")
    return Verdict(False)
