"""What a tool profile tells the server about itself."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass

from mcp.server import MCPServer
from mcp.types import CallToolResult

from ..errors import ToolFailure
from ..jobs.kinds import JobKinds
from ..state import AppState
from . import NAMES


@dataclass(frozen=True)
class Profile:
    name: str
    # Registers the profile's tools (each with toolkit.common.profile_tools' decorator) on the server.
    register: Callable[[MCPServer, AppState], None]
    # How it answers arguments the MCP framework refuses before a tool runs (type, range, missing).
    argument_errors: Callable[[ToolFailure], CallToolResult]
    # (server name, version) announced in `initialize` when the profile is served alone, as its spec gives.
    identity: tuple[str, str] | None = None
    # This project's own contract: results leave absent fields out (never null), so schemas list optional
    # fields in their non-null form only, and a definition used once is written in place. A profile that
    # follows a spec keeps its defaults and $refs as written there.
    own_contract: bool = False
    # Registers the profile's job kinds (jobs/kinds.py): the long work its tools submit to the job store.
    jobs: Callable[[JobKinds[AppState]], None] | None = None


def load(name: str) -> Profile:
    """The record of a profile named in NAMES."""
    if name not in NAMES:
        raise KeyError(name)
    profile: Profile = importlib.import_module(f"{__package__}.{name}").PROFILE
    return profile
