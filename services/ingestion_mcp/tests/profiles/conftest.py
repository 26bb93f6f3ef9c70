"""Servers for the docs_server and obsidian profiles over the shared embedded backend, a loopback HTTP
server and a local git repository for fetch_file / fetch_repo, and a small vault of notes."""

from __future__ import annotations

import http.server
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from ingestion_mcp.cli.index import VaultIndexer
from ingestion_mcp.ingest.pipeline import Ingestor
from ingestion_mcp.server import build_server
from ingestion_mcp.sources import SourcePolicy
from ingestion_mcp.state import AppState, job_store
from mcp import Client

SECTIONS = {
    "Beekeeping": "Honey bees tell their hive mates where flowers are with the waggle dance: the angle of the "
    "run shows the direction relative to the sun and its length shows the distance to the nectar.",
    "Volcanoes": "Shield volcanoes such as Mauna Loa are built by fluid basalt lava flows that travel far "
    "before cooling, which gives them broad gentle slopes instead of steep cones.",
    "Sourdough": "A sourdough starter is a culture of wild yeast and lactic acid bacteria; bakers feed it flour "
    "and water every day and use it to leaven bread without commercial yeast.",
    "Chess openings": "The Sicilian Defence answers 1.e4 with c5, fighting for the centre asymmetrically and "
    "leading to sharp positions where both sides attack on opposite wings.",
    "Tides": "Ocean tides are caused mainly by the gravitational pull of the Moon; spring tides happen when "
    "the Sun and Moon align and neap tides when they are at right angles.",
    "Compilers": "A compiler front end lexes and parses source code into an abstract syntax tree, then type "
    "checks it before the back end generates machine code for the target architecture.",
}


def guide_markdown() -> str:
    """A document long enough for several chunks: each section a distinct topic."""
    parts = ["# Field guide"]
    for title, text in SECTIONS.items():
        parts.append(f"## {title}\n\n" + " ".join([text] * 4))
    return "\n\n".join(parts) + "\n"


class Handler(http.server.SimpleHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path.startswith("/slow/"):
            time.sleep(2.0)
            self.path = self.path.removeprefix("/slow")
        super().do_GET()

    def log_message(self, *args: Any) -> None:
        return


@pytest.fixture(scope="session")
def web_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("web")
    (root / "guide.md").write_text(guide_markdown())
    (root / "short.md").write_text("# Short note\n\nThe lighthouse keeper logs the weather every evening at six.\n")
    (root / "removable.md").write_text("# Removable\n\n" + " ".join([SECTIONS["Tides"]] * 3) + "\n")
    (root / "page.html").write_text(
        "<html><head><title>Kites</title></head><body><main><h1>Kites</h1><p>A kite flies because the "
        "wind pushes against its sail while the line holds it at an angle.</p></main></body></html>"
    )
    return root


@pytest.fixture(scope="session")
def web_port(web_root: Path) -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), lambda *a: Handler(*a, directory=str(web_root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()


@pytest.fixture(scope="session")
def git_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("repo")
    (repo / "docs").mkdir()
    (repo / "README.md").write_text("# Orchard tools\n\nTools for planning an apple orchard and its pruning.\n")
    (repo / "docs" / "pruning.md").write_text(
        "# Pruning\n\nPrune apple trees in late winter while they are dormant, removing crossing branches "
        "so light reaches the centre of the canopy.\n"
    )
    (repo / "app.py").write_text("print('not included by the default patterns')\n")
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e"}
    for args in (["init", "-q", "-b", "main"], ["add", "."], ["commit", "-q", "-m", "init"]):
        subprocess.run(["git", *args], cwd=repo, check=True, env={**env, "PATH": "/usr/bin:/bin"})
    return repo


def profile_state(base: AppState, **updates: Any) -> AppState:
    """A new AppState over the shared backend, with changed settings (and policy), running its own jobs."""
    policy = updates.pop("policy", base.policy)
    settings = base.settings.model_copy(update=updates)
    state = AppState(
        settings=settings, backend=base.backend, ingestor=Ingestor(base.backend, settings), jobs=base.jobs,
        policy=policy,
    )  # fmt: skip
    state.jobs = job_store(settings, state)
    return state


@pytest.fixture(scope="session")
def docs_state(app_state: AppState, tmp_path_factory: pytest.TempPathFactory, web_port: int) -> AppState:
    policy = SourcePolicy.build(
        allowed_hosts=[f"127.0.0.1:{web_port}"], repo_schemes=["https", "file"], total_timeout_s=30
    )
    return profile_state(
        app_state, profiles=["docs_server"], docs_collection="docs_profile",
        documents_dir=tmp_path_factory.mktemp("documents"), policy=policy,
    )  # fmt: skip


@pytest.fixture
def docs_mcp(docs_state: AppState) -> Callable[[], Client]:
    """`async with docs_mcp() as client:` (a client's task group must be left in the task that entered it)."""
    return lambda: Client(build_server(docs_state))


NOTES = {
    "Projects/Garden.md": "# Garden irrigation\n\nWe are building an automated drip irrigation system for the "
    "vegetable garden. Soil moisture sensors decide when the valves open, so the beds are watered only when "
    "the soil is dry.",
    "Projects/Sub/Sensors.md": "# Moisture sensors\n\nCalibrating capacitive soil moisture sensors for the "
    "irrigation controller: readings in dry soil and in saturated soil set the watering thresholds.",
    "Areas/Cooking.md": "# Sourdough\n\nFeed the sourdough starter with flour and water, let the dough rise "
    "overnight, then bake the loaf in a hot Dutch oven until the crust is dark.",
    "Journal.md": "# Hike\n\nToday we hiked to the mountain lake; the trail climbed through pine forest and the "
    "water was cold and clear.",
}


@pytest.fixture(scope="session")
def vault(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("vault")
    for rel, text in NOTES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / ".obsidian").mkdir()
    (root / ".obsidian" / "workspace.md").write_text("# not a note\n\nObsidian's own settings folder.")
    return root


@pytest.fixture(scope="session")
async def notes_state(app_state: AppState, vault: Path) -> AppState:
    """The vault indexed with the CLI's own indexer (same tags), served by the obsidian profile."""
    state = profile_state(
        app_state, profiles=["obsidian"], obsidian_collection="obsidian_profile", allowed_roots=[vault],
        vault_path=vault,
    )  # fmt: skip
    indexer = VaultIndexer(state.backend, state.settings)
    report = await indexer.sync(vault, only_changed=False, on_progress=lambda done, lines: None)
    assert report.indexed == len(NOTES) and not report.failed, report
    return state


@pytest.fixture
def notes_mcp(notes_state: AppState) -> Callable[[], Client]:
    return lambda: Client(build_server(notes_state))
