"""The HTTP contract, pinned: a change to routes or models shows up in this snapshot's diff."""

from __future__ import annotations

import json
import os
from pathlib import Path

from vector_gateway.main import create_app
from vector_gateway.settings import GatewaySettings

SNAPSHOT = Path(__file__).parent / "snapshots" / "openapi.json"
OPERATIONS = {
    "list_collections", "list_collection_names", "create_collection", "get_collection", "delete_collection",
    "upsert_document", "upsert_documents", "list_documents", "get_document", "get_document_chunks",
    "get_document_structure", "delete_document", "search",
    "embed", "embed_passages", "embedding_model", "relabel_document", "find_documents", "document_stamps", "healthz",
    "readyz",
    "add_vector", "search_vectors", "delete_vector", "get_vector_store", "take_write_order", "keep_original",
    "page_image",
}  # fmt: skip


def test_openapi_matches_the_snapshot(tmp_path: Path) -> None:
    # No lifespan runs: building the schema needs neither the model nor Milvus.
    schema = create_app(GatewaySettings(milvus_uri=str(tmp_path / "m.db"))).openapi()
    operations = {op["operationId"] for path in schema["paths"].values() for op in path.values()}
    assert operations == OPERATIONS
    rendered = json.dumps(schema, indent=2, sort_keys=True) + "\n"
    if os.environ.get("UPDATE_SNAPSHOTS") == "1":
        SNAPSHOT.write_text(rendered, encoding="utf-8")
    assert SNAPSHOT.exists(), f"No snapshot at {SNAPSHOT}: run with UPDATE_SNAPSHOTS=1 once"
    assert rendered == SNAPSHOT.read_text(encoding="utf-8"), "OpenAPI changed: rerun with UPDATE_SNAPSHOTS=1"
