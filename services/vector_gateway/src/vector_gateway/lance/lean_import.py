"""lancedb imported without two things it never uses here (issue 49: a first search within seconds of a start, a
server at rest in a few hundred MB). ``lancedb()`` imports it so; the Lance store calls it before it connects.

- Lance's REST namespace client. ``import lancedb`` imports ``lance_namespace``, which imports the OpenAPI client of
  Lance's REST namespaces, ``lance_namespace_urllib3_client``; that package's ``__init__`` imports all its API
  classes, whose methods pydantic wraps one by one (``validate_call``): about 0.5 s of CPU, a third of lancedb's
  import, at every start, for a client only remote namespaces use (lancedb and lance_namespace read its ``models``
  subpackage alone). An import hook for that one package runs its ``__init__`` on the first attribute read from it
  (``lance_namespace_urllib3_client.ApiClient``), not at import; its submodules (the models) import as usual.
  Nothing is left out: whatever reads the package gets the package whole.
- pandas. ``pyarrow.dataset`` (which lancedb imports) imports pandas at its own import: a module constant goes
  through ``pa.scalar``, whose array-like check asks pyarrow's pandas shim whether pandas is there, and the shim
  imports it to see: ~35 MB of resident memory the gateway never uses (nothing here makes or reads a DataFrame;
  lancedb itself imports pandas only when given one). While ``pyarrow.dataset`` imports, pandas is refused, so
  pyarrow's shim records it as absent for this process (``Table.to_pandas()`` would then say pandas is missing);
  ``import pandas`` works as before afterwards, for any other code.

bench.startup measures the start, bench.idle_memory the resident memory.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import Any

CLIENT = "lance_namespace_urllib3_client"
PANDAS = "pandas"


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


class _Refused(importlib.abc.MetaPathFinder):
    """Refuses one module while installed (an ImportError, as when it is not installed)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname == self.name:
            raise ImportError(f"{fullname} is left out while pyarrow.dataset imports (vector_gateway.lance)")
        return None


def lancedb() -> ModuleType:
    """The lancedb module, imported (once) without the REST client's initialisation and without pandas."""
    if "lancedb" not in sys.modules:
        if CLIENT not in sys.modules and not any(isinstance(f, _DeferredInit) for f in sys.meta_path):
            sys.meta_path.insert(0, _DeferredInit(CLIENT))
        if "pyarrow.dataset" not in sys.modules and PANDAS not in sys.modules:
            refused = _Refused(PANDAS)
            sys.meta_path.insert(0, refused)
            try:
                importlib.import_module("pyarrow.dataset")
            finally:
                sys.meta_path.remove(refused)
    return importlib.import_module("lancedb")
