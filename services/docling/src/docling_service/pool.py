"""Conversions in worker processes: one past its deadline is killed, the others go on meanwhile.

A thread can not be stopped, so a document that makes docling spin (60,000 nested <div>s) would hold a
core and the memory it took until it finished. Here each conversion runs in a worker process of a
small supervised pool: at the deadline the worker is killed (SIGKILL) and replaced, its memory is
capped (RLIMIT_AS), and it is replaced after a number of conversions, whatever it leaked.
"""

from __future__ import annotations

import collections
import logging
import multiprocessing
import os
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

import anyio
from ingestion_contracts.docling import ConvertResponse
from servicekit import ServiceError

from .options import ConverterOptions, WorkerInfo

log = logging.getLogger("docling_service.pool")
# (pages done, pages in all) of the conversion in progress.
PoolProgress = Callable[[int, int], Awaitable[None]]


class ConversionTimeout(ServiceError):
    status_code = 504
    code = "CONVERSION_TIMEOUT"


class WorkerCrashed(ServiceError):
    status_code = 422
    code = "CONVERSION_FAILED"


@dataclass(frozen=True)
class PoolOptions:
    workers: int = 2
    timeout_s: float = 300.0
    max_tasks: int = 100  # conversions before a worker is replaced
    memory_mb: int = 0  # address-space cap per worker; 0: none
    start_timeout_s: float = 180.0
    idle_s: float = 0.0  # a worker idle this long exits (the next conversion starts one); 0: kept
    recycle_mb: int = 0  # a worker grown this much past its ready size is replaced after its conversion; 0: never
    warm: bool = True  # the worker that checked the converter at start stays loaded; False: it exits at once
    # Nothing at start: the fork server and a worker start with the first conversion, and the fork server stops
    # again once the last worker has retired (idle_s): an idle laptop server holds no docling at all.
    lazy: bool = False


class Worker:
    """One worker process and the pipe to it; used by one conversion at a time."""

    def __init__(self, context: Any, converter: ConverterOptions, memory_mb: int) -> None:
        self.tasks = 0
        self.stopped = False
        self.busy = False  # a document sent, its answer not read yet
        self.info: WorkerInfo | None = None
        self.ready_mb: float | None = None  # resident size once its pipelines were loaded
        self.idle_since = time.monotonic()
        self._conn, child = context.Pipe()
        self._process = context.Process(
            target=run_worker, args=(child, converter, memory_mb), name="docling-worker", daemon=True
        )
        self._process.start()
        child.close()

    @property
    def alive(self) -> bool:
        return self._process.is_alive()

    def wait_ready(self, timeout_s: float) -> WorkerInfo:
        if self.info is None:
            if not self._conn.poll(timeout_s):
                self.kill()
                raise RuntimeError(f"a docling worker did not start within {timeout_s:g} s")
            self.info = _receive(self._conn)
            self.ready_mb = self.resident_mb()
        return self.info

    def resident_mb(self) -> float | None:
        """Resident memory in MiB, read from /proc (None where there is none: recycling by size is off)."""
        try:
            with open(f"/proc/{self._process.pid}/statm") as statm:
                return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / (1024 * 1024)
        except (OSError, ValueError, IndexError):
            return None

    def grown_mb(self) -> float:
        now = self.resident_mb()
        return 0.0 if now is None or self.ready_mb is None else now - self.ready_mb

    @property
    def pid(self) -> int | None:
        return self._process.pid

    @property
    def connection(self) -> Connection:
        return self._conn

    def send(self, data: bytes, file_name: str) -> None:
        """Hand the worker a document (blocking: the pipe takes the bytes as the worker reads them)."""
        self.tasks += 1
        self.busy = True  # until its answer is read
        try:
            self._conn.send((data, file_name))
        except OSError as exc:  # the worker died while idle (killed from outside, out of memory)
            self.stop()
            raise _crashed() from exc

    def receive(self) -> tuple[str, Any]:
        """The worker's next message: ("progress", (done, total)), ("ok", result) or ("error", fields)."""
        try:
            return self._conn.recv()
        except (EOFError, OSError) as exc:
            raise _crashed() from exc

    def stop(self) -> None:
        """SIGKILL now, without waiting (safe from the event loop); ``kill`` reaps the process later."""
        self.stopped = True  # is_alive() may say True for a moment yet: the process is not reaped
        if self._process.is_alive():
            self._process.kill()

    def kill(self) -> None:
        self.stop()
        self._process.join(5)
        self._conn.close()


def _crashed() -> WorkerCrashed:
    return WorkerCrashed(
        "The conversion stopped: its worker process ended (out of memory, or a crash in the parser).",
        suggestion="Send a smaller or simpler document, or ask the operator to raise DOCLING_WORKER_MEMORY_MB.",
    )


def run_worker(conn: Connection, options: ConverterOptions, memory_mb: int) -> None:
    """A worker's entry point. The import happens in the worker (the fork server has it loaded already), so
    the API process, which only names this function, never imports docling."""
    from .worker import worker_main

    worker_main(conn, options, memory_mb)


def _receive(conn: Connection) -> Any:
    """The payload of a start-up message (the worker's info), or its error raised."""
    try:
        kind, payload = conn.recv()
    except (EOFError, OSError) as exc:
        raise _crashed() from exc
    if kind == "error":
        raise ServiceError(**payload)
    return payload


class WorkerPool:
    def __init__(self, options: PoolOptions, converter: ConverterOptions) -> None:
        self.options = options
        self.converter = converter
        self.info: WorkerInfo | None = None
        self._context = multiprocessing.get_context("forkserver")
        # The fork server imports docling once; every worker forks from it in milliseconds. Without layout models
        # (the native pipeline) it imports no torch first (torch_free.py: ~200 MB less in it and in each worker).
        torch_free = [] if converter.artifacts_path else ["docling_service.torch_free"]
        self._context.set_forkserver_preload([*torch_free, "docling_service.worker"])
        self._idle: collections.deque[Worker] = collections.deque()
        self._lock = threading.Lock()
        self._limiter = anyio.CapacityLimiter(options.workers)
        self._closed = threading.Event()
        self._busy = 0  # workers taken and not yet released (under _lock)

    @property
    def ready(self) -> bool:
        return self.info is not None

    def _spawn(self) -> Worker:
        try:
            return Worker(self._context, self.converter, self.options.memory_mb)
        except OSError as exc:  # the fork server is gone (killed, or it died starting): the next try starts one
            log.warning("the docling fork server did not answer (%s); starting it again", exc)
            return Worker(self._context, self.converter, self.options.memory_mb)

    def start(self) -> WorkerInfo | None:
        """Start one worker and wait until it has loaded its pipelines (blocking), so a broken converter fails
        the start; the others start when two conversions run at once: an idle service holds one worker's memory,
        not ``workers``'. Not ``warm``: that first worker exits once it answered, and the first conversion starts
        one (about a second), so an idle service holds no worker at all. ``lazy``: nothing starts (None)."""
        if self.options.idle_s > 0:
            threading.Thread(target=self._retire_idle, name="docling-pool-idle", daemon=True).start()
        if self.options.lazy:
            return None
        first = self._spawn()
        self._idle.append(first)
        self.info = first.wait_ready(self.options.start_timeout_s)
        if not self.options.warm:
            with self._lock:
                self._idle.remove(first)
            first.kill()
        return self.info

    def ensure_info(self) -> WorkerInfo:
        """What the converter offers (its formats, PDF pipeline, OCR); a lazy pool that has not converted yet
        starts a worker for it (blocking), kept idle for the conversion that usually follows."""
        if self.info is None:
            worker = self._take()
            try:
                self.info = worker.wait_ready(self.options.start_timeout_s)
            finally:
                self._release(worker)
        return self.info

    def close(self) -> None:
        self._closed.set()
        with self._lock:
            while self._idle:
                self._idle.popleft().kill()

    def _retire_idle(self) -> None:
        """Workers idle for ``idle_s`` exit: their memory goes back to the machine until the next conversion."""
        while not self._closed.wait(min(10.0, self.options.idle_s / 4)):
            now = time.monotonic()
            with self._lock:
                retired = [w for w in self._idle if now - w.idle_since >= self.options.idle_s]
                for worker in retired:
                    self._idle.remove(worker)
            for worker in retired:
                log.info("stopping a docling worker idle for %.0f s (pid %s)", now - worker.idle_since, worker.pid)
                worker.kill()
            if self.options.lazy and retired:
                with self._lock:  # a conversion taking a worker meanwhile waits: it then starts a fork server
                    if not self._idle and not self._busy:
                        stop_fork_server()

    def _take(self) -> Worker:
        with self._lock:
            self._busy += 1
            worker = self._idle.popleft() if self._idle else None
        try:
            if worker is None:  # every started worker is busy, or idle ones were retired: start one
                return self._spawn()
            if not worker.alive:  # died while idle (killed from outside): this request gets a fresh one
                log.warning("a docling worker had ended while idle; starting another")
                worker.kill()
                worker = self._spawn()
        except BaseException:
            with self._lock:
                self._busy -= 1
            raise
        return worker

    def _release(self, worker: Worker) -> None:
        try:
            self._put_back(worker)
        finally:
            with self._lock:
                self._busy -= 1

    def _put_back(self, worker: Worker) -> None:
        grown = worker.grown_mb() if self.options.recycle_mb and worker.alive else 0.0
        # Grown: the parser kept memory it no longer uses (docling and pdfium do); a fresh worker gives it back.
        spent = worker.stopped or not worker.alive or worker.tasks >= self.options.max_tasks
        if spent or grown > self.options.recycle_mb > 0:
            log.info("replacing a docling worker (pid %s) after %d conversion(s), grown by %.0f MiB",
                     worker.pid, worker.tasks, grown)  # fmt: skip
            worker.kill()
            worker = self._spawn()
        worker.idle_since = time.monotonic()
        with self._lock:
            self._idle.append(worker)

    async def convert(self, data: bytes, file_name: str, progress: PoolProgress | None = None) -> ConvertResponse:
        """Convert in a worker; ``progress(done, total)`` hears its pages. Left early: the worker is killed at once."""
        async with self._limiter:
            worker = await anyio.to_thread.run_sync(self._take)
            try:
                return await self._call(worker, data, file_name, progress)
            finally:
                if worker.busy:
                    # Left mid-conversion (the caller cancelled or went away, a progress reader failed, the
                    # deadline): the work is wasted, so the worker and the memory it holds go now, and it
                    # must never serve another document with this one's answer still coming; _release
                    # starts another.
                    log.info("conversion of %s abandoned; stopping its worker (pid %s)", file_name, worker.pid)
                    worker.stop()
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(self._release, worker)

    async def _call(
        self, worker: Worker, data: bytes, file_name: str, progress: PoolProgress | None
    ) -> ConvertResponse:
        # Waits on the pipe are awaits (not a blocking thread), so a cancel takes effect at once.
        if worker.info is None:
            with anyio.move_on_after(self.options.start_timeout_s) as starting:
                await anyio.wait_readable(worker.connection)
            if starting.cancelled_caught:
                worker.stop()
                raise RuntimeError(f"a docling worker did not start within {self.options.start_timeout_s:g} s")
            await anyio.to_thread.run_sync(worker.wait_ready, 0)
            self.info = self.info or worker.info  # a lazy pool learns what the converter offers here
        await anyio.to_thread.run_sync(worker.send, data, file_name)
        with anyio.move_on_after(self.options.timeout_s):
            while True:
                await anyio.wait_readable(worker.connection)
                kind, payload = await anyio.to_thread.run_sync(worker.receive)
                if kind == "progress":
                    if progress is not None:
                        await progress(*payload)
                    continue
                worker.busy = False
                if kind == "error":
                    raise ServiceError(**payload)
                return payload
        worker.stop()
        raise ConversionTimeout(
            f"Converting {file_name!r} took longer than {self.options.timeout_s:g} s; the conversion was stopped.",
            suggestion="Split the document into smaller parts, or ask the operator to raise DOCLING_CONVERT_TIMEOUT_S.",
        )


def stop_fork_server() -> None:
    """Stop this process's fork server (multiprocessing keeps one per process; the next worker starts it again,
    which imports docling anew) when it has no child left. Through its private handle: the standard library has
    no public stop. Where its children cannot be read (no /proc), it stays."""
    from multiprocessing import forkserver

    server = forkserver._forkserver
    pid = getattr(server, "_forkserver_pid", None)
    stop = getattr(server, "_stop", None)
    if pid is None or stop is None:
        return
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as listing:
            children = listing.read().split()
    except OSError:
        return
    if not children:
        log.info("stopping the docling fork server (pid %s): no worker left", pid)
        stop()
