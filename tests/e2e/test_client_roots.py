"""Safe defaults (issue 48, point 7): a server that a client starts from / without INGESTION_MCP_DATA_DIR or
INGESTION_MCP_ALLOWED_ROOTS keeps its data in the user's data folder and reads only the folders the client declares
as its roots, following roots/list_changed (with no roots declared it reads no folder: test_settings.py).

Before: it died with a 34-line traceback (PermissionError: '/data'), and with a writable working directory the
allowed root was that directory: from /, the whole file system."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters, types
from service_stack import call

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]
UNSET = ("INGESTION_MCP_ALLOWED_ROOTS", "INGESTION_MCP_DATA_DIR", "INGESTION_MCP_DOCUMENTS_DIR", "XDG_DATA_HOME",
         "DOCLING_SERVICE_URL", "CHUNKER_SERVICE_URL", "VECTOR_GATEWAY_URL", "VECTOR_GATEWAY_MILVUS_URI")  # fmt: skip
LICENSE = Path("/usr/share/common-licenses/GPL-3")  # a file outside every root


def from_the_root(home: Path) -> StdioServerParameters:
    """The server as a desktop client starts it: from /, with only HOME to go by."""
    env = {k: v for k, v in os.environ.items() if k not in UNSET} | {"HOME": str(home), "HF_HUB_OFFLINE": "1"}
    return StdioServerParameters(command=sys.executable, args=["-m", "ingestion_mcp.main"], env=env, cwd="/")


def folder_with_prose(folder: Path, name: str) -> Path:
    folder.mkdir(parents=True)
    text = LICENSE.read_text().split("\n\n")
    (folder / f"{name}.md").write_text(f"# {name}\n\n" + " ".join(p for p in text[3:6]))
    return folder


async def first_call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    """A call made as the server starts, retried as its answer says while the model loads."""
    with anyio.fail_after(180):
        while "still loading" in (out := await call(client, tool, **arguments)).get("error", ""):
            await anyio.sleep(1)
    return out


async def test_a_server_started_from_the_root_reads_only_the_client_s_roots(tmp_path: Path) -> None:
    home = tmp_path / "home"
    first, second = folder_with_prose(home / "work", "first"), folder_with_prose(home / "notes", "second")
    declared = [first]

    async def roots(*_: Any) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri=f.as_uri(), name=f.name) for f in declared])

    async with Client(from_the_root(home), mode="legacy", list_roots_callback=roots, read_timeout_seconds=240) as c:
        synced = await first_call(c, "sync_folder", folder=str(first), collection="roots_first")
        assert synced["success"] is True and synced["counts"]["added"] == 1, synced
        outside = await call(c, "ingest_document", file_path=str(LICENSE), collection="roots_first")
        assert outside["success"] is False and "not inside the allowed folders" in outside["error"], outside
        refused = await call(c, "sync_folder", folder=str(second), collection="roots_second")
        assert refused["success"] is False and "not inside the allowed folders" in refused["error"], refused

        declared[:] = [second]  # the user opened another folder: the client says so
        await c.send_roots_list_changed()
        synced = await call(c, "sync_folder", folder=str(second), collection="roots_second")
        assert synced["success"] is True and synced["counts"]["added"] == 1, synced
        gone = await call(c, "sync_folder", folder=str(first), collection="roots_first", dry_run=True)
        assert gone["success"] is False and "not inside the allowed folders" in gone["error"], gone
    assert (home / ".local/share/ingestion-mcp").is_dir()  # the user's data folder, not /data
