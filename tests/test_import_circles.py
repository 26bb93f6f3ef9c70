"""No import circles in the six packages (issue 30, point 6), and rooms that import downward only (issue 41).

A circle (a module that imports itself back through others) makes a package one knot: no module of it can
be read, tested or moved alone, and an import order decides whether it starts at all. grimp builds each
package's import graph (imports inside functions and under ``if TYPE_CHECKING`` count too: a circle of types
is still a circle of design) and finds the chain back from each import. The cure is a module below both
(what they share), not an import hidden inside a function.

The same holds one level up: the top-level packages and modules of a package (its rooms) import each other
without a loop, and ingestion_mcp's rooms stand in LAYERS (docs/profiles.md draws them): entry points at the top,
the HTTP middleware, the profiles and the console, the app state, ..., settings at the bottom; no import runs up.
"""

from __future__ import annotations

import functools

import grimp
import pytest

PACKAGES = [
    "ingestion_contracts",
    "servicekit",
    "docling_service",
    "chunker_service",
    "vector_gateway",
    "ingestion_mcp",
]
# ingestion_mcp's rooms, top floor first; the rooms of one floor do not import each other. A new room goes on the
# floor below everything that imports it and above everything it imports.
LAYERS = [
    grimp.Layer("cli"),  # the entry points: ingestion-mcp, ingestion-mcp-worker, ingestion-index
    grimp.Layer("serving"),  # what ingestion-mcp runs once its entry point has read the settings
    grimp.Layer("server", "http"),  # the MCP server of the chosen profiles; the ASGI middleware in front of it
    grimp.Layer("console", "profiles"),
    grimp.Layer("state", "toolkit"),
    grimp.Layer("ingest"),
    grimp.Layer("library", "jobs", "embedded"),
    grimp.Layer("access"),
    grimp.Layer("backend"),
    grimp.Layer("errors"),
    grimp.Layer("sources", "observability", "settings", "stopping", "handshake"),
]


@functools.cache
def graph_of(package: str) -> grimp.ImportGraph:
    return grimp.build_graph(package, cache_dir=None)


def circles(package: str) -> list[list[str]]:
    """For each import A -> B that B's imports lead back to A: the circle A -> B -> ... -> A."""
    graph = graph_of(package)
    found: dict[frozenset[str], list[str]] = {}
    for importer in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            back = graph.find_shortest_chain(importer=imported, imported=importer)
            if back is not None:
                found.setdefault(frozenset(back), [importer, *back])
    return list(found.values())


def room_circles(package: str) -> list[list[str]]:
    """Circles between the package's rooms (each top-level module or subpackage as one), as in circles()."""
    graph = graph_of(package)
    rooms = {module.split(".")[1] for module in graph.modules if module.count(".") >= 1}
    arrows: dict[str, set[str]] = {room: set() for room in rooms}
    for importer in graph.modules:
        for imported in graph.find_modules_directly_imported_by(importer):
            a, b = importer.split(".")[1:2], imported.split(".")[1:2]
            if a and b and a != b:
                arrows[a[0]].add(b[0])

    def back(start: str, goal: str) -> list[str] | None:
        seen, todo = {start}, [[start]]
        while todo:
            path = todo.pop(0)
            for step in sorted(arrows[path[-1]]):
                if step == goal:
                    return [*path, step]
                if step not in seen:
                    seen.add(step)
                    todo.append([*path, step])
        return None

    found: dict[frozenset[str], list[str]] = {}
    for room in sorted(rooms):
        for target in sorted(arrows[room]):
            if (chain := back(target, room)) is not None:
                found.setdefault(frozenset(chain), [room, *chain])
    return list(found.values())


@pytest.mark.parametrize("package", PACKAGES)
def test_no_module_imports_itself_back(package: str) -> None:
    assert circles(package) == []


@pytest.mark.parametrize("package", PACKAGES)
def test_no_room_imports_itself_back(package: str) -> None:
    assert room_circles(package) == []


def test_ingestion_mcp_rooms_import_downward_only() -> None:
    graph = graph_of("ingestion_mcp")
    placed = {tail for layer in LAYERS for tail in layer.module_tails}
    rooms = {module.split(".")[1] for module in graph.modules if module.count(".") == 1}
    assert rooms - placed == set(), "place each new room in LAYERS (tests/test_import_circles.py, docs/profiles.md)"
    upward = graph.find_illegal_dependencies_for_layers(layers=LAYERS, containers={"ingestion_mcp"})
    assert [(d.importer, d.imported, sorted((r.importer, r.imported) for r in d.routes)) for d in upward] == []


def test_a_circle_is_found(tmp_path, monkeypatch) -> None:
    """The check finds a circle through a function-level and a TYPE_CHECKING import alike."""
    root = tmp_path / "knot"
    root.mkdir()
    (root / "__init__.py").write_text("")
    (root / "a.py").write_text("def f():\n    from .b import g\n    return g\n")
    (root / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .c import C\ng = 1\n")
    (root / "c.py").write_text("from . import a\nclass C: ...\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert sorted(map(sorted, circles("knot"))) == [["knot.a", "knot.a", "knot.b", "knot.c"]]


def test_a_room_circle_is_found(tmp_path, monkeypatch) -> None:
    """Two rooms that import each other through different files (no file circle) are a room circle."""
    root = tmp_path / "house"
    (root / "low").mkdir(parents=True)
    (root / "high").mkdir()
    for path in ("__init__.py", "low/__init__.py", "high/__init__.py", "high/b.py"):
        (root / path).write_text("")
    (root / "low" / "a.py").write_text("from ..high import b\n")
    (root / "high" / "c.py").write_text("from ..low import a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert circles("house") == []
    assert sorted(map(sorted, room_circles("house"))) == [["high", "high", "low"]]
