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
from ingestion_mcp.ingest.folder_lock import folder_sync_lock, lock_path
from ingestion_mcp.ingest.folder_sync import FolderSync, SyncOptions
from ingestion_mcp.jobs import Job
from ingestion_mcp.library import Library
from ingestion_mcp.state import AppState

from scripts.service_stack import call

pytestmark = pytest.mark.timeout(600)


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def test_walk_refuses_links_out_and_special_files(tmp_path: Path) -> None:
    from ingestion_mcp.ingest.walk import Walk

    root = tmp_path / "root"
    write(root, {"a.md": "# A\n", "sub/b.txt": "b", "skip.gz": "x", ".hidden/c.md": "c"})
    outside = tmp_path / "secret.md"
    outside.write_text("secret")
    (root / "link.md").symlink_to(outside)
    (root / "NEWS.gz").symlink_to("changelog.gz")  # broken, and of a type skipped anyway: skipped, not failed
    (root / "broken.md").symlink_to("gone.md")
    os.mkfifo(root / "pipe.md")
    found = list(Walk(root, [root], SyncOptions(str(root), "c")).all())
    entries = sorted(e.rel for e in found if hasattr(e, "size"))
    refused = {e.rel: e.reason for e in found if hasattr(e, "reason")}
    assert entries == ["a.md", "sub/b.txt"]
    assert "outside the allowed folders" in refused["link.md"]
    assert "not a regular file" in refused["pipe.md"]
    assert "broken or looping" in refused["broken.md"]
    assert sorted((e.rel, e.extension) for e in found if hasattr(e, "extension")) == [
        ("NEWS.gz", ".gz"), ("skip.gz", ".gz")]  # fmt: skip
    assert str(tmp_path) not in " ".join(refused.values())
    flat = list(Walk(root, [root], SyncOptions(str(root), "c", recursive=False, exclude=("*.txt",))).all())
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


async def test_progress_tells_the_real_stage_from_the_first_file_on(app_state: AppState, docs_dir: Path) -> None:
    """Issue 37: the first batch was "0% queued" until it was stored (44 s on a real folder, no notification):
    now the count comes first, then each stage of the first batch ("file 1/20: converting"), rising, to 20/20."""
    from ingestion_mcp.profiles.ingestion.sync_tool import sync_folder_job

    folder = docs_dir / "progress"
    write(folder, {f"p{i:02}.md": f"# Page {i}\n\nA line about lock keepers on canal number {i}.\n" for i in range(20)})
    steps: list[tuple[float, str]] = []

    async def progress(fraction: float, step: str) -> None:
        steps.append((fraction, step))

    params = {"folder": str(folder), "collection": "sync_progress"}
    assert (await sync_folder_job(app_state, params, progress))["counts"]["added"] == 20
    batch = app_state.settings.index_batch_size
    before_stored = [step for fraction, step in steps if fraction < batch / 20]
    assert before_stored[0] == "file 0/20: comparing" and before_stored[1] == "file 1/20: reading", steps
    stages = {step.split(": ", 1)[1] for step in before_stored}
    assert {"reading", "converting", "chunking", "embedding", "storing"} <= stages, before_stored
    assert [f for f, _ in steps] == sorted(f for f, _ in steps) and steps[-1] == (1.0, "file 20/20: done"), steps
    job = Job(id="j", type="sync_folder", description="sync")
    for fraction, step in steps:
        await job.advance(fraction, step)
    job.finish(result={})
    assert set(job.step_ms) <= {"queued", "comparing", "reading", "converting", "chunking", "embedding", "storing",
                                "done"}, job.step_ms  # one timing per stage, not one per file  # fmt: skip


async def test_the_next_batch_is_read_while_one_is_embedded(app_state: AppState, docs_dir: Path) -> None:
    """Issue 49: one batch at a time kept 1.6 of 2 cores busy on a folder of small files. Two batches are in the
    pipeline at once (never more), every file is written once, and the progress still only rises."""
    folder = docs_dir / "inflight"
    write(
        folder, {f"b{i:02}.md": f"# Barge {i}\n\nBarge number {i} carries gravel down the canal.\n" for i in range(9)}
    )
    engine = FolderSync(app_state.backend, app_state.settings.model_copy(update={"index_batch_size": 2}))
    real, running, peak = engine.ingestor.ingest_many, [0], [0]

    async def counted(*args: Any, **kwargs: Any) -> Any:
        running[0] += 1
        peak[0] = max(peak[0], running[0])
        try:
            return await real(*args, **kwargs)
        finally:
            running[0] -= 1

    engine.ingestor.ingest_many = counted  # type: ignore[method-assign]  # counts the calls, runs the real pipeline
    told: list[float] = []

    async def progress(done: float, total: int, message: str) -> None:
        told.append(done / total)

    report = await engine.run(SyncOptions(str(folder), "sync_inflight"), progress=progress)
    assert report.counts() == {"added": 9, "replaced": 0, "unchanged": 0, "removed": 0, "failed": 0}
    assert peak[0] == 2 and running[0] == 0
    assert told == sorted(told) and told[-1] == 1.0, told
    listed = await Library(app_state.backend, app_state.settings).documents("sync_inflight", limit=50)
    assert sorted(d.source for d in listed.documents) == [f"b{i:02}.md" for i in range(9)]


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


async def documents_of(client: Any, collection: str) -> int:
    shown = await call(client, "get_collections", collection=collection)
    return shown["document_count"]


async def test_a_malformed_glob_is_refused_and_nothing_changes(connect, docs_dir: Path) -> None:
    """Issue 37: include ["[unclosed"] matched nothing and emptied the collection (288 removed): a malformed glob
    is refused with what is wrong, before anything runs."""
    folder = docs_dir / "globs"
    write(folder, {f"g{i}.md": f"# G{i}\n\nGlobe artichokes are cut when the bracts are still tight, {i}.\n"
                   for i in range(3)})  # fmt: skip
    async with connect() as client:
        assert (await call(client, "sync_folder", folder=str(folder), collection="sync_globs"))["counts"]["added"] == 3
        for include, words in ((["[unclosed"], "no ']' closes"), (["/abs/*.md"], "starts with '/'"),
                               (["*.md", ""], "empty"), (["../*.md"], "'..'")):  # fmt: skip
            refused = await call(client, "sync_folder", folder=str(folder), collection="sync_globs", include=include)
            assert refused["success"] is False and words in refused["error"], refused
            assert "Nothing was synced" in refused["error"] and refused["suggestion"], refused
        bad_exclude = await call(client, "sync_folder", folder=str(folder), collection="sync_globs", exclude=["a[b"])
        assert bad_exclude["success"] is False and "exclude pattern" in bad_exclude["error"]
        assert (await call(client, "list_active_jobs"))["jobs"] == []  # nothing was queued
        assert await documents_of(client, "sync_globs") == 3


async def test_slips_that_would_empty_a_folder_remove_nothing_and_say_how_to(connect, docs_dir: Path) -> None:
    """Issue 37: a narrowed include, a case slip, recursive: false each removed most of a folder. Now a sync that
    would remove over 25% and over 10 of the folder's documents removes none (rsync/rclone --max-delete), still
    adds and replaces, says how many and which argument allows it; the dry run says the same."""
    folder = docs_dir / "slips"
    write(
        folder, {f"n{i:02}.md": f"# Note {i}\n\nThe ferryman rows across at dawn, crossing {i}.\n" for i in range(14)}
    )
    write(folder, {"log.txt": "Tide tables for the estuary, copied out by hand each month.\n",
                   "sub/deep.md": "# Deep\n\nThe lower lock fills from the sluice in nine minutes.\n"})  # fmt: skip
    sync = {"folder": str(folder), "collection": "sync_slips"}
    async with connect() as client:
        assert (await call(client, "sync_folder", **sync))["counts"]["added"] == 16
        (folder / "log.txt").write_text("Tide tables for the estuary, now printed from the harbour office.\n")
        plan = await call(client, "sync_folder", **sync, include=["*.txt"], dry_run=True)
        narrowed = await call(client, "sync_folder", **sync, include=["*.txt"])
        for answer in (plan, narrowed):
            assert answer["success"] is True and answer["counts"]["removed"] == 0, answer
            assert answer["counts"]["held"] == 15 and answer["counts"]["replaced"] == 1, answer
            assert "max_removals=15" in answer["message"] and "25%" in answer["message"], answer["message"]
        assert await documents_of(client, "sync_slips") == 16
        case = await call(client, "sync_folder", **sync, include=["*.MD", "*.TXT"])  # a case slip takes the files
        assert case["counts"] == {"added": 0, "replaced": 0, "unchanged": 16, "removed": 0, "failed": 0}, case
        flat = await call(client, "sync_folder", **sync, recursive=False)  # sub-folders out of view: kept
        assert flat["counts"]["removed"] == 0 and "held" not in flat["counts"], flat
        assert await documents_of(client, "sync_slips") == 16
        lifted = await call(client, "sync_folder", **sync, include=["*.txt"], max_removals=15)
        assert lifted["counts"]["removed"] == 15 and await documents_of(client, "sync_slips") == 1, lifted
        negative = await call(client, "sync_folder", **sync, max_removals=-1)
        assert negative["success"] is False and "max_removals" in negative["error"]


async def test_a_failing_file_is_listed_and_the_sync_still_succeeds(connect, docs_dir: Path) -> None:
    """Issue 37: one failing file turned the answer into success: false with no error; get_collections never said
    which files fail. Now: success, the file and its reason in `failed`, and on the folder in get_collections."""
    folder = docs_dir / "honest"
    write(folder, {"good.md": "# Good\n\nHedgerows are laid in winter with a billhook and stakes.\n",
                   "also.md": "# Also\n\nThe thatcher combs the reed before it is fixed to the roof.\n"})  # fmt: skip
    (folder / "latin1.md").write_bytes("# Caf\xe9\n\nUn caf\xe9 cr\xe8me au comptoir.\n".encode("latin-1"))
    async with connect() as client:
        done = await call(client, "sync_folder", folder=str(folder), collection="sync_honest")
        assert done["success"] is True and done["counts"]["added"] == 2 and done["counts"]["failed"] == 1, done
        assert done["failed"] == ["latin1.md: latin1.md is not UTF-8 text."], done
        shown = await call(client, "get_collections", collection="sync_honest")
        (synced,) = shown["synced_folders"]
        assert synced["failing"] == done["failed"] and synced["failing_total"] == 1, synced
        assert synced["full_result"]["added"] == 2 and "1 files failing" in shown["message"], shown
        paged = await call(client, "get_collections", collection="sync_honest", offset=1)
        assert len(paged["files"]) == 1 and "Files 2-2 of 2" in paged["message"], paged
        (folder / "latin1.md").write_text("# Cafe\n\nA cafe creme at the counter, in plain UTF-8 now.\n")
        await call(client, "sync_folder", folder=str(folder), collection="sync_honest")
        (synced,) = (await call(client, "get_collections", collection="sync_honest"))["synced_folders"]
        assert "failing" not in synced and "failing_total" not in synced, synced


async def test_a_file_that_failed_for_its_content_is_not_read_again_until_it_changes(connect, docs_dir: Path) -> None:
    """Issue 48, point 8: on 10,000 real files an unchanged re-sync took 1.8 s, most of it converting again the 8
    files that had failed (a PDF without text, frame-only HTML pages): each sync read them as if new. A file whose
    content decided its failure is now listed as failing with its reason and not read again while unchanged."""
    folder = docs_dir / "settled"
    write(folder, {"good.md": "# Good\n\nWillow is cut for baskets in late winter.\n", "empty.md": "",
                   "frames.html": "<html><frameset cols='50%,50%'><frame src='a.html'></frameset></html>"})  # fmt: skip
    (folder / "latin1.txt").write_bytes(("Caf\xe9 cr\xe8me " * 20).encode("latin-1"))
    async with connect() as client:
        first = await call(client, "sync_folder", folder=str(folder), collection="sync_settled")
        assert first["counts"]["added"] == 1 and first["counts"]["failed"] == 3, first
        assert not any("not read again" in f for f in first["failed"]), first
        again = await call(client, "sync_folder", folder=str(folder), collection="sync_settled")
        assert again["counts"]["failed"] == 3 and again["counts"]["unchanged"] == 1, again
        reasons = {f.split(": ", 1)[0]: f for f in again["failed"]}
        assert set(reasons) == {"empty.md", "frames.html", "latin1.txt"}, again
        assert all(f.endswith("(unchanged since it failed: not read again)") for f in again["failed"]), again
        assert "is not UTF-8 text" in reasons["latin1.txt"], again
        os.utime(folder / "latin1.txt", ns=(1_700_000_000_000_000_000, 1_700_000_000_000_000_000))
        touched = await call(client, "sync_folder", folder=str(folder), collection="sync_settled")
        assert [f for f in touched["failed"] if "not read again" not in f] == [
            "latin1.txt: latin1.txt is not UTF-8 text."
        ], touched  # read again once changed
        (folder / "empty.md").write_text("# Filled\n\nHazel rods are split for hurdles.\n")
        fixed = await call(client, "sync_folder", folder=str(folder), collection="sync_settled")
        assert fixed["counts"]["added"] == 1 and fixed["counts"]["failed"] == 2, fixed


async def test_a_link_to_a_file_is_that_file_s_document(connect, docs_dir: Path) -> None:
    """Issue 37: an in-folder symlink was indexed again under the link's path (every hit came back twice). Now one
    document per real file; a link into another folder synced into the collection is that folder's document."""
    here, there = docs_dir / "linked_here", docs_dir / "linked_there"
    write(here, {"real.md": "# Real\n\nThe bell ringers practise their changes on a Tuesday evening.\n"})
    write(there, {"other.md": "# Other\n\nThe verger locks the tower door once the ringers have gone.\n"})
    (here / "alias.md").symlink_to(here / "real.md")
    (here / "relative.md").symlink_to("real.md")
    (here / "theirs.md").symlink_to(there / "other.md")
    async with connect() as client:
        await call(client, "sync_folder", folder=str(there), collection="sync_links")
        done = await call(client, "sync_folder", folder=str(here), collection="sync_links")
        assert done["counts"] == {"added": 1, "replaced": 0, "unchanged": 0, "removed": 0, "failed": 0}, done
        listed = await call(client, "list_documents", collection="sync_links", limit=10)
        keys = sorted(d.get("key") or d["source"] for d in listed["documents"])
        assert len(listed["documents"]) == 2, listed
        found = await call(client, "search", query="bell ringers practise changes", collection="sync_links")
        assert len({hit["doc_id"] for hit in found["results"] if "ringers practise" in hit["text"]}) == 1, keys


async def test_ignore_files_are_honoured_and_a_changed_one_is_a_change(connect, docs_dir: Path) -> None:
    """Issue 37: a .gitignore in the folder was not read (node_modules/, build output, secrets indexed). Now
    .gitignore (nested, `!`, folder patterns) and .ingestionignore hide what git would; gitignore: false reads
    all; a changed ignore file is applied by the next sync."""
    folder = docs_dir / "ignored"
    write(folder, {
        ".gitignore": "build/\n*.log\n!keep.log\nsecret*.md\n",
        ".ingestionignore": "notes/private/\n",
        "a.md": "# A\n\nThe miller dresses the grindstones every spring.\n",
        "build/out.md": "# Out\n\nGenerated output that nobody wants indexed.\n",
        "keep.log": "Kept log: the mill wheel turned four thousand times on Monday.\n",
        "noise.log": "Noise log line that is ignored by the pattern for logs.\n",
        "secret1.md": "# Secret\n\nThe combination of the flour store padlock.\n",
        "sub/.gitignore": "draft.md\n",
        "sub/draft.md": "# Draft\n\nA draft that the nested ignore file hides.\n",
        "sub/ok.md": "# Ok\n\nThe sluice keeper checks the leat after each storm.\n",
        "notes/n.md": "# N\n\nMillers once paid the lord a share of every sack.\n",
        "notes/private/p.md": "# P\n\nA private note the ingestion ignore file hides.\n",
    })  # fmt: skip
    sync = {"folder": str(folder), "collection": "sync_ignored"}
    async with connect() as client:
        done = await call(client, "sync_folder", **sync)
        assert done["counts"]["added"] == 4, done  # a.md, keep.log, sub/ok.md, notes/n.md
        listed = await call(client, "list_documents", collection="sync_ignored", limit=20)
        assert sorted(Path(d["source"]).name for d in listed["documents"]) == ["a.md", "keep.log", "n.md", "ok.md"]
        (folder / ".gitignore").write_text("build/\n*.log\n!keep.log\nsecret*.md\nnotes/\n")
        again = await call(client, "sync_folder", **sync)
        assert again["counts"]["removed"] == 1 and again["removed"][0].endswith("notes/n.md"), again
        everything = await call(client, "sync_folder", **sync, gitignore=False)
        assert everything["counts"]["added"] == 6 and everything["counts"]["unchanged"] == 3, everything


async def test_text_like_files_are_read_and_the_rest_counted_as_skipped(connect, docs_dir: Path) -> None:
    """Issue 37: .rst and other text-like files were skipped without a word. Now they are read as text, and files
    that cannot be ingested are counted as skipped, by extension, in the answer."""
    import gzip

    folder = docs_dir / "texty"
    write(folder, {
        "guide.rst": "Guide\n=====\n\nThe cooper bends oak staves over a brazier to raise a cask.\n",
        "manual.adoc": "= Manual\n\nThe wheelwright shrinks the iron tyre on while it is red hot.\n",
        "plan.org": "* Plan\nThe blacksmith draws out the bar on the horn of the anvil.\n",
        "paper.tex": "\\section{Paper}\nThe farrier fits the shoe hot so that it beds onto the hoof.\n",
        "settings.yaml": "# the chandler's settings\nwick: braided cotton\nwax: beeswax and tallow\n",
        "README": "The saddler stitches with two needles and a waxed linen thread.\n",
        "README.Debian": "Notes for this package: the tanner soaks hides in oak bark liquor.\n",
    })  # fmt: skip
    (folder / "changelog.gz").write_bytes(gzip.compress(b"compressed changelog"))
    (folder / "blob").write_bytes(bytes(range(256)) * 4)
    async with connect() as client:
        done = await call(client, "sync_folder", folder=str(folder), collection="sync_texty")
        assert done["counts"]["added"] == 7 and done["counts"]["failed"] == 0, done
        assert done["counts"]["skipped"] == 2 and "(1 .gz, 1 no extension)" in done["message"], done["message"]
        found = await call(client, "search", query="cooper bends oak staves", collection="sync_texty")
        assert any("staves" in hit["text"] for hit in found["results"]), found


async def test_a_folder_that_vanishes_mid_sync_is_recorded_and_the_next_sync_goes_on(
    app_state: AppState, docs_dir: Path, count_writes: Callable[[Any], list[str]]
) -> None:  # fmt: skip
    """Issue 37: a folder deleted during a sync left documents and no folder record (the job failed "Not a
    folder"). Now the sync stops pruning, fails with what happened, the record says so, and once the folder is
    back the next sync writes only what is missing: nothing doubled, nothing lost."""
    import shutil

    from ingestion_mcp.errors import ToolFailure
    from ingestion_mcp.profiles.ingestion.sync_tool import sync_folder_job

    folder = docs_dir / "vanishing"
    files = {f"v{i:02}.md": f"# V{i}\n\nThe lengthsman clears the weed from reach number {i}.\n" for i in range(24)}
    write(folder, files)
    writes = count_writes(app_state.backend)
    gone = False

    async def progress(fraction: float, step: str) -> None:
        nonlocal gone
        if step.endswith(": storing") and not gone:  # the first batch is being written: the folder goes
            shutil.rmtree(folder)
            gone = True

    params = {"folder": str(folder), "collection": "sync_vanish"}
    with pytest.raises(ToolFailure) as failed:
        await sync_folder_job(app_state, params, progress)
    assert "disappeared during the sync" in failed.value.message, failed.value.message
    record = await app_state.folders.get("sync_vanish", str(folder.resolve()))
    assert record is not None and record.last_sync is not None, record
    written = record.last_sync.counts["added"]
    assert record.last_sync.error and "disappeared" in record.last_sync.error and written == len(writes) > 0
    library = Library(app_state.backend, app_state.settings)
    assert (await library.documents("sync_vanish", limit=50)).total == written  # whole documents only

    write(folder, files)  # the folder is back (new mtimes, same content)
    again = await sync_folder_job(app_state, params, progress)
    assert again["counts"] == {"added": 24 - written, "replaced": 0, "unchanged": written, "removed": 0, "failed": 0}
    assert sorted(writes) == sorted(set(writes)) and len(writes) == 24  # each file written once
    assert (await library.documents("sync_vanish", limit=50)).total == 24


async def test_a_renamed_folder_keeps_its_documents_until_asked_to_remove_them(connect, docs_dir: Path) -> None:
    """A folder renamed (or deleted) after it was synced: its documents stay, get_collections and a sync of the
    old path say so and how many, max_removals covering them removes them (and forgets the folder)."""
    folder, moved = docs_dir / "renamed_before", docs_dir / "renamed_after"
    write(folder, {"a.md": "# A\n\nThe signalman pulls the lever for the down line at noon.\n",
                   "b.md": "# B\n\nThe porter loads the milk churns onto the guard's van.\n"})  # fmt: skip
    async with connect() as client:
        await call(client, "sync_folder", folder=str(folder), collection="sync_renamed")
        folder.rename(moved)
        (shown,) = (await call(client, "get_collections", collection="sync_renamed"))["synced_folders"]
        assert "not there" in shown["error"], shown
        old = await call(client, "sync_folder", folder=str(folder), collection="sync_renamed")
        assert old["success"] is False and "The 2 documents synced from it are kept" in old["error"], old
        assert "max_removals=2" in old["suggestion"] and await documents_of(client, "sync_renamed") == 2
        plan = await call(client, "sync_folder", folder=str(folder), collection="sync_renamed", max_removals=2,
                          dry_run=True)  # fmt: skip
        assert (
            plan["message"].startswith("Would remove the 2 documents")
            and await documents_of(client, "sync_renamed") == 2
        )
        gone = await call(client, "sync_folder", folder=str(folder), collection="sync_renamed", max_removals=2)
        assert gone["counts"] == {"removed": 2} and await documents_of(client, "sync_renamed") == 0, gone
        new = await call(client, "sync_folder", folder=str(moved), collection="sync_renamed")
        assert new["counts"]["added"] == 2
        (shown,) = (await call(client, "get_collections", collection="sync_renamed"))["synced_folders"]
        assert shown["folder"] == str(moved.resolve()) and "error" not in shown, shown


async def test_ingestion_index_keeps_notes_past_the_bound_unless_told(app_state: AppState, docs_dir: Path) -> None:
    """`ingestion-index update` on the wrong vault, or after most notes moved away, drops none of the index
    (it dropped them all); --max-removals N drops them."""
    from ingestion_mcp.cli.index import VaultIndexer
    from ingestion_mcp.cli.index_command import parse_args

    vault = docs_dir / "vault_bound"
    write(vault, {f"n{i:02}.md": f"# N{i}\n\nThe carter greases the axle of wagon {i}.\n" for i in range(12)})
    settings = app_state.settings.model_copy(update={"obsidian_collection": "sync_vault_bound"})
    indexer = VaultIndexer(app_state.backend, settings)
    assert (await indexer.sync(vault, only_changed=True, on_progress=lambda n, lines: None)).indexed == 12
    for i in range(11):
        (vault / f"n{i:02}.md").unlink()
    kept = await indexer.sync(vault, only_changed=True, on_progress=lambda n, lines: None)
    assert kept.removed == 0 and kept.held == 11 and kept.unchanged == 1, kept
    args = parse_args(["update", "--max-removals", "11"])
    dropped = await indexer.sync(vault, only_changed=True, on_progress=lambda n, lines: None,
                                 max_removals=args.max_removals)  # fmt: skip
    assert dropped.removed == 11 and dropped.held == 0, dropped


async def test_removals_are_bounded_over_ten_minutes_and_in_small_folders(connect, docs_dir: Path, prose) -> None:
    """Issue 48: deleting 60% of a folder in waves removed 40% without confirmation (the bound counted one sync);
    a folder of 10 or fewer documents was emptied by an include that matched nothing ("10 removed"), and nothing
    said the include matched no file."""
    folder, small = docs_dir / "waves", docs_dir / "small"
    texts = prose("GPL-3", 40)
    write(folder, {f"w{i:02}.md": texts[i] for i in range(30)})
    write(small, {f"s{i}.md": texts[30 + i] for i in range(6)})
    async with connect() as client:
        assert (await call(client, "sync_folder", folder=str(folder), collection="waves"))["counts"]["added"] == 30
        for i in range(7):  # a first wave: 7 of 30, under the bound
            (folder / f"w{i:02}.md").unlink()
        first = await call(client, "sync_folder", folder=str(folder), collection="waves")
        assert first["counts"]["removed"] == 7, first
        for i in range(7, 14):  # a second wave, seconds later: 14 of 30 in ten minutes
            (folder / f"w{i:02}.md").unlink()
        second = await call(client, "sync_folder", folder=str(folder), collection="waves")
        assert second["counts"]["removed"] == 0 and second["counts"]["held"] == 7, second
        assert "counting the 7 removed in the last 10 minutes" in second["message"], second["message"]
        assert await documents_of(client, "waves") == 23

        assert (await call(client, "sync_folder", folder=str(small), collection="small"))["counts"]["added"] == 6
        nothing = await call(client, "sync_folder", folder=str(small), collection="small", include=["*.mdx"])
        assert nothing["counts"]["removed"] == 0 and nothing["counts"]["held"] == 6, nothing
        assert "include '*.mdx' matched no file" in nothing["message"], nothing["message"]
        for i in range(4):  # 4 of 6: more than half of a small folder
            (small / f"s{i}.md").unlink()
        half = await call(client, "sync_folder", folder=str(small), collection="small")
        assert half["counts"]["removed"] == 0 and "more than half of the folder's 6" in half["message"], half
        confirmed = await call(client, "sync_folder", folder=str(small), collection="small", max_removals=4)
        assert confirmed["counts"]["removed"] == 4 and await documents_of(client, "small") == 2, confirmed


def unlistable(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`folder` cannot be listed: its mode says so, and as root (who lists anything) os.scandir is made to refuse it
    too, the one fault root cannot produce for real."""
    folder.chmod(0)
    if os.geteuid() == 0:
        real = os.scandir

        def refusing(path: Any = ".") -> Any:
            if Path(path) == folder:
                raise PermissionError(13, "Permission denied", str(path))
            return real(path)

        monkeypatch.setattr(os, "scandir", refusing)


async def test_a_document_whose_file_now_fails_is_marked_stale_everywhere(
    connect, docs_dir: Path, prose, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 48: an emptied, binary or unreadable file was listed as failed, but its old version stayed searchable
    and nothing said so; an unreadable sub-folder's documents were kept but uncounted."""
    folder = docs_dir / "staling"
    texts = prose("LGPL-2.1", 6)
    write(folder, {"empty.md": texts[0], "latin.txt": texts[1], "fine.md": texts[2], "sub/a.md": texts[3],
                   "sub/b.md": texts[4]})  # fmt: skip
    sync = {"folder": str(folder), "collection": "staling"}
    async with connect() as client:
        assert (await call(client, "sync_folder", **sync))["counts"]["added"] == 5
        (folder / "empty.md").write_text("")
        (folder / "latin.txt").write_bytes("Biblioth\xe8que: caf\xe9 cr\xe8me".encode("latin-1"))
        unlistable(folder / "sub", monkeypatch)
        try:
            stale = await call(client, "sync_folder", **sync)
        finally:
            (folder / "sub").chmod(0o755)
            monkeypatch.undo()
        assert stale["counts"]["failed"] == 3 and stale["counts"]["stale"] == 4, stale
        assert "2 of them lie in folders that cannot be listed (kept, unreadable: sub/)" in stale["message"], stale
        found = await call(client, "search", query=texts[0][:100], collection="staling")
        (hit,) = [h for h in found["results"] if h["source"] == "empty.md"][:1]
        assert hit["stale"].startswith("File is empty: empty.md. (stale since "), hit
        assert "come from stale documents" in found["message"], found["message"]
        listed = await call(client, "list_documents", collection="staling")
        marks = {d["source"]: d.get("stale") for d in listed["documents"]}
        assert marks["fine.md"] is None and all(marks[s] for s in ("empty.md", "latin.txt", "sub/a.md", "sub/b.md"))
        shown = await call(client, "get_collections", collection="staling")
        (record,) = shown["synced_folders"]
        assert any(f.startswith("empty.md: File is empty") and "[stale since" in f for f in record["failing"]), record
        assert "4 stale documents" in shown["message"], shown["message"]
        (folder / "empty.md").write_text(texts[5])  # it reads again: no longer stale
        (folder / "latin.txt").write_text(texts[1])
        healed = await call(client, "sync_folder", **sync)
        assert "stale" not in healed["counts"], healed
        listed = await call(client, "list_documents", collection="staling")
        assert not any(d.get("stale") for d in listed["documents"]), listed


async def test_a_sub_folder_synced_on_its_own_owns_its_documents(connect, docs_dir: Path, prose) -> None:
    """Issue 48: the parent (exclude: ["child/"]) and the child, both synced into one collection, removed and re-added
    the child's documents on every sync."""
    parent = docs_dir / "parent"
    texts = prose("MPL-2.0", 6)
    write(parent, {"p1.md": texts[0], "p2.md": texts[1], "child/c1.md": texts[2], "child/c2.md": texts[3],
                   "child/c3.md": texts[4]})  # fmt: skip
    async with connect() as client:
        first = await call(client, "sync_folder", folder=str(parent), collection="owned", exclude=["child/"])
        assert first["counts"]["added"] == 2, first
        child = await call(client, "sync_folder", folder=str(parent / "child"), collection="owned")
        assert child["counts"]["added"] == 3, child
        for _ in range(2):
            again = await call(client, "sync_folder", folder=str(parent), collection="owned", exclude=["child/"])
            assert again["counts"]["removed"] == 0 and "held" not in again["counts"], again
            assert "own their documents and were left to their syncs: child" in again["message"], again["message"]
            assert (await call(client, "sync_folder", folder=str(parent / "child"), collection="owned"))["counts"][
                "unchanged"] == 3  # fmt: skip
        whole = await call(client, "sync_folder", folder=str(parent), collection="owned")  # without the exclude
        assert whole["counts"]["added"] == 0 and whole["counts"]["unchanged"] == 2, whole
        assert await documents_of(client, "owned") == 5


async def test_slips_in_names_and_globs_are_refused_with_what_to_use(connect, docs_dir: Path, prose) -> None:
    """Issue 48: "Docs" next to an existing "docs" made a second collection (286 files re-ingested); regex and brace
    patterns were taken as literal globs that matched nothing."""
    folder = docs_dir / "slipped"
    write(folder, {"a.md": prose("Apache-2.0", 1)[0]})
    async with connect() as client:
        assert (await call(client, "sync_folder", folder=str(folder), collection="slip-docs"))["counts"]["added"] == 1
        for twin in ("Slip-Docs", "slip_docs", "SLIPDOCS"):
            refused = await call(client, "sync_folder", folder=str(folder), collection=twin)
            assert refused["success"] is False and "there is 'slip-docs'" in refused["error"], refused
            assert f"create_collection(name='{twin}')" in refused["suggestion"], refused
        made = await call(client, "create_collection", name="Slip-Docs")  # a new one on purpose
        assert made["success"] is True, made
        assert (await call(client, "sync_folder", folder=str(folder), collection="Slip-Docs"))["counts"]["added"] == 1
        for pattern, words in (("^.*md$", "regular expression; globs use '*' for any characters and '?' for one: "
                                "'*md'"), ("*.{md,txt}", "brace expansion, which globs here do not expand; pass one "
                                "glob each: '*.md', '*.txt'")):  # fmt: skip
            refused = await call(client, "sync_folder", folder=str(folder), collection="slip-docs", include=[pattern])
            assert refused["success"] is False and words in refused["error"], refused
