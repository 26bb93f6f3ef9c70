"""The compose smoke's first build step: room on disk for every image, asked of podman where it writes what.

podman commits a layer by writing it into its store and twice more as temporary copies under TMPDIR (its
ImageCopyTmpDir). CI points TMPDIR at RAM so the disk holds the images alone (docs/deployment.md "Disk"); the check
asks each file system for its own share then, and for the whole on one disk.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import types
from pathlib import Path

import pytest

from scripts import compose_checks

PODMAN = shutil.which("podman")
pytestmark = pytest.mark.skipif(PODMAN is None, reason="podman not installed (apt-get install podman)")


def _checks(env: dict[str, str]) -> compose_checks.Checks:
    smoke = types.SimpleNamespace(engine=PODMAN, podman=True, env=env)
    return compose_checks.Checks(smoke, "http://127.0.0.1:9/mcp")  # type: ignore[arg-type]  # why: the room check reads engine, podman and env alone


def _room(env: dict[str, str]) -> str:
    return _checks(env).room()


def test_copies_in_another_file_system_are_asked_for_their_own_share(monkeypatch):
    shm = Path("/dev/shm")
    store, _ = _checks(dict(os.environ)).storage_places()
    existing = next(p for p in (store, *store.parents) if p.exists())
    if not shm.is_dir() or shm.stat().st_dev == existing.stat().st_dev:
        pytest.skip("/dev/shm is not a file system of its own here")
    monkeypatch.setattr(compose_checks, "BUILD_ROOM_GB", None)
    folder = Path(tempfile.mkdtemp(dir=shm, prefix="room-test-"))
    try:
        said = _room({**os.environ, "TMPDIR": str(folder)})
    except AssertionError as short:  # a machine short of room: the message must still say each share
        said = str(short)
    finally:
        folder.rmdir()
    assert f"at {folder} (needs about {compose_checks.ROOM_GB['copies']:.1f})" in said
    assert f"at {store} (needs about {compose_checks.ROOM_GB['store']:.1f})" in said


def test_short_of_room_says_where_and_what_to_do(monkeypatch):
    monkeypatch.setattr(compose_checks, "BUILD_ROOM_GB", None)
    monkeypatch.setattr(compose_checks, "ROOM_GB", dict.fromkeys(compose_checks.ROOM_GB, 100000.0))  # no disk has it
    with pytest.raises(AssertionError) as short:
        _room(dict(os.environ))
    text = str(short.value)
    assert "needs about 100000.0" in text
    for fix in ("image prune", "TMPDIR", "BUILD_ROOM_GB=0"):
        assert fix in text


def test_zero_skips_the_check(monkeypatch):
    monkeypatch.setattr(compose_checks, "BUILD_ROOM_GB", "0")
    assert _room(dict(os.environ)) == "not checked (BUILD_ROOM_GB=0)"
