"""The package's layers: the core (jobs, the queue, the pipeline, the state) knows no tool profile. Profiles
register their tools and job kinds with the core; only the composition roots (server.py and the entry points in
cli/) name profiles."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import grimp

# Imports at run time (not those under `if TYPE_CHECKING`): grimp's graph of the package. Import circles of
# every package, type imports included, are tests/test_import_circles.py's.
GRAPH = grimp.build_graph("ingestion_mcp", exclude_type_checking_imports=True, cache_dir=None)
MODULES = GRAPH.modules
# Where profiles are put together with the core: they may import profile modules.
COMPOSITION_ROOTS = {"ingestion_mcp.server"}


def test_the_core_knows_no_profile() -> None:
    """jobs, jobkinds, jobqueue, the pipeline and the state work without any profile; profiles register with them."""
    core = [name for name in MODULES if not name.startswith("ingestion_mcp.profiles")
            and name not in COMPOSITION_ROOTS and not name.startswith("ingestion_mcp.cli.")]  # fmt: skip
    leaks = {
        name: sorted(
            t for t in GRAPH.find_modules_directly_imported_by(name) if t.startswith("ingestion_mcp.profiles.")
        )
        for name in core
    }
    assert {name: found for name, found in leaks.items() if found} == {}


def test_each_profile_registers_the_job_kinds_its_tools_submit() -> None:
    from ingestion_mcp.jobs.kinds import JobKinds
    from ingestion_mcp.profiles import NAMES
    from ingestion_mcp.profiles.record import load

    kinds = JobKinds()
    for name in NAMES:
        register = load(name).jobs
        if register is not None:
            register(kinds)
    assert set(kinds.names) == {"ingest_document", "ingest_text", "ingest_from_url", "ingest_batch", "ingest_upload",
                                "fetch_file", "fetch_repo", "sync_folder"}  # fmt: skip


def backend_reaches(source: str) -> list[str]:
    """Where a module's code names `.backend` (an attribute: `state.backend.x`, `docs.state.backend`)."""
    return [
        f"line {node.lineno}: .{node.attr}"
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Attribute) and node.attr == "backend"
    ]


def test_profiles_speak_to_the_facade_only() -> None:
    """A tool reads and writes through `state.library` (or an engine of the state: the ingestor, the folder sync,
    the note index), never the backend: one place translates the gateway's errors and shapes its answers
    (docs/profiles.md, "one facade call")."""
    profiles = sorted(name for name in MODULES if name.startswith("ingestion_mcp.profiles."))
    imports = {
        name: sorted(t for t in GRAPH.find_modules_directly_imported_by(name) if t.startswith("ingestion_mcp.backend"))
        for name in profiles
    }
    assert {name: found for name, found in imports.items() if found} == {}
    package = Path(importlib.import_module("ingestion_mcp.profiles").__file__ or "").parent
    reaches = {str(path.relative_to(package)): backend_reaches(path.read_text()) for path in package.rglob("*.py")}
    assert {path: found for path, found in reaches.items() if found} == {}


def test_a_reach_past_the_facade_is_seen() -> None:
    assert backend_reaches("async def f(state):\n    return await state.backend.list_collections()\n") == [
        "line 2: .backend"
    ]
