"""The OpenAPI document is a contract: a change shows in the diff. UPDATE_SNAPSHOTS=1 rewrites it."""

from __future__ import annotations

import json
import os
from pathlib import Path

from docling_service.main import create_app
from docling_service.settings import DoclingSettings

SNAPSHOT = Path(__file__).parent / "snapshots" / "openapi.json"


def test_openapi_matches_the_snapshot(settings: DoclingSettings) -> None:
    document = create_app(settings).openapi()
    rendered = json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    if os.environ.get("UPDATE_SNAPSHOTS") == "1":
        SNAPSHOT.parent.mkdir(exist_ok=True)
        SNAPSHOT.write_text(rendered, encoding="utf-8")
    assert SNAPSHOT.exists(), "no snapshot yet: run with UPDATE_SNAPSHOTS=1"
    assert json.loads(SNAPSHOT.read_text(encoding="utf-8")) == json.loads(rendered), (
        "the OpenAPI document changed: review the diff, then run with UPDATE_SNAPSHOTS=1"
    )


def test_operation_ids_and_upload_body(settings: DoclingSettings) -> None:
    paths = create_app(settings).openapi()["paths"]
    assert paths["/v1/convert"]["post"]["operationId"] == "convert_upload"
    assert paths["/v1/convert/path"]["post"]["operationId"] == "convert_path"
    assert paths["/v1/formats"]["get"]["operationId"] == "list_formats"
    body = paths["/v1/convert"]["post"]["requestBody"]["content"]["multipart/form-data"]["schema"]
    assert body["required"] == ["file"] and body["properties"]["file"]["format"] == "binary"
    assert {"413", "415", "422"} <= set(paths["/v1/convert"]["post"]["responses"])
    assert {"403", "404"} <= set(paths["/v1/convert/path"]["post"]["responses"])
