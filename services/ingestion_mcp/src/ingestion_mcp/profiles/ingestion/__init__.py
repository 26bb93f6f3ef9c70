"""The default profile, this project's own contract (docs/specs/ingestion-mcp-tools-plan.md): ingest, search,
read and manage documents, collections and jobs."""

from __future__ import annotations

from functools import partial

from mcp.server import MCPServer

from ...state import AppState
from ...toolkit.common import error_result
from ..record import Profile
from . import batch, documents, navigation, sync_tool, tools, viewer, web
from .jobs import register_jobs
from .models import render_error


def register(server: MCPServer, state: AppState) -> None:
    for module in (tools, web, documents, navigation, batch, sync_tool, viewer):
        module.register(server, state)


PROFILE = Profile("ingestion", register, partial(error_result, render_error), own_contract=True, jobs=register_jobs)
