"""Compatibility profile: the vector_store tools (docs/specs/vector-store-tools.md)."""

from __future__ import annotations

from functools import partial

from ...toolkit.common import error_result
from ..record import Profile
from .tools import register, render_error

PROFILE = Profile("vector_store", register, partial(error_result, render_error))
