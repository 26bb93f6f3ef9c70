"""Pinned tool contracts: each profile's tools/list (names, descriptions, input and output schemas,
annotations) must match snapshots/<profile>.json, so a contract change shows in review.
Regenerate with UPDATE_SNAPSHOTS=1."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from ingestion_mcp.server import build_server
from mcp import Client

from .conftest import profile_state

SNAPSHOTS = Path(__file__).parent / "snapshots"


async def tools_list(state: Any) -> dict[str, Any]:
    async with Client(build_server(state)) as client:
        listed = (await client.list_tools()).tools
    return {
        tool.name: {
            "description": tool.description,
            "inputSchema": tool.input_schema,
            "outputSchema": tool.output_schema,
            "annotations": tool.annotations.model_dump(mode="json", by_alias=True, exclude_none=True),
        }
        | ({"_meta": tool.meta} if tool.meta else {})
        for tool in sorted(listed, key=lambda t: t.name)
    }


@pytest.mark.parametrize("profile", ["ingestion", "mcpvectordb", "vector_store", "docs_server", "obsidian", "chatgpt"])
async def test_tools_list_matches_snapshot(profile: str, app_state: Any) -> None:
    current = await tools_list(profile_state(app_state, profiles=[profile]))
    path = SNAPSHOTS / f"{profile}.json"
    text = json.dumps(current, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    if os.environ.get("UPDATE_SNAPSHOTS") == "1":
        path.write_text(text)
    assert path.exists(), f"no snapshot for {profile}; run with UPDATE_SNAPSHOTS=1"
    assert json.loads(path.read_text()) == current, f"{profile} tool contract changed; review, then UPDATE_SNAPSHOTS=1"
