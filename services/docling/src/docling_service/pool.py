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
import threading
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

import anyio
from ingestion_contracts.docling import ConvertResponse
from servicekit import ServiceError

from .converter import ConverterOptions
from .worker import WorkerInfo, worker_main

log = logging.getLogger("docling_service.pool")


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


class Worker:
    """One worker process and the pipe to it; used by one conversion at a time."""

    def __init__(self, context: Any, converter: ConverterOptions, memory_mb: int) -> None:
        self.tasks = 0
        self.info: WorkerInfo | None = None
        self._conn, child = context.Pipe()
        self._process = context.Process(
            target=worker_main, args=(child, converter, memory_mb), name="docling-worker", daemon=True
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
        return self.info

    def call(self, data: bytes, file_name: str, timeout_s: float) -> ConvertResponse:
        self.tasks += 1
        try:
            self._conn.send((data, file_name))
        except OSError as exc:  # the worker died while idle (killed from outside, out of memory)
            self.kill()
            raise _crashed() from exc
        if not self._conn.poll(timeout_s):
            self.kill()
            raise ConversionTimeout(
                f"Converting {file_name!r} took longer than {timeout_s:g} s; the conversion was stopped.",
                suggestion="Split the document into smaller parts, or ask the operator to raise "
                "DOCLING_CONVERT_TIMEOUT_S.",
            )
        return _receive(self._conn)

    def kill(self) -> None:
        if self._process.is_alive():
            self._process.kill()
        self._process.join(5)
        self._conn.close()


def _crashed() -> WorkerCrashed:
    return WorkerCrashed(
        "The conversion stopped: its worker process ended (out of memory, or a crash in the parser).",
        suggestion="Send a smaller or simpler document, or ask the operator to raise DOCLING_WORKER_MEMORY_MB.",
    )


def _receive(conn: Connection) -> Any:
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
        # The fork server imports docling once; every worker forks from it in milliseconds.
        self._context.set_forkserver_preload(["docling_service.worker"])
        self._idle: collections.deque[Worker] = collections.deque()
        self._lock = threading.Lock()
        self._limiter = anyio.CapacityLimiter(options.workers)

    @property
    def ready(self) -> bool:
        return self.info is not None

    def _spawn(self) -> Worker:
        return Worker(self._context, self.converter, self.options.memory_mb)

    def start(self) -> WorkerInfo:
        """Start every worker and wait until the first one has loaded its pipelines (blocking)."""
        workers = [self._spawn() for _ in range(self.options.workers)]
        self._idle.extend(workers)
        self.info = workers[0].wait_ready(self.options.start_timeout_s)
        return self.info

    def close(self) -> None:
        with self._lock:
            while self._idle:
                self._idle.popleft().kill()

    def _run(self, worker: Worker, data: bytes, file_name: str) -> ConvertResponse:
        worker.wait_ready(self.options.start_timeout_s)
        return worker.call(data, file_name, self.options.timeout_s)

    def _release(self, worker: Worker) -> None:
        if not worker.alive or worker.tasks >= self.options.max_tasks:
            log.info("replacing a docling worker after %d conversion(s)", worker.tasks)
            worker.kill()
            worker = self._spawn()
        with self._lock:
            self._idle.append(worker)

    async def convert(self, data: bytes, file_name: str) -> ConvertResponse:
        async with self._limiter:
            with self._lock:
                worker = self._idle.popleft()
            if not worker.alive:  # died while idle (killed from outside): this request gets a fresh one
                log.warning("a docling worker had ended while idle; starting another")
                worker.kill()
                worker = self._spawn()
            try:
                return await anyio.to_thread.run_sync(self._run, worker, data, file_name, abandon_on_cancel=False)
            finally:
                await anyio.to_thread.run_sync(self._release, worker)
