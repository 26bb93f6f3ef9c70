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
from journeys import server_params
from mcp import Client
from service_stack import call

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]


def index_command() -> list[str]:
    script = shutil.which("ingestion-index", path=str(Path(sys.executable).parent))
    return [script] if script else [sys.executable, "-m", "ingestion_mcp.cli.index_command"]


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


def weightless_model(folder: Path) -> Path:
    """A model folder that describes all-MiniLM-L6-v2's pipeline but holds no weights: loading it fails."""
    folder.mkdir(parents=True)
    kinds = ("Transformer", "Pooling")
    modules = [{"idx": i, "name": str(i), "path": ["", "1_Pooling"][i], "type": f"sentence_transformers.models.{kind}"}
               for i, kind in enumerate(kinds)]  # fmt: skip
    (folder / "modules.json").write_text(json.dumps(modules))
    (folder / "1_Pooling").mkdir()
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({"word_embedding_dimension": 384}))
    return folder


async def test_status_and_clear_on_a_folder_no_server_hosts_open_only_the_index(tmp_path: Path) -> None:
    """No server running: `status` and `clear` open the index alone, they load no model and no converter."""
    vault, data = tmp_path / "vault", tmp_path / "data"
    vault.mkdir()
    model = weightless_model(tmp_path / "described-only")
    env = dict(server_params(vault, data, INGESTION_MCP_VAULT_PATH=str(vault)).env or {})
    env["VECTOR_GATEWAY_EMBEDDING_MODEL"] = str(model)
    code, out, seconds = await index(env, "status", "--json")
    assert code == 0, out
    status = json.loads(out[: out.rindex("}") + 1])
    assert status["status"] == "empty" and status["embedding_dimension"] == 384, status
    print(f"ingestion-index status, no server, empty folder: {seconds:.2f} s")
    code, out, _ = await index(env, "clear", "--confirm")
    assert code == 0 and "Nothing to clear" in out, out


async def test_a_process_waiting_for_the_folder_takes_it_over_when_its_holder_leaves(tmp_path: Path) -> None:
    """A short command that held the folder without serving it (status) leaves: the next process hosts it."""
    import fcntl

    from ingestion_mcp.embedded.services import HOST_LOCK

    vault, data = tmp_path / "vault", tmp_path / "data"
    vault.mkdir()
    data.mkdir()
    (vault / "Tide.md").write_text("# Tide\n\nThe harbour tide table is pinned beside the lock keeper's door.\n")
    env = dict(server_params(vault, data, INGESTION_MCP_VAULT_PATH=str(vault)).env or {})
    holder = (data / HOST_LOCK).open("a")
    fcntl.flock(holder, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held as a short command holds it: no socket served
    results: list[tuple[int, str, float]] = []

    async def run_full() -> None:
        results.append(await index(env, "full"))

    with anyio.fail_after(120):
        async with anyio.create_task_group() as group:
            group.start_soon(run_full)
            await anyio.sleep(3)  # the CLI waits for the folder meanwhile
            holder.close()  # the holder exits, and its lock goes with it
    code, out, _ = results[0]
    assert code == 0 and "1 indexed" in out, out
