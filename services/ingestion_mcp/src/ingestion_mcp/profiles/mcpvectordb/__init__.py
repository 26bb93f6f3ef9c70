"""Compatibility profile: the mcpvectordb 0.2.0 tool contract (docs/specs/mcpvectordb-tools.md)."""

from __future__ import annotations

from functools import partial

from ...toolkit.common import error_result
from ..record import Profile
from .tools import SERVER_NAME, SERVER_VERSION, register, render_error

PROFILE = Profile("mcpvectordb", register, partial(error_result, render_error), identity=(SERVER_NAME, SERVER_VERSION))
