"""Keeping folders in step, as an agent does it: a real MCP client launches the server over stdio.

Two folders in two collections (mixed Markdown, PDF, DOCX, text), one synced by hand and one watched; the
server is stopped and started again (the watch is a stored record: what changed while it was down is caught
up); a sync is cancelled mid-way and leaves nothing half-done.
"""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import pytest
from journeys import server_params
from mcp import Client
from service_stack import call

from tests.fixtures import make_fixtures

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]


async def synced(client: Client, folder: Path, collection: str, **options: object) -> dict:
    """sync_folder, following its job when it outlives the tool's wait."""
    out = await call(client, "sync_folder", folder=str(folder), collection=collection, **options)
    while out.get("job_id"):
        job = (await call(client, "get_job_status", job_id=out["job_id"]))["job"]
        if job["status"] != "running":
            assert job["status"] == "completed", job
            return {**job["result"], "success": True}
        await anyio.sleep(0.5)
    return out


async def texts(client: Client, collection: str, query: str) -> str:
    found = await call(client, "search", query=query, collection=collection, top_k=10)
    return " ".join(hit["text"] for hit in found.get("results") or [])


async def until_found(client: Client, collection: str, query: str, word: str, present: bool = True) -> float:
    began = time.monotonic()
    with anyio.fail_after(120):
        while (word in await texts(client, collection, query)) != present:
            await anyio.sleep(0.3)
    return time.monotonic() - began


def make_pdf(path: Path, sentence: str) -> None:
    make_fixtures.make_pdf(path, [("Field notes", [sentence])], title=None, plain=True)


def make_docx(path: Path, sentence: str) -> None:
    make_fixtures.make_docx(path, "Survey", [(None, [sentence])])


async def test_two_folders_kept_in_step_by_hand_and_by_watching(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    birds, trees = docs / "birds", docs / "trees"
    birds.mkdir(parents=True)
    trees.mkdir()
    (birds / "swift.md").write_text("# Swift\n\nCommon swifts sleep on the wing during their migration to Africa.\n")
    (birds / "wren.txt").write_text("The wren sings loudly from the bramble hedge in the early morning light.\n")
    make_pdf(birds / "owl.pdf", "A tawny owl called from the churchyard yew at midnight during the survey.")
    make_docx(birds / "stork.docx", "White storks nest on the chimney of the old brewery every April.")
    (trees / "oak.md").write_text("# Oak\n\nThe pedunculate oak supports more insect species than any other tree.\n")
    (trees / "yew.md").write_text("# Yew\n\nAncient yews in churchyards can be more than a thousand years old.\n")
    server = server_params(docs, tmp_path / "data", INGESTION_MCP_SYNC_WAIT_S="20")

    async with Client(server, read_timeout_seconds=300) as client:
        first = await synced(client, birds, "birds")
        assert first["counts"] == {"added": 4, "replaced": 0, "unchanged": 0, "removed": 0, "failed": 0}, first
        watched = await synced(client, trees, "trees", watch=True)
        assert watched["counts"]["added"] == 2 and watched.get("watched") in (True, None), watched
        assert "migration to Africa" in await texts(client, "birds", "swifts sleeping while flying")
        assert "thousand years" not in await texts(client, "birds", "ancient yew trees")  # two collections apart

        # By hand: edit, delete, add, then sync again.
        (birds / "swift.md").write_text("# Swift\n\nSwifts screamed over the rooftops in a tight evening party.\n")
        (birds / "wren.txt").unlink()
        make_pdf(birds / "heron.pdf", "A grey heron speared a frog in the flooded water meadow at dawn.")
        again = await synced(client, birds, "birds")
        assert again["counts"] == {"added": 1, "replaced": 1, "unchanged": 2, "removed": 1, "failed": 0}, again
        assert "rooftops" in await texts(client, "birds", "swifts screaming over rooftops")
        assert "bramble" not in await texts(client, "birds", "wren singing from the bramble hedge")
        assert "frog" in await texts(client, "birds", "heron catching a frog")
        listed = await call(client, "list_documents", collection="birds", limit=50)
        names = sorted(Path(d["source"]).name for d in listed["documents"])
        assert names == ["heron.pdf", "owl.pdf", "stork.docx", "swift.md"], names  # nothing doubled

        # Watched: edit and delete, no call at all.
        (trees / "oak.md").write_text("# Oak\n\nA veteran oak was hollowed by fungus yet still leafs each spring.\n")
        seconds = await until_found(client, "trees", "hollow veteran oak still in leaf", "hollowed")
        print(f"watched edit searchable after {seconds:.1f} s")
        (trees / "yew.md").unlink()
        await until_found(client, "trees", "ancient yews in churchyards", "thousand years", present=False)
        shown = await call(client, "get_collections", collection="trees")
        (folder,) = shown["synced_folders"]
        assert folder["watched"] is True and folder["last_synced"], folder

    # Stopped: a change while nobody watches; started again: the stored watch catches it up.
    (trees / "birch.md").write_text("# Birch\n\nSilver birch is the first tree to colonise cleared heathland.\n")
    async with Client(server, read_timeout_seconds=300) as client:
        await until_found(client, "trees", "silver birch colonising heathland", "colonise")
        listed = await call(client, "list_documents", collection="trees", limit=50)
        assert sorted(Path(d["source"]).name for d in listed["documents"]) == ["birch.md", "oak.md"]
        summary = await call(client, "get_collections")
        last = {c["name"]: c.get("last_synced") for c in summary["collections"]}
        assert last["birds"] and last["trees"], last

        # A sync cancelled by its caller (mid-way, at its first progress) prunes nothing and leaves every document
        # whole; the next one completes.
        for number in range(NOTES):
            (birds / f"note{number:03}.md").write_text(f"# Note {number}\n\nRing ouzel sighting number {number}.\n")
        (birds / "owl.pdf").unlink()
        await cancel_at_first_progress(client, {"folder": str(birds), "collection": "birds"})
        listed = await call(client, "list_documents", collection="birds", limit=200)
        kept = {Path(d["source"]).name for d in listed["documents"]}
        assert "owl.pdf" in kept and len(kept) < NOTES + 4, "a cancelled sync pruned or ran to its end"
        done = await synced(client, birds, "birds")
        assert done["counts"]["removed"] == 1 and done["counts"]["failed"] == 0, done
        listed = await call(client, "list_documents", collection="birds", limit=200)
        assert len(listed["documents"]) == NOTES + 3, len(listed["documents"])


NOTES = 64


async def cancel_at_first_progress(client: Client, arguments: dict[str, object]) -> None:
    """What a user's Ctrl-C does mid-sync: the call is cancelled as soon as it reports "file N/M"."""
    progressed = anyio.Event()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        if message and message.startswith("file "):
            progressed.set()

    async def sync() -> None:
        await client.call_tool("sync_folder", arguments, progress_callback=on_progress)

    with anyio.fail_after(300):
        async with anyio.create_task_group() as group:
            group.start_soon(sync)
            await progressed.wait()
            group.cancel_scope.cancel()
    await anyio.sleep(1)  # the cancel reaches the job
