"""Give the C heap's free memory back to the system once the process goes quiet after work.

CPython frees a large buffer (a 95 MB upload, its base64 and decoded copies, a search's candidate lists) to
glibc's malloc, which keeps freed heap memory for reuse. glibc's ``malloc_trim(0)`` returns the free pages; it
costs milliseconds. Measured with ``bench.pdf_scale --heavy 95``: the tree after a 94 MB PDF went from 1,535 to
1,491 MB RSS with a trim at the job's end (most of what the server kept was ONNX Runtime's arena, given back in
vector_gateway/onnx_runtime.py). Where the C library is not glibc (musl, macOS) this does nothing.

``IdleTrimmer`` decides when: work (a service request, a job) is marked with ``busy()``, and once no work has
run for ``quiet_s`` after some did, one background thread collects Python's cycles and trims, once. Never
during work (the trim walks malloc's arenas under their locks: a request allocating meanwhile would wait), and
not after every search of a burst: after the burst. docs/memory.md has the figures.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import gc
import logging
import mmap
import threading
import time
from collections.abc import Callable, Iterator

log = logging.getLogger("servicekit.memory")
DEFAULT_QUIET_S = 2.0
PAGE = mmap.PAGESIZE


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim: Callable[[int], int] = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    return trim


def give_back_free_memory() -> bool:
    """Return free heap pages to the system; True when the C library could (glibc's malloc_trim)."""
    trim = _malloc_trim()
    if trim is None:
        return False
    try:
        trim(0)
    except OSError as exc:  # pragma: no cover - a C library that refuses: nothing is lost
        log.debug("malloc_trim failed: %s", exc)
        return False
    return True


def collect_and_trim() -> bool:
    """Free Python's unreachable cycles (their memory goes back to malloc first), then trim the heap."""
    gc.collect()
    return give_back_free_memory()


def _resident_mb() -> float:
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * PAGE / 2**20
    except OSError:  # not Linux: nothing to report
        return 0.0


class IdleTrimmer:
    """Trims the heap once the process has been quiet for ``quiet_s`` after work; ``quiet_s`` 0: never."""

    def __init__(
        self,
        quiet_s: float = DEFAULT_QUIET_S,
        *,
        trim: Callable[[], bool] = collect_and_trim,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.quiet_s = quiet_s
        self.trims = 0
        self._trim = trim
        self._clock = clock
        self._busy = 0
        self._worked = False  # work ended since the last trim
        self._last_end = clock()
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None

    @contextlib.contextmanager
    def busy(self) -> Iterator[None]:
        """Mark a piece of work (sync or async code: it only counts); the trim waits for it and follows it."""
        with self._changed:
            self._busy += 1
        try:
            yield
        finally:
            with self._changed:
                self._busy -= 1
                self._last_end = self._clock()
                self._worked = self.quiet_s > 0
                self._changed.notify()
            if self._worked and self._thread is None:
                self._start()

    @property
    def working(self) -> int:
        """Pieces of work running now."""
        return self._busy

    def wait_left(self) -> float | None:
        """Seconds until a trim is due; 0: due now; None: nothing to give back (no work since the last trim)."""
        with self._changed:
            if not self._worked or self.quiet_s <= 0:
                return None
            if self._busy:
                return self.quiet_s
            return max(self._last_end + self.quiet_s - self._clock(), 0.0)

    def poll(self) -> bool:
        """Trim if it is due now; True when it trimmed."""
        with self._changed:
            if self.wait_left() != 0:
                return False
            self._worked = False
        before = _resident_mb()
        self._trim()
        self.trims += 1
        log.debug("quiet for %.1f s after work: gave back %.0f MiB", self.quiet_s, before - _resident_mb())
        return True

    def _start(self) -> None:
        with self._changed:
            if self._thread is not None:
                return
            self._thread = threading.Thread(target=self._run, name="idle-trimmer", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            with self._changed:
                self._changed.wait_for(lambda: self.wait_left() is not None)
                left = self.wait_left() or 0.0
                if left > 0:
                    self._changed.wait(left)  # work starting or ending meanwhile wakes it to look again
                    continue
            try:
                self.poll()
            except Exception:  # a failed trim loses nothing; the thread must go on
                log.exception("giving memory back failed")


_PROCESS = IdleTrimmer()


def idle_trimmer() -> IdleTrimmer:
    """This process's trimmer (malloc's heap is the process's: one trimmer for every app in it)."""
    return _PROCESS


def configure_idle_trim(quiet_s: float) -> None:
    """Set the process's quiet time before a trim, from the entry point's settings; 0 turns trimming off."""
    _PROCESS.quiet_s = quiet_s
