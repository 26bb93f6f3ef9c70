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

A trim can only give back what sits in malloc's heap, free: ``configure_allocators`` (called first thing by each
entry point) keeps the rest from landing where it cannot reach. Arrow (Milvus Lite's segments and files) would
allocate from its bundled mimalloc, which keeps its freed pages for itself; it is pointed at malloc. And glibc
gives each thread that allocates its own arena (up to 8 per core), each fragmented by what its thread keeps: two
arenas. With both, the embedded server after a 43-file ingest and 60 s of quiet holds 520 MB, 56 over a fresh
server on the same index (671 and 165 before); either alone only moved the memory to the other allocator.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import gc
import logging
import mmap
import os
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterator

log = logging.getLogger("servicekit.memory")
DEFAULT_QUIET_S = 2.0
PAGE = mmap.PAGESIZE
MALLOC_ARENAS = 2  # glibc's arenas for the whole process (its default: 8 per core); MALLOC_ARENA_MAX overrides
M_ARENA_MAX = -8  # glibc's malloc.h: mallopt's parameter for the arena limit


@functools.cache
def _libc_function(name: str) -> Callable[..., int] | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        function: Callable[..., int] = getattr(libc, name)
    except (OSError, AttributeError):
        return None
    return function


def _malloc_trim() -> Callable[[int], int] | None:
    return _libc_function("malloc_trim")


def configure_allocators(arenas: int = MALLOC_ARENAS) -> dict[str, object]:
    """Keep the process's native allocations where the idle trim can give them back; what was set, by name.

    Arrow's buffers go to malloc (its default pool is a bundled mimalloc that no trim reaches), unless
    ``ARROW_DEFAULT_MEMORY_POOL`` chose a pool; and glibc makes at most ``arenas`` arenas, unless
    ``MALLOC_ARENA_MAX`` set the limit (glibc read it at start). Call it before threads allocate: a thread keeps
    the arena it was given. Where the C library is not glibc the arena limit is left alone.
    """
    done: dict[str, object] = {}
    if "ARROW_DEFAULT_MEMORY_POOL" not in os.environ:
        pyarrow = sys.modules.get("pyarrow")
        if pyarrow is None:  # read once, when pyarrow is imported
            os.environ["ARROW_DEFAULT_MEMORY_POOL"] = "system"
        else:  # already imported: its buffers from now on
            pyarrow.set_memory_pool(pyarrow.system_memory_pool())
        done["arrow_pool"] = "system"
    mallopt = _libc_function("mallopt")
    if "MALLOC_ARENA_MAX" not in os.environ and mallopt is not None and arenas > 0:
        try:
            if mallopt(M_ARENA_MAX, arenas) == 1:  # mallopt: 1 on success
                done["malloc_arenas"] = arenas
        except OSError as exc:  # pragma: no cover - a C library that refuses: malloc's default stays
            log.debug("mallopt failed: %s", exc)
    return done


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
        self._freeze = False  # the next trim also freezes what is alive then (freeze_when_quiet)
        self._releases: list[weakref.WeakMethod[Callable[[], object]]] = []  # on_quiet

    def on_quiet(self, release: Callable[[], object]) -> None:
        """Call ``release`` (a bound method: held weakly, its object may go) at each trim, before it: a cache that
        can be made again, dropped once the process is quiet (lance/store.py: the versions an ingest left in Lance's
        caches). It runs in the trimmer's thread, never during work; an error is logged and the trim goes on."""
        with self._changed:
            self._releases.append(weakref.WeakMethod(release))

    def freeze_next(self) -> None:
        """Freeze what is alive at the next trim (gc.freeze, after its collection), as soon as it is quiet; at once
        where trimming is off."""
        if self.quiet_s <= 0:
            gc.collect()
            gc.freeze()
            return
        with self._changed:
            self._freeze = self._worked = True
            self._last_end = max(self._last_end, self._clock())  # quiet counts from now: not in the start's midst
            self._changed.notify()
        self._start()

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
        self._release()
        self._trim()
        self.trims += 1
        if self._freeze:
            self._freeze = False
            gc.freeze()
        log.debug("quiet for %.1f s after work: gave back %.0f MiB", self.quiet_s, before - _resident_mb())
        return True

    def _release(self) -> None:
        with self._changed:  # the live ones, held strongly for this round; the dead ones forgotten
            alive = [(ref, release) for ref in self._releases if (release := ref()) is not None]
            self._releases = [ref for ref, _ in alive]
        for _, release in alive:
            try:
                release()
            except Exception:  # a cache left as it was loses nothing: the trim goes on
                log.exception("releasing a cache when quiet failed")

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


def freeze_when_quiet() -> None:
    """Move the objects alive now (the model, the libraries: ~600,000) out of the collector's full passes, at the
    next quiet moment: each full collection walked them all (350-400 ms pauses at random requests, docs/console.md),
    and the collection before the freeze takes ~0.3 s itself, which at start-up held up the first requests. They
    live as long as the process anyway."""
    _PROCESS.freeze_next()


def configure_idle_trim(quiet_s: float) -> None:
    """Set the process's quiet time before a trim, from the entry point's settings; 0 turns trimming off."""
    _PROCESS.quiet_s = quiet_s
