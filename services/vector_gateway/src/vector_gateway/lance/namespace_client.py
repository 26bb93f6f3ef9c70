"""lancedb without the cost of the REST client it never uses here (issue 49: the first search within seconds).

``import lancedb`` imports ``lance_namespace``, which imports the OpenAPI client of Lance's REST namespaces,
``lance_namespace_urllib3_client``; that package's ``__init__`` imports all its API classes, whose methods pydantic
wraps one by one (``validate_call``): about 0.5 s of CPU, a third of lancedb's import, at every start, for a client
that only remote namespaces use. lancedb and lance_namespace read its ``models`` subpackage alone.

``defer_client_init`` installs an import hook for that one package: its ``__init__`` runs on the first attribute
read from it (``lance_namespace_urllib3_client.ApiClient``), not at import; its submodules (the models) import as
usual. Nothing is left out: whatever reads the package gets the package whole. bench.startup measures the start.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import Any

CLIENT = "lance_namespace_urllib3_client"


class _DeferredInit(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds one package as the path finder does; runs its ``__init__`` when an attribute of it is first read."""

    def __init__(self, name: str) -> None:
        self.name = name

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.name:
            return None
        found = importlib.machinery.PathFinder.find_spec(fullname, path)
        if found is None or found.loader is None or found.submodule_search_locations is None:
            return None  # not installed, or not a package: the usual import says so
        spec = importlib.machinery.ModuleSpec(fullname, self, origin=found.origin, is_package=True)
        spec.submodule_search_locations = found.submodule_search_locations
        spec.has_location = found.has_location
        spec.loader_state = found
        return spec

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None  # the default module, with __path__ from the spec: its submodules are found

    def exec_module(self, module: ModuleType) -> None:
        found: importlib.machinery.ModuleSpec = module.__spec__.loader_state  # type: ignore[union-attr]  # set in find_spec

        def __getattr__(attribute: str) -> Any:  # only for names the module does not hold yet
            del module.__dict__["__getattr__"]
            found.loader.exec_module(module)  # type: ignore[union-attr]  # checked in find_spec
            return getattr(module, attribute)

        module.__getattr__ = __getattr__  # type: ignore[method-assign]  # module-level __getattr__ (PEP 562)


def defer_client_init() -> None:
    """Install the hook once, before lancedb is imported (the Lance store's first connection)."""
    if CLIENT in sys.modules or any(isinstance(f, _DeferredInit) for f in sys.meta_path):
        return
    sys.meta_path.insert(0, _DeferredInit(CLIENT))
