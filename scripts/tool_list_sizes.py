"""Bytes each profile's tools/list costs an agent, per tool and per part (compact JSON, as the client receives it).

    .venv/bin/python scripts/tool_list_sizes.py [PROFILE ...]     # default: every profile

No backend is opened: the tools are listed through an in-process MCP client over a server whose state
holds settings only (listing calls no tool)."""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from ingestion_mcp.profiles import NAMES
from ingestion_mcp.server import build_server
from ingestion_mcp.settings import McpSettings
from ingestion_mcp.sources import SourcePolicy
from ingestion_mcp.state import AppState
from mcp import Client


def compact(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")))


async def listed(profile: str, folder: Path) -> list[dict[str, Any]]:
    settings = McpSettings.model_validate({"profiles": [profile], "allowed_roots": [folder], "data_dir": folder})
    policy = SourcePolicy.from_settings(settings)
    # Listing reads settings only: no backend, ingestor or job store is opened.
    state = AppState(settings=settings, backend=None, ingestor=None, jobs=None, policy=policy)  # type: ignore[arg-type]  # listing never touches the three services left out
    async with Client(build_server(state)) as client:
        tools = (await client.list_tools()).tools
    return [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in tools]


def report(profile: str, tools: list[dict[str, Any]]) -> None:
    total = compact({"tools": tools})
    parts = ("description", "inputSchema", "outputSchema")
    sums = {part: sum(compact(t.get(part, "")) for t in tools) for part in parts}
    print(f"\n{profile}: {total} bytes, {len(tools)} tools; " + ", ".join(f"{p} {n}" for p, n in sums.items()))
    print(f"  {'tool':28} {'total':>6} {'descr':>6} {'input':>6} {'output':>6}")
    for tool in sorted(tools, key=compact, reverse=True):
        sizes = [compact(tool.get(part, "")) for part in parts]
        print(f"  {tool['name']:28} {compact(tool):>6} " + " ".join(f"{n:>6}" for n in sizes))


async def main(profiles: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for profile in profiles:
            report(profile, await listed(profile, Path(tmp)))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:] or list(NAMES)))
