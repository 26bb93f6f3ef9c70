"""The level of each heading in a chunk's heading path, kept with the chunk.

Under the reserved metadata key of the chunk's row, like its page starts (citations.py): the JSON field every
row has, so collections made before need no new field. A row written before levels were kept, or by a
caller that sent none, answers None: not known (re-ingest with force to fill them in).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ingestion_contracts.gateway import RESERVED_METADATA_KEY


def with_heading_levels(stored: dict[str, Any], levels: Sequence[int]) -> dict[str, Any]:
    """A chunk row's metadata (upsert.stored_metadata) plus its heading levels, when it has any."""
    if levels:
        stored[RESERVED_METADATA_KEY] = {**stored[RESERVED_METADATA_KEY], "levels": list(levels)}
    return stored


def stored_heading_levels(stored: dict[str, Any] | None, heading_path: Sequence[str]) -> list[int] | None:
    """The levels a row was written with; [] for a chunk under no heading; None when not known."""
    if not heading_path:
        return []
    levels = ((stored or {}).get(RESERVED_METADATA_KEY) or {}).get("levels")
    if not isinstance(levels, list) or len(levels) != len(heading_path):
        return None
    return [int(level) for level in levels]
