"""Compatibility profile: PyObsidianMCP's vector search tools (docs/specs/obsidian-vector-search.md)."""

from __future__ import annotations

from ..record import Profile
from .tools import invalid_arguments, register

PROFILE = Profile("obsidian", register, invalid_arguments)
