"""Concurrent ingests and searches, and gateway restarts, through the real service processes."""

from __future__ import annotations

import asyncio
import signal

import pytest
from service_stack import ServiceStack, call, collection_state, mcp_client

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(300)]
TOPICS = ["saffron", "obsidian", "tamarind", "zeppelin", "marmoset", "quasar"]


def text_about(topic: str, variant: int = 0) -> str:
    return (
        f"# {topic.title()} notes\n\nThe {topic} archive, revision {variant}, lists every {topic} shipment "
        f"received at the depot. Each {topic} crate is weighed, labelled and stored on shelf {variant + 3}."
    )


async def test_parallel_ingests_of_the_same_source_end_with_one_whole_document(
    stack: ServiceStack, collection: str
) -> None:
    texts = [text_about("saffron", v) for v in range(4)]
    async with mcp_client(stack, max_concurrent_jobs=8) as client:
        results = await asyncio.gather(
            *(call(client, "ingest_text", text=t, name="shared", collection=collection) for t in texts)
        )
        assert all(not r["is_error"] for r in results), results
        assert sorted(r["status"] for r in results).count("indexed") == 1
        state = collection_state(stack, collection)
        assert state["documents"] == 1 and list(state["sources"]) == ["shared"]
        assert state["chunk_rows"] == state["sources"]["shared"]  # one version's chunks, no leftovers
        listing = await call(client, "search", query="saffron archive revision", collection=collection, top_k=10)
        assert len({hit["text"] for hit in listing["results"]}) == state["chunk_rows"]


async def test_parallel_ingests_of_different_sources_all_land_while_searches_succeed(
    stack: ServiceStack, collection: str
) -> None:
    async with mcp_client(stack, max_concurrent_jobs=8) as client:
        await call(client, "ingest_text", text=text_about("anchor"), name="anchor", collection=collection)
        ingests = asyncio.gather(
            *(call(client, "ingest_text", text=text_about(t), name=t, collection=collection) for t in TOPICS)
        )
        searches = 0
        for _ in range(300):  # bounded; the ingests take a few seconds
            if ingests.done():
                break
            found = await call(client, "search", query="archive shipment crate", collection=collection)
            assert not found["is_error"] and found["results"], found
            searches += 1
        results = await ingests
        assert searches > 0 and all(r["status"] == "indexed" for r in results), results
        state = collection_state(stack, collection)
        assert sorted(state["sources"]) == sorted([*TOPICS, "anchor"])
        assert state["chunk_rows"] == sum(state["sources"].values())


async def assert_all_found(client, collection: str, topics: list[str]) -> None:
    for topic in topics:
        found = await call(client, "search", query=f"{topic} crate", collection=collection, mode="keyword", top_k=1)
        assert found["results"] and topic in found["results"][0]["text"], (topic, found)


async def test_acknowledged_documents_survive_gateway_sigterm_and_sigkill(stack: ServiceStack, collection: str) -> None:
    async with mcp_client(stack, max_concurrent_jobs=8) as client:
        for topic in TOPICS[:3]:
            made = await call(client, "ingest_text", text=text_about(topic), name=topic, collection=collection)
            assert made["status"] == "indexed", made
        before = collection_state(stack, collection)
        for sig in (signal.SIGTERM, signal.SIGKILL):
            await asyncio.to_thread(stack.gateway.restart, sig)
            # Reopened database: every acknowledged document is there and searchable in every mode.
            assert collection_state(stack, collection) == before, sig
            await assert_all_found(client, collection, TOPICS[:3])
            semantic = await call(client, "search", query="depot shipments", collection=collection, mode="semantic")
            assert not semantic["is_error"] and len(semantic["results"]) == 3
        # and the restarted gateway keeps taking writes
        made = await call(client, "ingest_text", text=text_about(TOPICS[3]), name=TOPICS[3], collection=collection)
        assert made["status"] == "indexed"
        await assert_all_found(client, collection, TOPICS[:4])
