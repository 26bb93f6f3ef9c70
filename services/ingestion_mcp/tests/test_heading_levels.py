"""Heading levels survive the pipeline (issue 30, point 2).

A Markdown file goes through the real pipeline (chunker, gateway with the real model, Milvus Lite, in process):
a chunk of a `###` section under `#` and `##` comes back from search with heading_levels [1, 2, 3], not just
its titles, so `#` then `###` is not mistaken for depths 1 and 2.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from ingestion_contracts.gateway import SearchRequest
from ingestion_mcp.server import build_server
from ingestion_mcp.state import AppState
from mcp import Client

pytestmark = pytest.mark.timeout(300)

GUIDE = (
    "# Field guide\n\nAn opening paragraph about the guide.\n\n"
    "## Birds\n\nBirds of the marsh and of the wood.\n\n"
    "### Herons\n\nThe grey heron stands motionless in shallow water, waiting for fish to pass its beak.\n\n"
    "# Skipping\n\nThen a jump:\n\n### Deep only\n\nA lonely kingfisher dives from a willow branch.\n"
)


async def test_a_chunk_of_a_level_three_section_answers_its_levels(app_state: AppState, docs_dir: Path, call_tool):
    path = docs_dir / "field_guide.md"
    path.write_text(GUIDE, encoding="utf-8")
    async with Client(build_server(app_state)) as client:
        out = await call_tool(client, "ingest_document", file_path=str(path), collection="levels")
    assert out["success"] and out["status"] == "indexed", out

    async def hit_for(query: str) -> tuple[list[str], list[int] | None]:
        found = await app_state.backend.search(
            SearchRequest(query=query, collections=["levels"], mode="keyword", top_k=10)
        )
        hit = next(h for h in found.hits if query in h.text)
        return hit.heading_path, hit.heading_levels

    assert await hit_for("grey heron") == (["Field guide", "Birds", "Herons"], [1, 2, 3])
    assert await hit_for("lonely kingfisher") == (["Skipping", "Deep only"], [1, 3])
