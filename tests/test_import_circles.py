"""No import circles in the three services' packages (issue 30, point 6).

A circle (a module that imports itself back through others) makes a package one knot: no module of it can
be read, tested or moved alone, and an import order decides whether it starts at all. grimp builds each
package's import graph (imports inside functions and under ``if TYPE_CHECKING`` count too: a circle of types
is still a circle of design) and finds the chain back from each import. The cure is a module below both
(what they share), not an import hidden inside a function.
"""

from __future__ import annotations

import grimp
import pytest

PACKAGES = ["ingestion_mcp", "vector_gateway", "chunker_service"]


def circles(package: str) -> list[list[str]]:
    """For each import A -> B that B's imports lead back to A: the circle A -> B -> ... -> A."""
    graph = grimp.build_graph(package, cache_dir=None)
    found: dict[frozenset[str], list[str]] = {}
    for importer in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            back = graph.find_shortest_chain(importer=imported, imported=importer)
            if back is not None:
                found.setdefault(frozenset(back), [importer, *back])
    return list(found.values())


@pytest.mark.parametrize("package", PACKAGES)
def test_no_module_imports_itself_back(package: str) -> None:
    assert circles(package) == []


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
