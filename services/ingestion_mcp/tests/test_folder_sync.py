"""The folder sync engine (issue 29) on the real embedded backend: add, edit, delete, re-sync, dry run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import pytest
from ingestion_contracts.gateway import SearchRequest
from ingestion_mcp.ingest.sync import FolderSync, SyncOptions, walk
from ingestion_mcp.ingest.sync_lock import folder_sync_lock, lock_path
from ingestion_mcp.library import Library
from ingestion_mcp.state import AppState

pytestmark = pytest.mark.timeout(600)


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def test_walk_refuses_links_out_and_special_files(tmp_path: Path) -> None:
    root = tmp_path / "root"
    write(root, {"a.md": "# A\n", "sub/b.txt": "b", "skip.log": "x", ".hidden/c.md": "c"})
    outside = tmp_path / "secret.md"
    outside.write_text("secret")
    (root / "link.md").symlink_to(outside)
    os.mkfifo(root / "pipe.md")
    found = list(walk(root, [root], SyncOptions(str(root), "c")))
    entries = sorted(e.rel for e in found if hasattr(e, "size"))
    refused = {e.rel: e.reason for e in found if hasattr(e, "reason")}
    assert entries == ["a.md", "sub/b.txt"]
    assert "outside the allowed folders" in refused["link.md"]
    assert "not a regular file" in refused["pipe.md"]
    assert str(tmp_path) not in " ".join(refused.values())
    flat = list(walk(root, [root], SyncOptions(str(root), "c", recursive=False, exclude=("*.txt",))))
    assert sorted(e.rel for e in flat if hasattr(e, "size")) == ["a.md"]


async def test_sync_follows_the_folder(app_state: AppState, docs_dir: Path) -> None:
    folder = docs_dir / "synced"
    write(folder, {
        "garden.md": "# Garden\n\nDrip irrigation with soil moisture sensors for the vegetable beds.\n",
        "bread.md": "# Bread\n\nFeed the sourdough starter with flour and water every morning.\n",
        "notes/bees.txt": "Beekeeping: inspect the hive frames for queen cells every week in spring.\n",
    })  # fmt: skip
    engine = FolderSync(app_state.backend, app_state.settings)
    opts = SyncOptions(str(folder), "sync_engine")
    dry = await engine.run(SyncOptions(str(folder), "sync_engine", dry_run=True))
    assert dry.counts()["added"] == 3
    first = await engine.run(opts)
    assert first.counts() == {"added": 3, "replaced": 0, "unchanged": 0, "removed": 0, "failed": 0}, first.failed
    again = await engine.run(opts)
    assert again.counts() == {"added": 0, "replaced": 0, "unchanged": 3, "removed": 0, "failed": 0}
    (folder / "bread.md").write_text("# Bread\n\nRye bread needs a long cold proof in the fridge overnight.\n")
    (folder / "garden.md").unlink()
    write(folder, {"tea.md": "# Tea\n\nGreen tea is steeped at eighty degrees for two minutes.\n"})
    plan = await engine.run(SyncOptions(str(folder), "sync_engine", dry_run=True))
    assert plan.counts() == {"added": 1, "replaced": 1, "unchanged": 1, "removed": 1, "failed": 0}
    second = await engine.run(opts)
    assert second.counts() == {"added": 1, "replaced": 1, "unchanged": 1, "removed": 1, "failed": 0}
    assert second.removed == [(folder.resolve() / "garden.md").as_posix()]
    library = Library(app_state.backend, app_state.settings)
    listed = await library.documents("sync_engine", limit=50)
    assert sorted(Path(d.key).name for d in listed.documents) == ["bees.txt", "bread.md", "tea.md"]
    found = await library.search(SearchRequest(query="drip irrigation soil moisture", collections=["sync_engine"]))
    assert all("garden" not in hit.key for hit in found.hits)


async def test_sync_folder_tool_through_a_client(connect, call_tool, docs_dir: Path) -> None:
    folder = docs_dir / "tool_synced"
    write(folder, {
        "owls.md": "# Owls\n\nBarn owls hunt voles at night over rough grassland.\n",
        "kites.md": "# Kites\n\nRed kites circle above the motorway verges looking for carrion.\n",
    })  # fmt: skip
    async with connect() as client:
        outside = await call_tool(client, "sync_folder", folder="/etc", collection="sync_tool")
        assert outside["success"] is False and "not inside the allowed folders" in outside["error"]
        assert "job_id" not in outside and (await call_tool(client, "list_active_jobs"))["jobs"] == []
        notafolder = await call_tool(client, "sync_folder", folder=str(folder / "owls.md"), collection="sync_tool")
        assert notafolder["success"] is False and notafolder["error"].startswith("Not a folder")
        dry = await call_tool(client, "sync_folder", folder=str(folder), collection="sync_tool", dry_run=True)
        assert dry["counts"]["added"] == 2
        first = await call_tool(client, "sync_folder", folder=str(folder), collection="sync_tool")
        assert first["counts"] == {"added": 2, "replaced": 0, "unchanged": 0, "removed": 0, "failed": 0}
        (folder / "owls.md").unlink()
        (folder / "kites.md").write_text("# Kites\n\nKites nest in tall beech trees in early spring.\n")
        os.mkfifo(folder / "pipe.md")
        again = await call_tool(client, "sync_folder", folder=str(folder), collection="sync_tool")
        assert again["counts"] == {"added": 0, "replaced": 1, "unchanged": 0, "removed": 1, "failed": 1}
        assert again["failed"] == ["pipe.md: not a regular file (fifo, socket or device)"]
        found = await call_tool(client, "search", query="barn owls hunting voles", collection="sync_tool")
        assert all("owls" not in str(hit) for hit in found.get("results", []))
        detailed = await call_tool(client, "search", query="kites nest in beech trees", collection="sync_tool",
                                   response_format="detailed")  # fmt: skip
        (kites,) = [hit for hit in detailed["results"] if "beech" in hit["text"]]
        mtime = datetime.fromtimestamp((folder / "kites.md").stat().st_mtime, UTC)
        assert abs((datetime.fromisoformat(kites["updated"].replace("Z", "+00:00")) - mtime).total_seconds()) < 2


async def test_sync_folder_refuses_a_caller_without_the_write_right(connect, docs_dir: Path) -> None:
    from ingestion_mcp.access.policy import Caller, Grant, acting_as

    folder = docs_dir / "refused"
    write(folder, {"a.md": "# A\n\nSomething worth indexing about lighthouses.\n"})
    with acting_as(Caller("reader", (Grant("*", "read"),))):
        async with connect() as client:
            response = await client.call_tool("sync_folder", {"folder": str(folder), "collection": "sync_refused"})
            listed = await client.call_tool("get_collections", {})
    assert response.is_error and "write" in str(response.content)
    assert not listed.is_error and "sync_refused" not in str(listed.structured_content)


async def test_a_cancelled_sync_prunes_nothing_and_a_rerun_completes(app_state: AppState, docs_dir: Path) -> None:
    folder = docs_dir / "cancelled"
    write(folder, {f"n{i}.md": f"# Note {i}\n\nPlain note number {i} about walking in the hills.\n" for i in range(4)})
    engine = FolderSync(app_state.backend, app_state.settings)
    opts = SyncOptions(str(folder), "sync_cancel")
    assert (await engine.run(opts)).counts()["added"] == 4
    (folder / "n0.md").unlink()
    asked = iter([False, True])
    stopped = await engine.run(opts, cancelled=lambda: next(asked, True))
    assert stopped.cancelled and stopped.removed == []
    listed = await Library(app_state.backend, app_state.settings).documents("sync_cancel", limit=50)
    assert len(listed.documents) == 4  # nothing half-done: the pruning waits for a complete walk
    again = await engine.run(opts)
    assert again.counts() == {"added": 0, "replaced": 0, "unchanged": 3, "removed": 1, "failed": 0}


async def test_a_touched_file_costs_a_read_never_a_write(app_state: AppState, docs_dir: Path) -> None:
    """Same content, new mtime (a checkout, a copy, a save without edits): unchanged by its hash, and nothing is
    written (a relabel to record the new mtime rewrote every chunk: 249 s for 1,000 files in bench.sync)."""
    folder = docs_dir / "touched"
    write(folder, {"t.md": "# Tide\n\nSpring tides follow the new and the full moon by a day or two.\n"})
    engine = FolderSync(app_state.backend, app_state.settings)
    opts = SyncOptions(str(folder), "sync_touched")
    assert (await engine.run(opts)).counts()["added"] == 1
    library = Library(app_state.backend, app_state.settings)
    (before,) = (await library.documents("sync_touched", limit=5)).documents
    os.utime(folder / "t.md", ns=(1_700_000_000_000_000_000, 1_700_000_000_000_000_000))
    for _ in range(2):
        touched = await engine.run(opts)
        assert touched.counts() == {"added": 0, "replaced": 0, "unchanged": 1, "removed": 0, "failed": 0}
    (after,) = (await library.documents("sync_touched", limit=5)).documents
    assert after == before  # not relabelled, not re-embedded


async def test_progress_counts_files_against_the_whole_folder(app_state: AppState, docs_dir: Path) -> None:
    """'file 16/20' from the first batch on (the folder is counted first), and the job's fraction stays 0..1."""
    from ingestion_mcp.profiles.ingestion.sync import sync_folder_job

    folder = docs_dir / "progress"
    write(folder, {f"p{i:02}.md": f"# Page {i}\n\nA line about lock keepers on canal number {i}.\n" for i in range(20)})
    steps: list[tuple[float, str]] = []

    async def progress(fraction: float, step: str) -> None:
        steps.append((fraction, step))

    params = {"folder": str(folder), "collection": "sync_progress"}
    assert (await sync_folder_job(app_state, params, progress))["counts"]["added"] == 20
    batch = app_state.settings.index_batch_size
    assert steps[0] == (batch / 20, f"file {batch}/20") and steps[-1] == (1.0, "file 20/20"), steps


async def test_a_sync_of_changed_paths_looks_at_those_only(app_state: AppState, docs_dir: Path) -> None:
    """What a watched folder's batch does: the changed files and folders are synced, a gone path's documents
    (a whole sub-folder's too) are pruned, and nothing else is looked at."""
    folder = docs_dir / "scoped"
    write(folder, {
        "a.md": "# A\n\nAvocets sweep the shallow lagoon with upturned bills.\n",
        "b.md": "# B\n\nBitterns boom from deep in the reed bed in spring.\n",
        "c.md": "# C\n\nCurlews call over the saltmarsh at high tide.\n",
        "sub/d.md": "# D\n\nDunlin flocks twist over the estuary mud.\n",
    })  # fmt: skip
    engine = FolderSync(app_state.backend, app_state.settings)
    assert (await engine.run(SyncOptions(str(folder), "sync_scoped"))).counts()["added"] == 4
    (folder / "a.md").write_text("# A\n\nAvocets now nest on the new scrape by the hide.\n")
    (folder / "b.md").unlink()
    (folder / "c.md").write_text("# C\n\nNot in the batch: this edit waits for a whole-folder sync.\n")
    (folder / "sub" / "d.md").unlink()
    (folder / "sub").rmdir()
    write(folder, {"new/e.md": "# E\n\nEiders drift in rafts off the harbour mouth.\n"})
    batch = ("a.md", "b.md", "sub", "new", "new/e.md", "../outside.md", ".hidden")  # a folder and its file: once
    scoped = SyncOptions(str(folder), "sync_scoped", paths=batch)
    done = await engine.run(scoped)
    assert done.counts() == {"added": 1, "replaced": 1, "unchanged": 0, "removed": 2, "failed": 0}, done
    assert sorted(Path(r).name for r in done.removed) == ["b.md", "d.md"]
    whole = await engine.run(SyncOptions(str(folder), "sync_scoped"))
    assert whole.counts() == {"added": 0, "replaced": 1, "unchanged": 2, "removed": 0, "failed": 0}  # c.md now


async def test_two_syncs_of_one_folder_write_each_file_once(
    app_state: AppState, docs_dir: Path, count_writes: Callable[[Any], list[str]]
) -> None:  # fmt: skip
    """Two syncs of the same folder at once (two servers on one data folder with no broker, a CLI update beside a
    server, two agents): the second waits for the first and finds the files in step. Before, both saw every
    file as new and both ingested it (twice the writes; each call's counts depended on which finished first)."""
    folder = docs_dir / "twice"
    write(folder, {f"n{i}.md": f"# Note {i}\n\nA heron stood in the shallows at dawn, note {i}.\n" for i in range(5)})
    writes = count_writes(app_state.backend)
    engines = [FolderSync(app_state.backend, app_state.settings) for _ in range(2)]
    reports = []

    async def one(engine: FolderSync) -> None:
        reports.append((await engine.run(SyncOptions(str(folder), "sync_twice"))).counts())

    async with anyio.create_task_group() as tasks:
        for engine in engines:
            tasks.start_soon(one, engine)
    assert len(writes) == 5, sorted(writes)
    assert sorted(r["added"] for r in reports) == [0, 5] and sorted(r["unchanged"] for r in reports) == [0, 5]


async def test_a_sync_waits_for_another_process_holding_the_folder_and_goes_on_when_it_is_killed(
    app_state: AppState, docs_dir: Path
) -> None:  # fmt: skip
    """The exclusion holds across processes (a real second process holds the folder's lock), a sync cancelled
    while it waits stops at once having written nothing, and a holder killed with SIGKILL leaves nothing locked:
    the kernel drops its lock and the waiting sync runs."""
    folder = docs_dir / "held"
    write(folder, {"a.md": "# A\n\nA nuthatch walked head-first down the oak trunk.\n"})
    prefix = folder.resolve().as_posix() + "/"
    path = lock_path(app_state.settings.data_dir, "sync_held", prefix)
    path.parent.mkdir(parents=True, exist_ok=True)
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        engine = FolderSync(app_state.backend, app_state.settings)
        done: list[dict[str, int]] = []

        async def run() -> None:
            done.append((await engine.run(SyncOptions(str(folder), "sync_held"))).counts())

        with anyio.move_on_after(1.0) as waited:  # a cancel (a job's cancel_job) while it waits
            await run()
        assert waited.cancelled_caught and done == []
        assert "sync_held" not in await app_state.backend.collection_names()  # nothing written, not even made
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(run)
            await anyio.sleep(1.5)
            assert done == []  # waiting for the other process
            os.kill(holder.pid, signal.SIGKILL)
        assert done and done[0]["added"] == 1, done
    finally:
        holder.kill()
        holder.wait()


HOLD = """
import fcntl, sys, time
handle = open(sys.argv[1], "a")
fcntl.flock(handle, fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(600)
"""


async def test_a_data_folder_that_cannot_hold_the_lock_costs_the_exclusion_not_the_sync(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:  # fmt: skip
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")  # (as root, permissions would not stop the write; a file in the way does)
    ran = []
    async with folder_sync_lock(lock_path(blocked, "c", "/docs/")):
        ran.append(True)
    assert ran == [True]
    assert "not serialised" in caplog.text and str(tmp_path) not in caplog.text
