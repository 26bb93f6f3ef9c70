"""No file stalls the service: conversions run in worker processes, killed at their deadline, recycled."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import anyio
import httpx
import pytest

# 300 wrappers around 30,000 paragraphs (9 million element-levels): docling's HTML reader spends minutes on
# it. Refused by default (DOCLING_MAX_HTML_DEPTH_TOTAL); accepted here with the limit raised, to stall a worker.
SLOW_HTML = b"<html><body>" + b"<div>" * 300 + b"<p>para</p>" * 30_000 + b"</div>" * 300 + b"</body></html>"
SMALL_TEXT = b"Meeting notes. The ferry to the island leaves at nine; bring the signed permits.\n" * 3


async def _post(http: httpx.AsyncClient, name: str, data: bytes) -> tuple[httpx.Response, float]:
    started = time.perf_counter()
    response = await http.post("/v1/convert", files={"file": (name, data)}, timeout=120)
    return response, time.perf_counter() - started


def _pids(http: httpx.AsyncClient) -> list[int]:
    app = http._transport.app  # type: ignore[attr-defined]  # the fixture's client runs on an ASGITransport
    return sorted(worker._process.pid for worker in app.state.conversion.pool._idle)


def _sender(http: httpx.AsyncClient, results: dict[str, tuple[httpx.Response, float]]):
    async def send(name: str, data: bytes) -> None:
        results[name] = await _post(http, name, data)

    return send


@pytest.mark.slow
async def test_a_stalling_document_is_stopped_while_a_small_one_answers_at_once(make_client) -> None:
    async for http in make_client(workers=2, convert_timeout_s=6, max_html_depth_total=10**9):
        results: dict[str, tuple[httpx.Response, float]] = {}
        send = _sender(http, results)
        async with anyio.create_task_group() as group:
            group.start_soon(send, "deep.html", SLOW_HTML)
            await anyio.sleep(0.5)  # the deep one is being converted when the small one arrives
            group.start_soon(send, "good.txt", SMALL_TEXT)
        small, small_s = results["good.txt"]
        assert small.status_code == 200 and "ferry to the island" in small.json()["markdown"]
        assert small_s < 2.0, f"the small file waited {small_s:.1f} s behind the stalled one"
        deep, deep_s = results["deep.html"]
        assert deep.status_code == 504 and deep.json()["code"] == "CONVERSION_TIMEOUT"
        assert "was stopped" in deep.json()["error"] and "DOCLING_CONVERT_TIMEOUT_S" in deep.json()["suggestion"]
        assert deep_s < 30  # killed at its deadline, not left to run
        # The killed worker was replaced: the pool still has two, and both convert.
        async with anyio.create_task_group() as group:
            for index in range(2):
                group.start_soon(send, f"again{index}.txt", SMALL_TEXT)
        assert all(results[f"again{index}.txt"][0].status_code == 200 for index in range(2))


async def test_a_worker_is_replaced_after_its_quota_of_conversions(make_client) -> None:
    async for http in make_client(workers=1, worker_max_tasks=2):
        first = _pids(http)
        for _ in range(2):
            assert (await _post(http, "notes.txt", SMALL_TEXT))[0].status_code == 200
        second = _pids(http)
        assert second != first
        assert (await _post(http, "notes.txt", SMALL_TEXT))[0].status_code == 200
        assert _pids(http) == second  # one conversion into the new worker's quota: kept


async def test_a_worker_killed_while_idle_is_replaced_for_the_next_upload(make_client) -> None:
    async for http in make_client(workers=1):
        (pid,) = _pids(http)
        os.kill(pid, signal.SIGKILL)
        for _ in range(100):  # until it has ended (the fork server, its parent, reaps it)
            if not Path(f"/proc/{pid}").exists():
                break
            await anyio.sleep(0.05)
        response, _ = await _post(http, "notes.txt", SMALL_TEXT)
        assert response.status_code == 200 and "ferry" in response.json()["markdown"]
        assert _pids(http) != [pid]


async def test_worker_memory_is_capped(make_client) -> None:
    async for http in make_client(workers=1, worker_memory_mb=5000):
        (pid,) = _pids(http)
        limits = Path(f"/proc/{pid}/limits").read_text()
        line = next(line for line in limits.splitlines() if line.startswith("Max address space"))
        assert line.split()[3] == str(5000 * 1024 * 1024)
