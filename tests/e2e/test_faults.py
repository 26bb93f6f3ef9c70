"""Faults injected for real: services stopped and the gateway SIGKILLed mid-write, through the MCP tools.

A replaced document is all-old or all-new at every moment, a failed ingest writes nothing, and a
gateway restart leaves no half-written version (the start-up sweep removes its rows).
"""

from __future__ import annotations

import asyncio
import signal

import pytest
from service_stack import ServiceStack, call, collection_state, log_count, mcp_client, stage_count, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(300)]
OLD, NEW = "vorpalix", "quendrith"
SWEPT = "uncommitted-version sweep done"
WORDS = ["ledger", "harbour", "turbine", "orchard", "glacier", "beacon", "canyon", "meadow", "quarry", "summit"]


def make_text(marker: str, sentences: int) -> str:
    """Every sentence carries ``marker``, so every chunk of the text does too."""
    lines = [
        f"The {marker} survey entry {i} records that the {WORDS[i % 10]} near the {WORDS[(i * 3 + 1) % 10]} "
        f"was inspected by crew {i % 7} before the {WORDS[(i * 7 + 2) % 10]} closed."
        for i in range(sentences)
    ]
    return "\n\n".join(" ".join(lines[i : i + 4]) for i in range(0, len(lines), 4))


def versions_seen(found: dict) -> set[str]:
    return {marker for hit in found["results"] for marker in (OLD, NEW) if marker in hit["text"]}


async def document_text(client, doc_id: str, collection: str) -> str:
    return (await call(client, "get_document", doc_id=doc_id, collection=collection))["content"]


def start_replace(client, collection: str, sentences: int) -> asyncio.Task:
    """Replace the seeded document with a large new version (~1 chunk per 2.5 sentences), in the background."""
    text = make_text(NEW, sentences)
    return asyncio.create_task(
        call(client, "ingest_text", text=text, name="report", collection=collection, chunking="dense")
    )


async def seed(client, collection: str) -> dict:
    made = await call(
        client, "ingest_text", text=make_text(OLD, 12), name="report", collection=collection, response_format="detailed"
    )
    assert made["status"] == "indexed", made
    return made


@pytest.mark.parametrize("down", ["docling", "chunker"])
async def test_ingest_with_a_service_down_fails_instructively_and_writes_nothing(
    stack: ServiceStack, collection: str, down: str
) -> None:
    # HTML, so the ingest needs docling (Markdown and text files are read without it).
    note = stack.workdir / f"{collection}.html"
    note.write_text(f"<html><body><h1>Notes</h1><p>{make_text(NEW, 8)}</p></body></html>")
    service = stack.docling if down == "docling" else stack.chunker
    async with mcp_client(stack, attempts=2) as client:
        await seed(client, collection)
        before = collection_state(stack, collection)
        await asyncio.to_thread(service.stop, signal.SIGTERM)
        try:
            failed = await call(client, "ingest_document", file_path=str(note), collection=collection)
        finally:
            await asyncio.to_thread(stack.ensure_running)
        assert failed["is_error"] and failed["success"] is False
        assert f"{down} service is unreachable" in failed["error"], failed
        assert "running" in failed["suggestion"] and "Traceback" not in str(failed)
        assert collection_state(stack, collection) == before
        assert versions_seen(await call(client, "search", query=NEW, collection=collection, mode="keyword")) == set()


async def test_gateway_killed_while_embedding_a_replacement_keeps_the_old_version(
    stack: ServiceStack, collection: str
) -> None:
    async with mcp_client(stack, attempts=2) as client:
        doc_id = (await seed(client, collection))["doc_id"]
        old_text = await document_text(client, doc_id, collection)
        before = collection_state(stack, collection)
        headers, sweeps = stack.headers(), log_count(stack.gateway, SWEPT)
        stored = stage_count(stack.gateway, "storing", headers)
        chunked = log_count(stack.chunker, "POST /v1/chunk")
        replace = start_replace(client, collection, 600)
        await asyncio.to_thread(wait_for, lambda: log_count(stack.chunker, "POST /v1/chunk") > chunked, 60)
        await asyncio.sleep(0.5)  # the gateway is embedding ~150 chunks, 32 a call (seconds of work)
        assert stage_count(stack.gateway, "storing", headers) == stored, "the upsert finished before the kill"
        await asyncio.to_thread(stack.gateway.stop, signal.SIGKILL)
        failed = await replace
        assert failed["is_error"] and "vector gateway service is unreachable" in failed["error"], failed

        await asyncio.to_thread(stack.ensure_running)
        await asyncio.to_thread(wait_for, lambda: log_count(stack.gateway, SWEPT) > sweeps, 60)
        assert collection_state(stack, collection) == before
        assert await document_text(client, doc_id, collection) == old_text
        found = await call(client, "search", query=f"{OLD} {NEW} survey", collection=collection, mode="hybrid")
        assert versions_seen(found) == {OLD}


async def test_gateway_killed_while_storing_then_restarted_the_retry_lands_whole(
    stack: ServiceStack, collection: str
) -> None:
    async with mcp_client(stack, attempts=12) as client:
        doc_id = (await seed(client, collection))["doc_id"]
        before = collection_state(stack, collection)
        headers, sweeps = stack.headers(), log_count(stack.gateway, SWEPT)
        embedded = stage_count(stack.gateway, "embedding", headers)
        replace = start_replace(client, collection, 600)
        # Embedding under way (or the rows being committed): kill now, come back at once.
        embedding_done = lambda: stage_count(stack.gateway, "embedding", headers) > embedded  # noqa: E731
        await asyncio.to_thread(wait_for, embedding_done, 120, 0.01)
        await asyncio.to_thread(stack.gateway.stop, signal.SIGKILL)
        await asyncio.to_thread(stack.ensure_running)
        done = await replace  # the client's retries reach the restarted gateway
        assert not done["is_error"] and done["status"] in ("replaced", "skipped"), done

        await asyncio.to_thread(wait_for, lambda: log_count(stack.gateway, SWEPT) > sweeps, 60)
        after = collection_state(stack, collection)
        assert after["documents"] == before["documents"] == 1
        assert after["chunk_rows"] == after["sources"]["report"] == done["chunks_created"] > 100
        content = await document_text(client, doc_id, collection)
        assert NEW in content and OLD not in content
        # min_score 0: what is stored counts here, however it scores (no passage holds both made-up words)
        found = await call(client, "search", query=f"{OLD} {NEW}", collection=collection, min_score=0)
        assert versions_seen(found) == {NEW}


async def test_a_document_being_replaced_is_all_old_then_all_new(stack: ServiceStack, collection: str) -> None:
    async with mcp_client(stack) as client:
        await seed(client, collection)
        replace = start_replace(client, collection, 400)
        seen: list[set[str]] = []
        for _ in range(400):  # bounded: the replace takes a few seconds
            if replace.done():
                break
            found = await call(client, "search", query=f"{OLD} {NEW} survey", collection=collection, mode="keyword")
            assert not found["is_error"], found
            seen.append(versions_seen(found))
            await asyncio.sleep(0.05)
        assert (await replace)["status"] == "replaced"
        found = await call(client, "search", query=f"{OLD} {NEW}", collection=collection, min_score=0)  # all stored
        seen.append(versions_seen(found))
        assert all(len(versions) == 1 for versions in seen), seen  # never a mix, never nothing
        assert seen[0] == {OLD} and seen[-1] == {NEW}
        first_new = seen.index({NEW})
        assert all(versions == {NEW} for versions in seen[first_new:]), "the old version came back"
