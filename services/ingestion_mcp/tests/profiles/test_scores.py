"""docs_server's minScore on the calibrated scale: the spec's default (0.7) returns on-topic chunks with the
bundled model and nothing for an off-topic query (issue 12, point 2; toolkit/scores.py)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from ingestion_mcp.server import build_server
from ingestion_mcp.toolkit.scores import docs_server_score, docs_server_threshold
from mcp import Client


@pytest.fixture(scope="module")
async def indexed_guide(docs_state: Any, web_port: int) -> None:
    async with Client(build_server(docs_state)) as client:
        for _ in range(120):  # the embedding model may still be loading in the background at start-up
            job = await _fetch_guide(client, f"http://127.0.0.1:{web_port}/guide.md")
            if job["status"] == "completed" or "loading" not in str(job):
                break
            await asyncio.sleep(1)
    assert job["status"] == "completed", job


async def _fetch_guide(client: Client, url: str) -> dict[str, Any]:
    started = (await client.call_tool("fetch_file", {"url": url, "filename": "guide.md"})).structured_content
    for _ in range(3000):
        job = (await client.call_tool("get_job_status", {"jobId": started["jobId"]})).structured_content
        if job["status"] != "running":
            return job
        await asyncio.sleep(0.1)
    return job


QUESTIONS = {
    "how do honey bees tell others where the flowers are": "waggle dance",
    "why do shield volcanoes have gentle slopes": "Mauna Loa",
    "what causes spring tides": "Moon",
}


async def test_default_min_score_returns_on_topic_chunks(docs_mcp: Any, indexed_guide: None) -> None:
    async with docs_mcp() as client:
        for question, expected in QUESTIONS.items():
            out = (await client.call_tool("search_documents", {"query": question})).structured_content
            assert out["result"], (question, out)
            assert expected in out["result"][0]["content"]
            assert all(0.7 <= r["score"] <= 1 for r in out["result"])


async def test_default_min_score_returns_nothing_off_topic(docs_mcp: Any, indexed_guide: None) -> None:
    async with docs_mcp() as client:
        for question in ("purple elephant umbrella saxophone", "cheap flights to Lisbon in October"):
            out = (await client.call_tool("search_documents", {"query": question})).structured_content
            assert out == {"result": []}, (question, out)


def test_the_mapping_keeps_the_spec_default_at_the_relevance_threshold() -> None:
    for value in (0.0, 0.3, 0.7, 0.85, 1.0):
        assert docs_server_score(docs_server_threshold(value)) == pytest.approx(value)
    assert docs_server_threshold(0.0) == 0.0 and docs_server_threshold(1.0) == pytest.approx(1.0)
