"""The shared data folder's socket (embedded/socket.py) on the real filesystem: who may reach it, where it lives."""

from __future__ import annotations

import logging
import os
import socket
import stat
import tempfile
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from ingestion_mcp.embedded.socket import (
    NotPrivate,
    PrivateDir,
    bind_private,
    serve_privately,
    socket_dir,
)

ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="giving a directory to another user needs root")


def mode(path: Path | str) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


async def hello(scope: dict[str, Any], receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": b"hello"})


def test_the_host_makes_an_existing_socket_directory_owner_only(tmp_path: Path) -> None:
    (tmp_path / "run").mkdir(mode=0o755)
    (tmp_path / "run").chmod(0o755)
    PrivateDir.open(tmp_path / "run", create=True).close()
    assert mode(tmp_path / "run") == 0o700


def test_an_attaching_process_refuses_a_directory_others_can_enter_and_leaves_it_alone(tmp_path: Path) -> None:
    (tmp_path / "run").mkdir()
    (tmp_path / "run").chmod(0o750)
    with pytest.raises(NotPrivate, match="mode 0750"):
        PrivateDir.open(tmp_path / "run", create=False)
    assert mode(tmp_path / "run") == 0o750


@ROOT_ONLY
@pytest.mark.parametrize("create", [True, False])
def test_a_directory_of_another_user_is_refused(tmp_path: Path, create: bool) -> None:
    (tmp_path / "run").mkdir(mode=0o700)
    os.chown(tmp_path / "run", 65534, 65534)
    with pytest.raises(NotPrivate, match="belongs to uid 65534"):
        PrivateDir.open(tmp_path / "run", create=create)


def test_a_symlink_in_place_of_the_directory_is_refused(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (tmp_path / "run").symlink_to(elsewhere)
    for create in (True, False):
        with pytest.raises(NotPrivate, match="cannot open"):
            PrivateDir.open(tmp_path / "run", create=create)


def test_a_deep_folder_binds_and_connects_through_its_open_directory(tmp_path: Path) -> None:
    folder = tmp_path / ("d" * 120)
    folder.mkdir()
    before = set(os.listdir(tempfile.gettempdir()))
    host = PrivateDir.open(socket_dir(folder), create=True)
    listener = bind_private(host)
    try:
        assert host.address.startswith("/proc/self/fd/") and len(host.address) < 100
        assert host.socket_file == folder / "run" / "services.sock"
        assert stat.S_ISSOCK(os.stat(host.socket_file).st_mode) and mode(host.socket_file) == 0o600
        assert host.socket_problem() is None
        guest = PrivateDir.open(socket_dir(folder), create=False)
        with socket.socket(socket.AF_UNIX) as client:
            client.connect(guest.address)
        guest.close()
    finally:
        listener.close()
        host.close()
    assert set(os.listdir(tempfile.gettempdir())) == before  # nothing in the shared temp dir


def test_without_proc_a_deep_folder_goes_to_a_private_runtime_dir_never_to_a_shared_tmp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, no_proc = Path("/home/someone/" + "d" * 100), tmp_path / "no-proc"
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    chosen = socket_dir(folder, proc=no_proc)
    assert chosen.parent == runtime and chosen.name.startswith("ingestion-mcp-")

    shared = tmp_path / "shared-tmp"  # what /tmp is: everyone's (1777)
    shared.mkdir()
    shared.chmod(0o1777)
    runtime.chmod(0o755)
    monkeypatch.setattr(tempfile, "tempdir", str(shared))
    assert socket_dir(folder, proc=no_proc) == folder / "run"  # too long to bind: not shared, never in /tmp
    assert socket_dir(Path("/home/someone/data"), proc=no_proc) == Path("/home/someone/data/run")


async def test_the_services_are_served_on_the_private_socket_and_it_goes_with_them(tmp_path: Path) -> None:
    async with serve_privately({"vector gateway": hello}, tmp_path / "run") as place:
        assert place is not None and mode(place.socket_file) == 0o600 and mode(tmp_path / "run") == 0o700
        async with httpx.AsyncClient(transport=httpx.AsyncHTTPTransport(uds=place.address)) as http:
            answer = await http.get("http://host/vector-gateway/anything")
        assert answer.status_code == 200 and answer.text == "hello"
    assert not (tmp_path / "run" / "services.sock").exists()


async def test_a_socket_widened_after_uvicorn_binds_is_not_shared(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # The fault uvicorn's own uds= bind makes (chmod 0666 once bound) cannot happen on the socket handed to it;
    # injected here to show the check after start-up catches any widening.
    startup = uvicorn.Server.startup

    async def widening_startup(self: uvicorn.Server, sockets: list[socket.socket] | None = None) -> None:
        await startup(self, sockets=sockets)
        for sock in sockets or []:
            os.chmod(sock.getsockname(), 0o666)

    monkeypatch.setattr(uvicorn.Server, "startup", widening_startup)
    with caplog.at_level(logging.WARNING, logger="ingestion_mcp.embedded"):
        async with serve_privately({"vector gateway": hello}, tmp_path / "run") as place:
            assert place is None
    assert "refusing to share" in caplog.text and "mode 0666" in caplog.text
    assert not (tmp_path / "run" / "services.sock").exists()
