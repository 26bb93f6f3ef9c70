"""The allowed folders when the operator named none (issue 48, point 7): the roots an MCP client declares, followed
on roots/list_changed, and none at all when it declares none (through an in-process client; the server started
from / over stdio is tests/e2e/test_folder_sync_journey.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ingestion_mcp.server import build_server
from ingestion_mcp.settings import McpSettings
from ingestion_mcp.state import AppState
from mcp import Client, types

pytestmark = pytest.mark.timeout(300)


def unset_roots(state: AppState, data: Path) -> AppState:
    """The shared backend behind settings that name no allowed root (as INGESTION_MCP_ALLOWED_ROOTS unset)."""
    settings = McpSettings(data_dir=data, sync_wait_s=30)
    assert "allowed_roots" not in settings.model_fields_set
    return AppState.create(settings, state.backend)  # (already guarded: given back as it is)


async def test_no_roots_declared_means_no_folder_and_the_error_says_how_to_allow_one(
    app_state: AppState, call_tool: Any, docs_dir: Path, tmp_path: Path
) -> None:
    (docs_dir / "unrooted").mkdir()
    state = unset_roots(app_state, tmp_path / "data")
    async with Client(build_server(state)) as client:  # no roots capability
        refused = await call_tool(client, "sync_folder", folder=str(docs_dir / "unrooted"), collection="unrooted")
        assert refused["success"] is False and "declared no roots" in refused["error"], refused
        assert "INGESTION_MCP_ALLOWED_ROOTS" in refused["suggestion"], refused


async def test_the_client_s_roots_are_the_allowed_folders_and_follow_its_changes(
    app_state: AppState, call_tool: Any, docs_dir: Path, tmp_path: Path
) -> None:
    first, second = docs_dir / "rooted_a", docs_dir / "rooted_b"
    for folder in (first, second):
        folder.mkdir()
    declared = [first, Path("/")]  # the file system's root is never taken from a client

    async def roots(*_: Any) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri=f.as_uri()) for f in declared])

    state = unset_roots(app_state, tmp_path / "data")
    async with Client(build_server(state), mode="legacy", list_roots_callback=roots) as client:
        assert (await call_tool(client, "sync_folder", folder=str(first), collection="rooted", dry_run=True))["success"]
        assert state.settings.allowed_roots == [first.resolve()]
        out = await call_tool(client, "sync_folder", folder=str(second), collection="rooted", dry_run=True)
        assert out["success"] is False and "not inside the allowed folders" in out["error"], out
        declared[:] = [second]
        await client.send_roots_list_changed()
        out = await call_tool(client, "sync_folder", folder=str(second), collection="rooted", dry_run=True)
        assert out["success"] is True, out
        out = await call_tool(client, "sync_folder", folder=str(first), collection="rooted", dry_run=True)
        assert out["success"] is False and "not inside the allowed folders" in out["error"], out
