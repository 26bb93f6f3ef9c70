"""Profiles are registered in one place (profiles.NAMES): the settings, the server and the snapshots follow it."""

from __future__ import annotations

import pytest
from ingestion_mcp.profiles import NAMES
from ingestion_mcp.profiles.record import load
from ingestion_mcp.settings import McpSettings
from pydantic import ValidationError

from .test_snapshots import SNAPSHOTS


def test_every_registered_profile_loads_and_has_a_pinned_contract() -> None:
    for name in NAMES:
        assert load(name).name == name
        assert (SNAPSHOTS / f"{name}.json").exists(), name


def test_settings_accept_the_registered_names_and_refuse_others() -> None:
    assert McpSettings(profiles=",".join(NAMES)).profiles == list(NAMES)
    with pytest.raises(ValidationError, match="unknown tool profile 'notes'; available: ingestion, mcpvectordb"):
        McpSettings(profiles="notes")
