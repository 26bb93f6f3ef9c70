"""Two links on one data folder in this process (embedded/link.py): real flock, real Unix socket, real uvicorn,
small service apps in place of the three heavy ones. A second open of host.lock conflicts with the first even
in one process, so the second link attaches to the first exactly as a second process would."""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from ingestion_mcp.backend import Backend
from ingestion_mcp.embedded import link as embedded_link
from ingestion_mcp.embedded.link import SERVICES, FolderLink
from ingestion_mcp.embedded.on_first_use import OnFirstUse
from ingestion_mcp.errors import UpstreamError
from ingestion_mcp.settings import McpSettings
from servicekit.app import create_service_app

TOKEN = "link-test-token"


def service_apps(
    label: str, started: list[str], release: anyio.Event, *, start_s: float = 0.0
) -> Callable[[], dict[str, Any]]:
    """What a host runs: per service an app that names its host; /v1/slow answers once ``release`` is set.
    ``start_s``: how long the gateway's start-up takes (a model loading)."""

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        await anyio.sleep(start_s)
        yield

    def make() -> dict[str, Any]:
        started.append(label)
        apps = {}
        for name in SERVICES:
            app = create_service_app(name=name, version="0", description="test", auth_token=TOKEN, lifespan=lifespan)

            @app.get("/v1/who")
            async def who() -> dict[str, str]:
                return {"host": label}

            @app.get("/v1/slow")
            async def slow() -> dict[str, str]:
                await release.wait()
                return {"host": label}

            apps[name] = app
        return apps

    return make


@pytest.fixture
def settings(tmp_path: Path) -> McpSettings:
    return McpSettings(data_dir=tmp_path / "data", allowed_roots=[tmp_path], AUTH_TOKEN=TOKEN)  # type: ignore[call-arg]  # auth_token by its alias


def link(settings: McpSettings, make: Callable[[], dict[str, Any]]) -> FolderLink:
    folder = settings.data_dir.resolve()
    folder.mkdir(parents=True, exist_ok=True)
    return FolderLink(settings, folder, make, share=True)


async def who(backend: Backend) -> str:
    return (await backend.gateway.call("GET", "/v1/who")).json()["host"]


async def test_an_attached_link_reaches_the_host_with_a_token_set(settings: McpSettings) -> None:
    started: list[str] = []
    release = anyio.Event()
    one, two = (
        link(settings, service_apps("one", started, release)),
        link(settings, service_apps("two", started, release)),
    )
    await one.start()
    try:
        with anyio.fail_after(20):  # before issue 20 the health probe had no token: 180 s, then an error
            await two.start()
        backend = two.backend()
        assert [await who(backend) for _ in range(2)] == ["one", "one"] and started == ["one"]
        await backend.aclose()
    finally:
        await two.aclose()
        await one.aclose()


async def test_concurrent_calls_after_the_host_left_wait_for_one_takeover(settings: McpSettings) -> None:
    started: list[str] = []
    release = anyio.Event()
    one, two = (
        link(settings, service_apps("one", started, release)),
        link(settings, service_apps("two", started, release)),
    )
    await one.start()
    await two.start()
    backend = two.backend()
    try:
        assert await who(backend) == "one"
        await one.aclose()  # the host exits cleanly: its socket goes, host.lock is free
        answers: list[str] = []

        async def ask() -> None:
            answers.append(await who(backend))

        async with anyio.create_task_group() as group:
            for _ in range(5):
                group.start_soon(ask)
        assert answers == ["two"] * 5 and started == ["one", "two"]  # one takeover served all five
        assert two.generation == 2
    finally:
        await backend.aclose()
        await two.aclose()


async def test_a_call_waits_for_a_slow_takeover_only_so_long_and_says_why(
    settings: McpSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(embedded_link, "TAKEOVER_WAIT_S", 0.5)  # 50 s in use: under the agents' 60 s timeouts
    started: list[str] = []
    release = anyio.Event()
    one = link(settings, service_apps("one", started, release))
    two = link(settings, service_apps("two", started, release, start_s=2.0))
    await one.start()
    await two.start()
    backend = two.backend()
    try:
        await one.aclose()
        with pytest.raises(UpstreamError, match="taking the folder over and its services are still starting"):
            await who(backend)
        answers: list[str] = []
        with anyio.fail_after(30):
            while not answers:
                with contextlib.suppress(UpstreamError):  # still starting: the takeover goes on meanwhile
                    answers.append(await who(backend))
        assert answers == ["two"] and started == ["one", "two"]  # one takeover, finished
    finally:
        await backend.aclose()
        await two.aclose()


async def test_a_request_in_flight_when_the_host_goes_fails_and_names_the_folder(settings: McpSettings) -> None:
    started: list[str] = []
    release = anyio.Event()
    one, two = (
        link(settings, service_apps("one", started, release)),
        link(settings, service_apps("two", started, release)),
    )
    await one.start()
    await two.start()
    backend = two.backend()
    failure: list[BaseException] = []

    async def slow() -> None:
        try:
            await backend.gateway.call("GET", "/v1/slow")
        except UpstreamError as exc:
            failure.append(exc)

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(slow)
            await anyio.sleep(0.5)  # the request is at the host, which waits on `release`
            await one.aclose()  # leaving: its server closes the connection of the unanswered request
        (error,) = failure
        assert isinstance(error, UpstreamError) and error.code == "SERVICE_UNAVAILABLE"
        assert str(one.folder) in error.message and f"(pid {os.getpid()})" in error.message
        assert "in flight" in error.message and "URL" not in f"{error.message} {error.suggestion}"
        assert await who(backend) == "two"  # the next call takes over
    finally:
        release.set()
        await backend.aclose()
        await two.aclose()


async def test_a_closed_link_says_so(settings: McpSettings) -> None:
    one = link(settings, service_apps("one", [], anyio.Event()))
    await one.start()
    backend = one.backend()
    await one.aclose()
    with pytest.raises(UpstreamError, match="closed its link to the data folder"):
        await backend.gateway.call("GET", "/v1/who")
    await backend.aclose()


async def test_a_link_started_in_the_background_answers_its_calls_once_its_services_run(settings: McpSettings) -> None:
    """The MCP server starts its link in the background (issue 49): calls made meanwhile wait for the services, a
    call that waits too long says they are still starting, and a later one is answered."""
    started: list[str] = []
    one = link(settings, service_apps("one", started, anyio.Event(), start_s=0.5))
    one.start_soon()
    backend = one.backend()
    try:
        with anyio.fail_after(30):
            assert [await who(backend) for _ in range(2)] == ["one", "one"] and started == ["one"]
    finally:
        await backend.aclose()
        await one.aclose()


async def test_a_call_during_a_slow_background_start_says_the_services_are_starting(
    settings: McpSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(embedded_link, "TAKEOVER_WAIT_S", 0.2)
    started: list[str] = []
    one = link(settings, service_apps("one", started, anyio.Event(), start_s=1.0))
    one.start_soon()
    backend = one.backend()
    try:
        with pytest.raises(UpstreamError, match="are still starting") as caught:
            await who(backend)
        assert caught.value.code == "SERVICE_UNAVAILABLE" and "Call again" in (caught.value.suggestion or "")
        with anyio.fail_after(30):
            while True:
                with contextlib.suppress(UpstreamError):  # the start goes on meanwhile, once
                    assert await who(backend) == "one"
                    break
        assert started == ["one"]
    finally:
        await backend.aclose()
        await one.aclose()


async def test_a_service_that_starts_on_first_use_starts_with_its_first_request_and_stops_with_the_host(
    settings: McpSettings,
) -> None:
    """The converter and the chunker start with the first call that needs them (embedded/on_first_use.py): health
    probes do not start them, a request does, once for concurrent requests; the host stops them when it closes."""
    events: list[str] = []
    plain = service_apps("one", [], anyio.Event())

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        events.append("started")
        yield
        events.append("stopped")

    def chunker() -> Any:
        app = create_service_app(name="chunker", version="0", description="test", auth_token=TOKEN, lifespan=lifespan)

        @app.get("/v1/who")
        async def who_chunker() -> dict[str, str]:
            return {"host": "chunker"}

        return app

    def make() -> dict[str, Any]:
        return {**plain(), "chunker": OnFirstUse("chunker", chunker)}

    one = link(settings, make)
    await one.start()
    backend = one.backend()
    try:
        assert (await backend.readiness())["chunker"] == "ok" and events == []  # a probe starts nothing
        answers: list[str] = []

        async def ask() -> None:
            answers.append((await backend.chunker.call("GET", "/v1/who")).json()["host"])

        async with anyio.create_task_group() as group:
            for _ in range(3):
                group.start_soon(ask)
        assert answers == ["chunker"] * 3 and events == ["started"]
    finally:
        await backend.aclose()
        await one.aclose()
    assert events == ["started", "stopped"]
