"""Job kinds: every piece of long work as a name plus JSON parameters, so that a queue can carry it.

A tool validates its arguments, resolves what only the replica knows (the collection, the folder),
and submits (kind, params) to the job store. Whoever runs the job (this process, or a worker on the
queue) looks the kind up in its app state's JobKinds and calls it with the app state it opened itself.

Each tool profile registers its own kinds, the way it registers its tools (Profile.jobs): a server
registers those of the profiles it serves, a worker those of every profile (it runs any replica's jobs).
This module knows no profile. Results are JSON-ready.
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar

from ..errors import ToolFailure
from .job import ProgressFn

# The app state a job runs with (state.AppState): a type parameter, so that this module, which the state
# holds, does not import the state back.
S = TypeVar("S")
KindFn = Callable[[S, dict[str, Any], ProgressFn], Awaitable[Any]]


class JobKinds(Generic[S]):
    """The job kinds one process can run, by name."""

    def __init__(self) -> None:
        self._kinds: dict[str, KindFn[S]] = {}

    def add(self, name: str, fn: KindFn[S]) -> None:
        known = self._kinds.get(name)
        if known is not None and known is not fn:
            raise ValueError(f"Two job kinds are named {name!r}.")
        self._kinds[name] = fn

    def kind(self, name: str) -> Callable[[KindFn[S]], KindFn[S]]:
        """Decorator form of ``add``."""

        def register(fn: KindFn[S]) -> KindFn[S]:
            self.add(name, fn)
            return fn

        return register

    def __contains__(self, name: str) -> bool:
        return name in self._kinds

    @property
    def names(self) -> list[str]:
        return sorted(self._kinds)

    async def run(self, state: S, kind: str, params: dict[str, Any], progress: ProgressFn) -> Any:
        """Run one job of ``kind``; its parameters are copied, so a retry sees them as they were submitted."""
        fn = self._kinds.get(kind)
        if fn is None:
            raise ToolFailure(
                f"Unknown job kind {kind!r}.",
                "The worker and the server run different versions; deploy the same version of both.",
                code="INTERNAL_ERROR",
            )
        return await fn(state, copy.deepcopy(params), progress)
