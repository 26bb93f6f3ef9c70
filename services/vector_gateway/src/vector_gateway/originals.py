"""The originals of located documents (PDFs, images), kept so that a page can be shown with a passage marked.

One file per (collection, content hash): ``<root>/<collection's Milvus name>/<sha256>``. A document names its
original by the content hash its registry row holds, so the live version's page images come from the bytes that
version was converted from, and two documents of one collection with the same bytes share the file. Reading one
goes through the document (collection + doc_id), so whoever may read the document may see its pages, no one else
(the MCP server checks the collection right first). The folder is bounded (``max_bytes``: a write that would pass it
is refused and the ingest goes on without page images, saying so); a file goes when no document of its collection
names its hash any more (a delete, a replace: ``release``), with its collection (``drop_collection``), or at start
when nothing names it (``sweep``: what a write that died between keeping the bytes and committing left).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from servicekit import ServiceError, Unprocessable

from . import names

log = logging.getLogger("vector_gateway.originals")
_HASH = re.compile(r"^[0-9a-f]{64}$")


class OriginalsFull(ServiceError):
    status_code = 507


class Originals:
    """A bounded folder of originals; thread-safe within one process."""

    def __init__(self, root: Path | None, max_bytes: int) -> None:
        self.root = root
        self.max_bytes = max_bytes if root is not None else 0
        self._lock = threading.Lock()
        self._used: int | None = None

    @property
    def enabled(self) -> bool:
        return self.max_bytes > 0

    def _folder(self, collection: str) -> Path:
        assert self.root is not None
        return self.root / names.collection(collection)

    def _file(self, collection: str, content_hash: str) -> Path:
        if not _HASH.fullmatch(content_hash):
            raise Unprocessable(
                f"{content_hash[:80]!r} is not a content hash.",
                code="INVALID_REQUEST",
                suggestion="Give the document's sha256 as 64 lower-case hex digits.",
            )
        return self._folder(collection) / content_hash

    def used(self) -> int:
        """Bytes the folder holds (counted once, then kept up to date by this process)."""
        with self._lock:
            if self._used is None:
                self._used = sum(p.stat().st_size for p in self.root.rglob("*") if p.is_file()) if self.root else 0
            return self._used

    def _grow(self, delta: int) -> None:
        with self._lock:
            if self._used is not None:
                self._used = max(self._used + delta, 0)

    def put(self, collection: str, content_hash: str, data: bytes) -> bool:
        """Keep ``data`` as the original of ``content_hash``; False when it was kept already."""
        target = self._file(collection, content_hash)
        if not self.enabled:
            raise OriginalsFull(
                "This gateway keeps no originals (VECTOR_GATEWAY_ORIGINALS_MAX_MB=0): page images are off.",
                code="ORIGINALS_OFF",
                suggestion="Set VECTOR_GATEWAY_ORIGINALS_MAX_MB above 0 to show pages.",
            )
        if hashlib.sha256(data).hexdigest() != content_hash:
            raise Unprocessable(
                "The bytes sent do not have the content hash named in the path.",
                code="INVALID_REQUEST",
                suggestion="Send the document's exact bytes under their sha256.",
            )
        if target.exists():
            os.utime(target)  # fresh again for the sweep's grace period
            return False
        if self.used() + len(data) > self.max_bytes:
            raise OriginalsFull(
                f"The originals folder holds {self.used() / 2**20:.0f} MiB of at most {self.max_bytes / 2**20:.0f} "
                f"MiB; this {len(data) / 2**20:.1f} MiB document is not kept, so its pages cannot be shown.",
                code="ORIGINALS_FULL",
                suggestion="Delete documents no one needs, or raise VECTOR_GATEWAY_ORIGINALS_MAX_MB; then ingest it "
                "again with force to show its pages.",
            )
        target.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=".incoming-")
        try:
            with os.fdopen(handle, "wb") as stream:
                stream.write(data)
            os.replace(temporary, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
        self._grow(len(data))
        return True

    def path(self, collection: str, content_hash: str) -> Path | None:
        if self.root is None:
            return None
        target = self._file(collection, content_hash)
        return target if target.is_file() else None

    def release(self, collection: str, content_hash: str, still_named: Callable[[], bool]) -> None:
        """Delete the original of ``content_hash`` unless a document of the collection still names it."""
        target = self.path(collection, content_hash) if _HASH.fullmatch(content_hash or "") else None
        if target is None or still_named():
            return
        self._remove(target)

    def _remove(self, target: Path) -> bool:
        """Delete ``target``; False when it was gone already (another sweep or replica got there first)."""
        try:
            size = target.stat().st_size
            target.unlink()
        except FileNotFoundError:
            return False
        self._grow(-size)
        return True

    def drop_collection(self, collection: str) -> None:
        if self.root is None:
            return
        folder = self._folder(collection)
        if folder.is_dir():
            size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
            shutil.rmtree(folder, ignore_errors=True)
            self._grow(-size)

    def sweep(self, named: Callable[[str], set[str]], grace_s: float) -> int:
        """Delete originals no document names (``named(milvus_name)``: the hashes a collection's registry rows
        hold), older than ``grace_s`` (a write keeps its bytes before it commits). Returns how many went."""
        if self.root is None or not self.root.is_dir():
            return 0
        removed = 0
        now = time.time()
        # Another sweep may run at once (the start-up one in the background, a replica on a shared folder) or a
        # collection be dropped meanwhile: a file or folder gone under this one is skipped, not an error.
        for folder in self.root.iterdir():
            if not folder.is_dir():
                continue
            hashes = named(folder.name)
            with contextlib.suppress(FileNotFoundError):
                for file in list(folder.iterdir()):
                    try:
                        old = now - file.stat().st_mtime > grace_s
                    except FileNotFoundError:
                        continue
                    if file.name not in hashes and old and self._remove(file):
                        removed += 1
        return removed
