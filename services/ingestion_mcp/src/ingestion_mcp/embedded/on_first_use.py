"""A service the embedded host starts on its first request, not with the host (issue 49).

A search needs the vector gateway alone; the converter and the chunker are imported, built and started by the
first call that needs one (an ingest), about half a second each, so that a server that has just started answers
its first search sooner and an idle one that never ingests never loads them. The host starts such a service in
its own task (link.py), where it started the others, so that its lifespan is left where it was entered.

Until then `/healthz` and `/readyz` answer here: a service that starts on demand is ready.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

HEALTH_PATHS = ("/healthz", "/readyz")
# (the service to start, the future its caller waits on): what the host's task is asked to do.
StartRequest = tuple["OnFirstUse", "asyncio.Future[None]"]


class OnFirstUse:
    """ASGI: the app ``make()`` builds, made and started when the first request other than a health probe comes."""

    def __init__(self, name: str, make: Callable[[], Any]) -> None:
        self.name, self.make = name, make
        self.app: Any = None
        self.submit: Callable[[StartRequest], None] | None = None  # set by the host that runs it
        self._started: asyncio.Future[None] | None = None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if self.app is None and scope["type"] == "http" and scope["path"] in HEALTH_PATHS:
            await _healthy(self.name, send)
            return
        await self.ensure()
        await self.app(scope, receive, send)

    async def ensure(self) -> None:
        """Started, by this call or an earlier one (all wait for the one start); a failed start is tried again."""
        if self.app is not None:
            return
        if self._started is None or (self._started.done() and self._started.exception() is not None):
            if self.submit is None:
                raise RuntimeError(f"the {self.name} service has no host to start it")
            self._started = asyncio.get_running_loop().create_future()
            self.submit((self, self._started))
        await asyncio.shield(self._started)  # a caller that leaves does not stop the start


async def _healthy(name: str, send: Any) -> None:
    body = json.dumps({"status": "ok", "service": name, "version": "", "checks": {"started": "on first use"}}).encode()
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": body})
