"""One data folder, many processes (issue 14, point 5): the Obsidian workflow of the spec, as written.

An agent app runs the MCP server (stdio, embedded services) on a data folder; meanwhile the user runs
`ingestion-index full`, edits a note, runs `ingestion-index update`, and asks the agent again; a second
agent app starts its own MCP server on the same folder. Before 0.3 the CLI refused ("data folder ... is in
use by another process") and a second server could not open Milvus Lite.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path

import anyio
import pytest
from journeys import call, server_params
from mcp import Client

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]


def index_command() -> list[str]:
    script = shutil.which("ingestion-index", path=str(Path(sys.executable).parent))
    return [script] if script else [sys.executable, "-m", "ingestion_mcp.cli"]


async def index(params_env: dict[str, str], *args: str) -> tuple[int, str, float]:
    started = time.perf_counter()
    done = await anyio.run_process([*index_command(), *args], env=params_env, check=False)
    return done.returncode, done.stdout.decode() + done.stderr.decode(), time.perf_counter() - started


async def vector_search(client: Client, query: str) -> list[dict]:
    answer = await client.call_tool("vector_search", {"query": query, "n_results": 3})
    return json.loads(answer.content[0].text)["results"]


async def test_the_cli_and_a_second_server_share_the_running_servers_index(tmp_path: Path) -> None:
    vault, data = tmp_path / "vault", tmp_path / "data"
    (vault / "Projects").mkdir(parents=True)
    note = vault / "Projects" / "Garden.md"
    note.write_text("# Garden\n\nDrip irrigation with soil moisture sensors for the vegetable beds.\n")
    (vault / "Bread.md").write_text("# Bread\n\nFeed the sourdough starter with flour and water every morning.\n")
    agent = server_params(vault, data, INGESTION_MCP_PROFILES="obsidian,ingestion", INGESTION_MCP_VAULT_PATH=str(vault))
    async with Client(agent, read_timeout_seconds=300) as client:
        assert (await call(client, "get_collections"))["success"]  # the server is up and hosts the folder
        env = dict(agent.env or {})
        code, out, _ = await index(env, "full")
        assert code == 0, out
        found = await vector_search(client, "watering vegetables with sensors")
        assert found and found[0]["path"] == "Projects/Garden.md", found

        note.write_text("# Garden\n\nThe greenhouse tomatoes need shade cloth in July heat waves.\n")
        code, out, _ = await index(env, "update", "--verbose")
        assert code == 0 and "Projects/Garden.md" in out, out
        found = await vector_search(client, "tomatoes shade cloth heat")
        assert found and found[0]["path"] == "Projects/Garden.md" and "tomatoes" in found[0]["content_preview"]

        code, out, seconds = await index(env, "status", "--json")
        assert code == 0 and json.loads(out[: out.rindex("}") + 1])["total_notes"] == 2, out
        print(f"ingestion-index status beside a running server: {seconds:.2f} s")

        # A second agent app on the same folder: it works, and both see one index.
        second = server_params(vault, data)
        async with Client(second, read_timeout_seconds=300) as other:
            text = "The orchard ladder is stored in the barn behind the walnut tree, next to the cider press."
            made = await call(other, "ingest_text", text=text, name="orchard")
            assert made["status"] == "indexed", made
        found = await call(client, "search", query="where is the orchard ladder", collection="rag_gateway")
        assert found["results"][0]["title"] == "orchard", found
