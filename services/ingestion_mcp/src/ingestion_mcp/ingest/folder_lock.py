"""One sync of a folder into a collection at a time, across every process on the data folder.

Two syncs of the same folder side by side both see the same new files and both ingest them: twice the work,
and each call's counts depend on which one finished first. It happens where no one process knows of the other's
job: two MCP servers on one data folder with no broker (the call's sync runs in one, the watch's catch-up in the
other), a CLI `ingestion-index update` beside a server, two agents syncing the same folder at once. The second
sync now waits for the first, then finds the files already in step.

The lock is an exclusive flock on <data_dir>/locks/sync-<digest>.lock (like the watch lead, watch.py): released
by the kernel when its holder dies, so a killed process never leaves a folder locked. The wait polls, so a
cancelled job stops waiting at once. The lock file stays (removing it would race a waiter that has it open).
A data folder that cannot hold the lock (read-only) costs the exclusion, not the sync: logged, and it runs.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import anyio

log = logging.getLogger("ingestion_mcp.sync")
POLL_S = 0.1


def lock_path(data_dir: Path, collection: str, prefix: str) -> Path:
    """The lock file of (collection, folder): a digest, so no name or path reaches the file system."""
    digest = hashlib.sha256(f"{collection}\0{prefix}".encode()).hexdigest()[:32]
    return data_dir.expanduser().resolve() / "locks" / f"sync-{digest}.lock"


@contextlib.asynccontextmanager
async def folder_sync_lock(path: Path) -> AsyncIterator[None]:
    """Held for the body; waits (cancellable) while another sync of the same folder holds it."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(path, "a")  # noqa: SIM115 - one open file each: flock excludes in-process holders too
    except OSError as exc:
        log.warning("folder syncs are not serialised: the data folder cannot hold their lock (%s)", exc.strerror)
        handle = None
    if handle is None:
        yield
        return
    with handle:
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                await anyio.sleep(POLL_S)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
