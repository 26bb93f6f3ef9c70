"""Compatibility profile: the docs-server MCP API (docs/specs/docs-server-api.md)."""

from __future__ import annotations

from functools import partial

from ...toolkit.common import error_result
from ..record import Profile
from .jobs import register_jobs
from .models import render_error
from .tools import register

PROFILE = Profile("docs_server", register, partial(error_result, render_error), jobs=register_jobs)
