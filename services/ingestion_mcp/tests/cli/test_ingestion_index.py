"""`ingestion-index` run as a user runs it: a subprocess on a temp vault and a temp data folder."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

NOTES = {
    "Projects/Garden.md": "# Garden\n\nDrip irrigation with soil moisture sensors for the vegetable beds.\n",
    "Projects/Sub/Sensors.md": "# Sensors\n\nCalibrating capacitive soil moisture sensors in dry and wet soil.\n",
    "Bread.md": "# Bread\n\nFeed the sourdough starter with flour and water every morning.\n",
}
STATUS_KEYS = {
    "status", "collection_name", "total_documents", "total_notes", "embedding_provider", "embedding_dimension",
    "last_updated", "chroma_path",
}  # fmt: skip


def command() -> list[str]:
    script = shutil.which("ingestion-index", path=str(Path(sys.executable).parent))
    return [script] if script else [sys.executable, "-m", "ingestion_mcp.cli.index_command"]


def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*command(), *args], env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    for rel, text in NOTES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / ".obsidian").mkdir()
    (root / ".obsidian" / "app.md").write_text("# settings, not a note\n")
    return root


@pytest.fixture
def env(tmp_path: Path, vault: Path) -> dict[str, str]:
    names = ("DOCLING_SERVICE_URL", "CHUNKER_SERVICE_URL", "VECTOR_GATEWAY_URL", "VECTOR_GATEWAY_MILVUS_URI")
    base = {k: v for k, v in os.environ.items() if k not in names and not k.startswith("INGESTION_MCP_")}
    return {
        **base, "HF_HUB_OFFLINE": "1", "INGESTION_MCP_VAULT_PATH": str(vault),
        "INGESTION_MCP_DATA_DIR": str(tmp_path / "data"), "INGESTION_MCP_OBSIDIAN_COLLECTION": "cli_notes",
    }  # fmt: skip


def status_json(env: dict[str, str]) -> dict:
    done = run(env, "status", "--json")
    assert done.returncode == 0, done.stderr
    status = json.loads(done.stdout)
    assert set(status) == STATUS_KEYS
    return status


def test_full_status_update_clear(env: dict[str, str], vault: Path) -> None:
    full = run(env, "full", "--verbose")
    assert full.returncode == 0, full.stderr
    assert "3 indexed" in full.stdout and "Projects/Sub/Sensors.md" in full.stdout and ".obsidian" not in full.stdout
    status = status_json(env)
    assert (status["status"], status["total_notes"], status["collection_name"]) == ("ready", 3, "cli_notes")
    assert status["chroma_path"] == env["INGESTION_MCP_DATA_DIR"] and status["embedding_dimension"] == 384

    (vault / "Projects" / "Garden.md").write_text(NOTES["Projects/Garden.md"] + "\nNow with a rain sensor.\n")
    (vault / "Bread.md").unlink()
    (vault / "Hike.md").write_text("# Hike\n\nThe trail to the mountain lake climbs through pine forest.\n")
    update = run(env, "update", "--verbose")
    assert update.returncode == 0, update.stderr
    assert "1 indexed, 1 updated, 1 unchanged, 1 removed" in update.stdout  # the folder-sync engine counts all
    assert "Sensors.md" not in update.stdout  # unchanged notes are not even read (same size and mtime)
    assert status_json(env)["total_notes"] == 3

    table = run(env, "status")
    assert table.returncode == 0 and table.stdout.startswith("Vector Search Index Status\n==========================")
    assert "Notes:      3 notes" in table.stdout and "Status:     Ready" in table.stdout

    refused = run(env, "clear")
    assert refused.returncode == 1 and "--confirm" in refused.stderr
    assert status_json(env)["total_notes"] == 3
    cleared = run(env, "clear", "--confirm")
    assert cleared.returncode == 0, cleared.stderr
    assert status_json(env)["status"] == "empty"


def test_full_force_rebuilds(env: dict[str, str]) -> None:
    assert run(env, "full").returncode == 0
    again = run(env, "full")
    assert again.returncode == 0 and "3 unchanged" in again.stdout
    forced = run(env, "full", "--force")
    assert forced.returncode == 0 and "3 indexed" in forced.stdout


def test_configuration_errors_exit_2(env: dict[str, str], tmp_path: Path) -> None:
    no_vault = {k: v for k, v in env.items() if k != "INGESTION_MCP_VAULT_PATH"}
    missing = run(no_vault, "full")
    assert missing.returncode == 2 and "INGESTION_MCP_VAULT_PATH" in missing.stderr
    assert run(env, "update", "--vault", str(tmp_path / "nowhere")).returncode == 2
    bad_name = run(env, "status", "--collection", "not a name")
    assert bad_name.returncode == 2 and "Invalid collection name" in bad_name.stderr
    bad_env = run({**env, "VECTOR_GATEWAY_URL": "http://127.0.0.1:9"}, "status")
    assert bad_env.returncode == 2 and "Set all three service URLs" in bad_env.stderr


def test_unreachable_services_exit_3(env: dict[str, str]) -> None:
    urls = {name: "http://127.0.0.1:9" for name in ("DOCLING_SERVICE_URL", "CHUNKER_SERVICE_URL", "VECTOR_GATEWAY_URL")}
    down = run({**env, **urls}, "status")
    assert down.returncode == 3 and "unreachable" in down.stderr


async def test_a_hosted_data_folder_is_shared_not_refused(env: dict[str, str], app_state: object) -> None:
    """This test session's embedded backend hosts its data folder: the CLI attaches to it and works."""
    import anyio

    held = str(app_state.settings.data_dir)  # type: ignore[attr-defined]  # the fixture is typed loosely (object)
    shared = await anyio.run_process([*command(), "status", "--json"], env={**env, "INGESTION_MCP_DATA_DIR": held},
                                     check=False)  # fmt: skip
    assert shared.returncode in (0, 1), shared.stderr  # 1: this vault has no index yet, which status reports
    assert "in use by another process" not in shared.stderr.decode() and b"Traceback" not in shared.stderr
