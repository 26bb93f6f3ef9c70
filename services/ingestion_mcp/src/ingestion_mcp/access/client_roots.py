"""The folders a local MCP client lets the server read, when the operator named none.

Issue 48: with INGESTION_MCP_ALLOWED_ROOTS unset the allowed root was the working directory, so a desktop client
that starts its servers from / opened the whole file system (`/usr/lib/python3.11/LICENSE.txt` was ingested). Now,
unset means: the roots the client declares (MCP's `roots` capability: the workspace folders a user opened), asked
with `roots/list` once the session is initialized and again on every `notifications/roots/list_changed`; with
neither, no folder at all, and the refusal says how to allow one (sources/paths.py).

Only on stdio, where the client started this process as its own user: a remote client over HTTP declaring roots
would be a remote party choosing which of the server's folders to read, so there the operator's list is the only
one. The file system's root itself is never taken from a client ("/" is what a misconfigured client sends).

The effective list is `settings.allowed_roots`, changed in place, so every holder of the settings (the tools, the
pipeline, the watcher, which pauses a watch whose folder is no longer inside: ingest/watch.py) sees the same
folders at once. Protocol 2026-07-28 removed the session-wide roots (SEP-2577): such a client declares none here.
"""

from __future__ import annotations

import logging
import warnings
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import anyio

from ..settings import McpSettings

log = logging.getLogger("ingestion_mcp.roots")
ASK_S = 10.0  # a client that does not answer roots/list in this time is taken to declare none
REFRESHED_BY = ("notifications/initialized", "notifications/roots/list_changed")


def folder_of(uri: str) -> Path | None:
    """A file:// URI's folder (None: another scheme, a remote host, a relative path or the file system's root)."""
    parts = urlsplit(uri)
    if parts.scheme != "file" or parts.netloc not in ("", "localhost"):
        return None
    path = Path(unquote(parts.path))
    if not path.is_absolute() or path == Path(path.anchor):
        return None
    return path.expanduser().resolve()


class ClientRoots:
    """The client's declared folders as the allowed roots (see the module's docstring for when)."""

    def __init__(self, settings: McpSettings) -> None:
        self.settings = settings
        self.enabled = "allowed_roots" not in settings.model_fields_set and settings.transport == "stdio"
        self.asked = False  # roots/list answered (or found unanswerable) at least once

    def adopt(self, uris: list[str]) -> list[Path]:
        """Take these as the allowed roots (in place: every holder of the settings sees them)."""
        folders = list(dict.fromkeys(p for p in map(folder_of, uris) if p is not None))
        if len(folders) < len(uris):
            log.warning("%d of the client's %d roots were not taken (not a local folder, or /)",
                        len(uris) - len(folders), len(uris))  # fmt: skip
        self.settings.allowed_roots[:] = folders
        self.asked = True
        log.info("allowed folders from the client's roots: %s", ", ".join(map(str, folders)) or "none")
        return folders

    async def ask(self, session: Any) -> None:
        """Ask the client for its roots (nothing when it declares no `roots` capability)."""
        capabilities = getattr(session, "client_capabilities", None)
        if capabilities is None or capabilities.roots is None:
            self.asked = True
            return
        try:
            with anyio.fail_after(ASK_S), warnings.catch_warnings():
                warnings.simplefilter("ignore")  # MCPDeprecationWarning: 2026-07-28 dropped what 2025-11-25 clients use
                answer = await session.list_roots()
        except Exception as exc:  # noqa: BLE001 - a client that cannot answer leaves no folder allowed, said in errors
            log.warning("the client's roots could not be read (%s); no folder is allowed", type(exc).__name__)
            self.asked = True
            return
        self.adopt([str(root.uri) for root in answer.roots])


class RootsMiddleware:
    """Asks for the client's roots after `initialized` and each `roots/list_changed`, and before a tool call when
    they are not known yet (a call can arrive before the first answer)."""

    def __init__(self, roots: ClientRoots) -> None:
        self.roots = roots

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        if not self.roots.enabled:
            return await call_next(ctx)
        if ctx.method in REFRESHED_BY:
            self.roots.asked = False  # at once: a tool call handled beside this notification asks too
        if ctx.method == "tools/call" and not self.roots.asked:
            await self.roots.ask(ctx.session)
        result = await call_next(ctx)
        if ctx.method in REFRESHED_BY:
            await self.roots.ask(ctx.session)
        return result
