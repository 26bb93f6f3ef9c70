"""Per-key asyncio locks: writes to one document are serialized inside the process.

Only an economy (a replica does not race itself); safety across replicas comes from write leases
(versions.py, docs/consistency.md).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterable


class KeyedLocks:
    def __init__(self) -> None:
        self._locks: dict[str, asyncio.Lock] = {}
        self._users: dict[str, int] = {}

    @contextlib.asynccontextmanager
    async def hold(self, keys: Iterable[str]) -> AsyncIterator[None]:
        # Sorted, so two batches that share documents never wait on each other in a cycle.
        ordered = sorted(set(keys))
        for key in ordered:
            self._users[key] = self._users.get(key, 0) + 1
            self._locks.setdefault(key, asyncio.Lock())
        acquired: list[str] = []
        try:
            for key in ordered:
                await self._locks[key].acquire()
                acquired.append(key)
            yield
        finally:
            for key in acquired:
                self._locks[key].release()
            for key in ordered:
                self._users[key] -= 1
                if not self._users[key]:  # nobody holds or waits: forget the lock
                    del self._users[key], self._locks[key]

    def __len__(self) -> int:
        return len(self._locks)
