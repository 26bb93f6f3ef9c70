"""The OpenAPI document is a contract: a change shows in the diff. UPDATE_SNAPSHOTS=1 rewrites it."""

from __future__ import annotations

import json
import os
from pathlib import Path

from chunker_service.main import create_app
from chunker_service.settings import ChunkerSettings

SNAPSHOT = Path(__file__).parent / "snapshots" / "openapi.json"


def test_openapi_matches_the_snapshot(settings: ChunkerSettings) -> None:
    document = create_app(settings).openapi()
    rendered = json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    if os.environ.get("UPDATE_SNAPSHOTS") == "1":
        SNAPSHOT.write_text(rendered, encoding="utf-8")
    assert SNAPSHOT.exists(), "no snapshot yet: run with UPDATE_SNAPSHOTS=1"
    assert json.loads(SNAPSHOT.read_text(encoding="utf-8")) == json.loads(rendered), (
        "the OpenAPI document changed: review the diff, then run with UPDATE_SNAPSHOTS=1"
    )


def test_operation_ids_are_stable(settings: ChunkerSettings) -> None:
    paths = create_app(settings).openapi()["paths"]
    assert paths["/v1/chunk"]["post"]["operationId"] == "chunk_text"
    assert paths["/v1/chunk/batch"]["post"]["operationId"] == "chunk_batch"
    assert paths["/v1/presets"]["get"]["operationId"] == "list_presets"
