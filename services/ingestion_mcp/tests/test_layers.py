"""The package's layers: the core (jobs, the queue, the pipeline, the state) knows no tool profile, and no
module imports itself back through others (an import circle). Profiles register their tools and job kinds
with the core; only the composition roots (server.py, worker.py, main.py, the CLIs) name profiles."""

from __future__ import annotations

import ast
from pathlib import Path

import ingestion_mcp

PACKAGE = Path(ingestion_mcp.__file__).parent
ROOT = PACKAGE.parent
# Where profiles are put together with the core: they may import profile modules.
COMPOSITION_ROOTS = {"ingestion_mcp.server", "ingestion_mcp.worker", "ingestion_mcp.main"}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in PACKAGE.rglob("*.py")}


def imports(name: str) -> set[str]:
    """The package's modules ``name`` imports at run time (anywhere in it, not under `if TYPE_CHECKING`)."""
    path = MODULES[name]
    tree = ast.parse(path.read_text())
    typing_only = {id(node) for branch in ast.walk(tree) if isinstance(branch, ast.If)
                   and "TYPE_CHECKING" in ast.unparse(branch.test) for node in ast.walk(branch)}  # fmt: skip
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in typing_only or not isinstance(node, ast.Import | ast.ImportFrom):
            continue
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            base = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
            base = base[: len(base) - node.level + 1] if node.level else []
            target = ".".join([*base, node.module] if node.module else base)
            targets = [target, *(f"{target}.{alias.name}" for alias in node.names)]
        found.update(t for t in targets if t in MODULES and t != name)
    return found


GRAPH = {name: imports(name) for name in MODULES}


def cycles() -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in GRAPH[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while (top := stack.pop()) != node:
                component.append(top)
            component.append(node)
            if len(component) > 1:
                found.append(sorted(component))

    for node in GRAPH:
        if node not in index:
            visit(node)
    return found


def test_no_module_imports_itself_back() -> None:
    assert cycles() == []


def test_the_core_knows_no_profile() -> None:
    """jobs, jobkinds, jobqueue, the pipeline and the state work without any profile; profiles register with them."""
    core = [name for name in MODULES if not name.startswith("ingestion_mcp.profiles")
            and name not in COMPOSITION_ROOTS and not name.startswith("ingestion_mcp.cli")]  # fmt: skip
    leaks = {name: sorted(t for t in GRAPH[name] if t.startswith("ingestion_mcp.profiles.")) for name in core}
    assert {name: found for name, found in leaks.items() if found} == {}


def test_each_profile_registers_the_job_kinds_its_tools_submit() -> None:
    from ingestion_mcp.jobkinds import JobKinds
    from ingestion_mcp.profiles import NAMES, load

    kinds = JobKinds()
    for name in NAMES:
        register = load(name).jobs
        if register is not None:
            register(kinds)
    assert set(kinds.names) == {"ingest_document", "ingest_text", "ingest_from_url", "ingest_batch", "ingest_upload",
                                "fetch_file", "fetch_repo"}  # fmt: skip
