"""The tool profiles: one folder each (its `PROFILE` record, tools and models), registered by name here.

Adding a profile is its folder plus its name in NAMES (docs/profiles.md). A profile is imported only
when it is served.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .record import Profile

NAMES = ("ingestion", "mcpvectordb", "vector_store", "docs_server", "obsidian")


def load(name: str) -> Profile:
    """The record of a profile named in NAMES."""
    if name not in NAMES:
        raise KeyError(name)
    profile: Profile = importlib.import_module(f"{__name__}.{name}").PROFILE
    return profile
