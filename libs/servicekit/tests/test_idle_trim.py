"""The idle trimmer gives memory back once the process is quiet after work: never during it, once per quiet spell."""

from __future__ import annotations

import threading

import pytest
from fastapi.testclient import TestClient
from servicekit import IdleTrimmer, create_service_app, idle_trimmer
from servicekit import memory as memory_module


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def trimmer(quiet_s: float = 2.0) -> tuple[IdleTrimmer, Clock, list[int]]:
    clock, calls = Clock(), []

    def trim() -> bool:
        calls.append(1)
        return True

    made = IdleTrimmer(quiet_s, trim=trim, clock=clock)
    made._start = lambda: None  # type: ignore[method-assign]  # these tests drive poll() themselves
    return made, clock, calls


def test_nothing_is_trimmed_before_any_work() -> None:
    made, clock, calls = trimmer()
    clock.now += 60
    assert made.wait_left() is None
    assert made.poll() is False and calls == []


def test_trims_once_after_quiet_not_during_work() -> None:
    made, clock, calls = trimmer(quiet_s=2.0)
    with made.busy():
        clock.now += 30  # long work: the quiet time counts from its end, not its start
        assert made.poll() is False
    clock.now += 1.9
    assert made.poll() is False
    clock.now += 0.1
    assert made.poll() is True and calls == [1]
    clock.now += 60
    assert made.poll() is False and calls == [1]  # nothing new since: no second trim


def test_a_burst_trims_once_after_its_last_request() -> None:
    made, clock, calls = trimmer(quiet_s=2.0)
    for _ in range(500):
        with made.busy():
            clock.now += 0.01
        clock.now += 0.05
        assert made.poll() is False
    clock.now += 2.0
    assert made.poll() is True and calls == [1]


def test_work_still_running_holds_the_trim_back() -> None:
    made, clock, calls = trimmer(quiet_s=2.0)
    with made.busy():
        with made.busy():
            pass
        clock.now += 10  # one piece ended long ago, the other still runs
        assert made.wait_left() == 2.0 and made.poll() is False
    clock.now += 2.0
    assert made.poll() is True and calls == [1]


def test_off_never_trims_and_starts_no_thread() -> None:
    made = IdleTrimmer(0, trim=lambda: pytest.fail("trimmed while off"))
    with made.busy():
        pass
    assert made.wait_left() is None and made.poll() is False
    assert made._thread is None


def test_the_background_thread_trims_after_work_once_quiet() -> None:
    trimmed = threading.Event()

    def trim() -> bool:
        trimmed.set()
        return True

    made = IdleTrimmer(0.05, trim=trim)
    with made.busy():
        assert not trimmed.wait(0.3)  # work running: no trim however long it takes
    assert trimmed.wait(30)  # started by the first work's end, the thread trims once quiet
    assert made.trims == 1


def test_without_glibc_giving_back_is_a_no_op(monkeypatch: pytest.MonkeyPatch) -> None:
    class NoTrim:
        def __init__(self, name: str) -> None:
            pass  # a C library without malloc_trim (musl, macOS): the attribute is missing

    memory_module._libc_function.cache_clear()
    monkeypatch.setattr(memory_module.ctypes, "CDLL", NoTrim)
    try:
        assert memory_module.give_back_free_memory() is False
        assert memory_module.collect_and_trim() is False
    finally:
        monkeypatch.undo()
        memory_module._libc_function.cache_clear()


def test_a_service_request_counts_as_work_and_a_probe_does_not() -> None:
    app = create_service_app(name="t", version="0", description="", auth_token=None)

    @app.get("/work")
    async def work() -> dict[str, int]:
        assert idle_trimmer().working == 1  # busy while it runs
        return {"ok": 1}

    process = idle_trimmer()
    saved = process.quiet_s
    process.quiet_s = 3600  # the process's trimmer: no trim during the test
    try:
        process.poll()
        process._worked = False
        with TestClient(app) as client:
            assert client.get("/healthz").status_code == 200
            assert process.wait_left() is None  # a probe every few seconds must not keep the trimmer busy
            assert client.get("/work").status_code == 200
            assert process.wait_left() is not None
    finally:
        process.quiet_s = saved


def test_a_freeze_asked_for_waits_for_the_quiet_and_comes_with_the_trim() -> None:
    """freeze_when_quiet (issue 49): the start-up's objects leave the collector's full passes once the process is
    quiet, not at the moment they were made, when the collection before the freeze held up the first requests."""
    import gc

    made, clock, calls = trimmer(quiet_s=2.0)
    frozen = gc.get_freeze_count()
    made.freeze_next()
    assert made.poll() is False and gc.get_freeze_count() == frozen  # not during the start
    with made.busy():
        clock.now += 5  # a first request
    clock.now += 2.0
    try:
        assert made.poll() is True and calls == [1] and gc.get_freeze_count() > frozen
    finally:
        gc.unfreeze()


class Cache:
    def __init__(self, calls: list[int], *, fails: bool = False) -> None:
        self.calls, self.fails, self.released = calls, fails, 0

    def release(self) -> None:
        self.released += 1
        self.calls.append(0)  # before the trim's 1
        if self.fails:
            raise RuntimeError("cannot release")


def test_caches_released_when_quiet_go_before_the_trim_and_a_failure_stops_nothing() -> None:
    made, clock, calls = trimmer(quiet_s=2.0)
    kept, failing, gone = Cache(calls), Cache(calls, fails=True), Cache(calls)
    for cache in (kept, failing, gone):
        made.on_quiet(cache.release)
    del gone, cache  # a cache whose owner went is not called, nor kept alive
    with made.busy():
        assert kept.released == 0  # never during work
    clock.now += 2.0
    assert made.poll() is True
    assert (kept.released, failing.released) == (1, 1) and calls == [0, 0, 1]
    assert len(made._releases) == 2
