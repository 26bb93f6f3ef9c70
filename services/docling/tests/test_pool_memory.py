"""What an idle or finished converter holds (issue 21, bounded memory): one worker at start, more only when
conversions run at once; idle workers exit; a worker that grew on a big document is replaced by a fresh one."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from docling_service.options import ConverterOptions
from docling_service.pool import PoolOptions, WorkerPool

from bench.pdf_scale_docs import report_pdf

pytestmark = pytest.mark.timeout(600)


def _pids(pool: WorkerPool) -> list[int | None]:
    return [worker.pid for worker in pool._idle]


async def _started(options: PoolOptions) -> WorkerPool:
    pool = WorkerPool(options, ConverterOptions())
    await anyio.to_thread.run_sync(pool.start)
    return pool


async def test_one_worker_at_start_and_a_second_only_for_a_second_conversion_at_once() -> None:
    pool = await _started(PoolOptions(workers=2))
    try:
        assert len(_pids(pool)) == 1
        pdf = report_pdf(4)[0]
        async with anyio.create_task_group() as group:
            for name in ("a.pdf", "b.pdf"):
                group.start_soon(pool.convert, pdf, name)
        assert len(set(_pids(pool))) == 2  # both stay for the next ones, up to DOCLING_WORKERS
        assert (await pool.convert(pdf, "c.pdf")).page_count == 4
    finally:
        await anyio.to_thread.run_sync(pool.close)


async def test_a_cold_pool_checks_its_converter_then_holds_no_worker_until_a_conversion() -> None:
    pool = await _started(PoolOptions(workers=1, warm=False))
    try:
        assert pool.ready and pool.info is not None and _pids(pool) == []
        assert (await pool.convert(report_pdf(3)[0], "first.pdf")).page_count == 3
        assert len(_pids(pool)) == 1
    finally:
        await anyio.to_thread.run_sync(pool.close)


async def test_an_idle_worker_exits_and_the_next_conversion_starts_one() -> None:
    pool = await _started(PoolOptions(workers=1, idle_s=1.0))
    try:
        (pid,) = _pids(pool)
        with anyio.fail_after(30):
            while _pids(pool) or Path(f"/proc/{pid}").exists():
                await anyio.sleep(0.2)
        converted = await pool.convert(report_pdf(3)[0], "after-idle.pdf")
        assert converted.page_count == 3 and _pids(pool) and _pids(pool) != [pid]
    finally:
        await anyio.to_thread.run_sync(pool.close)


@pytest.mark.parametrize(("recycle_mb", "replaced"), [(1, True), (0, False)])
async def test_a_worker_grown_past_the_recycle_size_is_replaced(recycle_mb: int, replaced: bool) -> None:
    pool = await _started(PoolOptions(workers=1, recycle_mb=recycle_mb))
    try:
        (before,) = _pids(pool)
        assert (await pool.convert(report_pdf(60)[0], "grows.pdf")).page_count == 60
        (after,) = _pids(pool)
        assert (after != before) is replaced
        if replaced:
            assert not Path(f"/proc/{before}").exists()
    finally:
        await anyio.to_thread.run_sync(pool.close)


async def test_a_fork_server_that_refuses_the_first_worker_is_started_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """CI once saw the embedded server die at start: the fork server, just launched, was gone when the first worker
    was asked of it (ConnectionRefusedError). That moment cannot be made for real; the refusal is injected once."""
    import docling_service.pool as pool_module

    real = pool_module.Worker
    refusals = [ConnectionRefusedError(111, "Connection refused")]

    def worker(*args: object) -> pool_module.Worker:
        if refusals:
            raise refusals.pop()
        return real(*args)  # type: ignore[arg-type]  # the pool's own arguments, passed on

    monkeypatch.setattr(pool_module, "Worker", worker)
    pool = await _started(PoolOptions(workers=1))
    try:
        assert pool.ready and not refusals and len(_pids(pool)) == 1
        assert (await pool.convert(report_pdf(2)[0], "after.pdf")).page_count == 2
    finally:
        await anyio.to_thread.run_sync(pool.close)


def _fork_servers() -> list[int]:
    """This process's docling fork servers (the ones multiprocessing started for the pools)."""
    import psutil

    found = []
    for child in psutil.Process().children():
        try:
            if child.status() != psutil.STATUS_ZOMBIE and "forkserver" in " ".join(child.cmdline()):
                found.append(child.pid)
        except psutil.Error:  # gone meanwhile
            continue
    return found


async def test_a_lazy_pool_starts_with_its_first_conversion_and_leaves_nothing_behind_when_idle() -> None:
    """The embedded server's converter (issue 49): nothing at start, the fork server and a worker with the first
    conversion, and both gone again once the worker has idled out, so an idle server holds no docling at all;
    the next conversion starts them again. Fork servers other tests' pools left in this process are not its own."""
    others = set(_fork_servers())
    pool = await _started(PoolOptions(workers=1, idle_s=1.0, lazy=True))
    try:
        assert pool.ready is False and pool.info is None and _pids(pool) == []
        assert (await pool.convert(report_pdf(2)[0], "first.pdf")).page_count == 2
        assert pool.info is not None and len(_pids(pool)) == 1 and _fork_servers()
        (worker,) = _pids(pool)  # no layout models: the native pipeline, and no torch loaded (~200 MB; torch_free.py)
        assert "libtorch" not in Path(f"/proc/{worker}/maps").read_text()
        with anyio.fail_after(30):
            while _pids(pool) or set(_fork_servers()) - others:
                await anyio.sleep(0.2)
        assert (await pool.convert(report_pdf(2)[0], "again.pdf")).page_count == 2
    finally:
        await anyio.to_thread.run_sync(pool.close)
