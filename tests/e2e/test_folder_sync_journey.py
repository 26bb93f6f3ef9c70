"""Keeping folders in step, as an agent does it: a real MCP client launches the server over stdio.

Two folders in two collections (mixed Markdown, PDF, DOCX, text), one synced by hand and one watched, by a server
started from / that reads only the roots its client declares (issue 48); the server is stopped and started again
(the watch is a stored record: what changed while it was down is caught up); a sync is cancelled mid-way and leaves
nothing half-done.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import anyio
import pytest
from journeys import declaring, from_the_root, server_params
from mcp import Client
from service_stack import call

from scripts.system_files import DOC, doc_folders
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
    # Started from / with only HOME set, as a desktop client starts it: the client's roots are the allowed folders and
    # the data lives in the user's data folder (issue 48: /data, a traceback; or the whole file system allowed).
    server = from_the_root(server_params(docs, tmp_path / "data", INGESTION_MCP_SYNC_WAIT_S="20"), tmp_path / "home")
    roots = declaring(docs)

    async with Client(server, read_timeout_seconds=300, mode="legacy", list_roots_callback=roots) as client:
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
    async with Client(server, read_timeout_seconds=300, mode="legacy", list_roots_callback=roots) as client:
        await until_found(client, "trees", "silver birch colonising heathland", "colonise")
        outside = await call(client, "ingest_document", file_path="/usr/share/common-licenses/GPL-3")
        assert outside["success"] is False and "not inside the allowed folders" in outside["error"], outside
        assert (tmp_path / "home" / ".local/share/ingestion-mcp").is_dir()
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
        (record,) = (await call(client, "get_collections", collection="birds"))["synced_folders"]
        assert record["error"].startswith("Cancelled before its end") and record["error_at"], record
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


# Small packages' docs with README, Markdown, reStructuredText, HTML, plain text, compressed files and links.
PACKAGES = ("base-passwd", "conmon", "procps", "python3-setuptools", "python3-yaml", "python3-cups", "zstd")


async def documents(client: Client, collection: str) -> int:
    return (await call(client, "get_collections", collection=collection))["document_count"]


async def folder_state(client: Client, collection: str) -> dict:
    (folder,) = (await call(client, "get_collections", collection=collection))["synced_folders"]
    return folder


async def test_a_real_folder_survives_an_agent_s_slips(tmp_path: Path) -> None:
    """Issue 37 on a folder nobody here wrote (parts of /usr/share/doc): a dry run that says what the sync does,
    progress from the first file, one document per real file, text-like files read and the rest counted; then
    the slips of an agent (bad globs, a case slip, narrowed filters, recursive: false, a folder typo), nested
    ignore files, and a folder renamed under a watch. Documents are counted before and after each."""
    present = [folder.name for folder in doc_folders(PACKAGES, at_least=4)]
    docs = tmp_path / "docs"
    usrdoc = docs / "usrdoc"
    for name in present:
        shutil.copytree(DOC / name, usrdoc / name, symlinks=True)
    if (usrdoc / "conmon" / "README.md").is_file():
        (usrdoc / "conmon" / "README-again.md").symlink_to("README.md")  # a second name for one file
    server = server_params(docs, tmp_path / "data", INGESTION_MCP_SYNC_WAIT_S="50", INGESTION_MCP_WATCH_STEP_MS="100",
                           INGESTION_MCP_WATCH_DEBOUNCE_MS="500", INGESTION_MCP_WATCH_REFRESH_S="1")  # fmt: skip
    where = {"folder": str(usrdoc), "collection": "usrdoc"}
    async with Client(server, read_timeout_seconds=300) as client:
        plan = await call(client, "sync_folder", **where, dry_run=True)
        messages: list[str] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            messages.append(message or "")

        response = await client.call_tool("sync_folder", where, progress_callback=on_progress)
        first = response.structured_content or {}
        if first.get("job_id"):
            first = await synced(client, usrdoc, "usrdoc")
        counts = first["counts"]
        print(f"\n/usr/share/doc copy ({', '.join(present)}): dry run {plan['counts']}, sync {counts}")
        assert first["success"] is True and counts["added"] + counts["failed"] == plan["counts"]["added"], first
        assert counts["skipped"] == plan["counts"]["skipped"] > 0 and ".gz" in first["message"], first
        assert messages[0].startswith("file 0/") and any(m.endswith(": reading") for m in messages), messages[:5]
        total = await documents(client, "usrdoc")
        assert total == counts["added"] >= 15, total
        listed = await call(client, "list_documents", collection="usrdoc", limit=200)
        sources = {d["source"] for d in listed["documents"]}
        assert "conmon/README-again.md" not in sources and len(sources) == total, sorted(sources)
        texty = {"python3-setuptools/index.rst", "base-passwd/README", "procps/README.Debian", "zstd/README.md"}
        assert texty & sources == {t for t in texty if (usrdoc / t).is_file()}, sorted(sources)

        for slip, problem in (({"include": ["[unclosed"]}, "no ']' closes"), ({"exclude": ["zstd\\*.md"]}, "'/'"),
                              ({"include": ["*.md", " "]}, "empty")):  # fmt: skip
            refused = await call(client, "sync_folder", **where, **slip)
            assert refused["success"] is False and problem in refused["error"], (slip, refused)
            assert await documents(client, "usrdoc") == total, slip
        typo = await call(client, "sync_folder", folder=str(usrdoc) + "-typo", collection="usrdoc")
        assert typo["success"] is False and "Not a folder" in typo["error"], typo
        for slip in ({"include": ["*.MD"]}, {"include": ["*.html"]}, {"include": ["zstd/*"]}, {"recursive": False},
                     {"exclude": ["*"]}, {"include": ["*.MD"], "dry_run": True}):  # fmt: skip
            answer = await synced(client, usrdoc, "usrdoc", **slip)
            assert answer["counts"]["removed"] == 0, (slip, answer)
            if answer["counts"].get("held"):
                said = answer.get("message") or answer["note"]  # (the job's result, when it outlived the wait)
                assert f"max_removals={answer['counts']['held']}" in said, said
            assert await documents(client, "usrdoc") == total, (slip, answer)
        assert (await synced(client, usrdoc, "usrdoc"))["counts"]["unchanged"] == total

        # Nested ignore files: the next sync removes what they now hide (few: inside the bound).
        hidden = [p for p in (usrdoc / "zstd").glob("*.md") if p.name != "README.md"]
        hidden += list((usrdoc / "base-passwd").glob("*.html"))
        (usrdoc / "zstd" / ".gitignore").write_text("*.md\n!README.md\n")
        (usrdoc / ".ingestionignore").write_text("base-passwd/*.html\n")
        ignored = await synced(client, usrdoc, "usrdoc")
        assert ignored["counts"]["removed"] == len(hidden) <= 10, (ignored, hidden)
        total -= len(hidden)
        assert await documents(client, "usrdoc") == total

        # A folder renamed under a watch: the watch says so, the documents stay; renamed back, it resumes.
        assert (await synced(client, usrdoc, "usrdoc", watch=True))["counts"]["unchanged"] == total
        moved = docs / "usrdoc-renamed"
        usrdoc.rename(moved)
        with anyio.fail_after(30):  # the watch's own error, with since when
            while not (state := await folder_state(client, "usrdoc")).get("error_at"):
                await anyio.sleep(0.5)
        assert "not there" in state["error"] and state["watched"] is True, state
        assert await documents(client, "usrdoc") == total
        moved.rename(usrdoc)
        (usrdoc / "zstd" / "NOTES.txt").write_text("Notes: the quokka compression level suits nightly backups.\n")
        seconds = await until_found(client, "usrdoc", "quokka compression level backups", "quokka")
        print(f"renamed back: the new note searchable {seconds:.1f} s later, no restart")
        assert await documents(client, "usrdoc") == total + 1
        assert "error" not in await folder_state(client, "usrdoc")
        await call(client, "sync_folder", **where, watch=False)
