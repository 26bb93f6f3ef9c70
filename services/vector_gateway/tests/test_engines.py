"""Which index the gateway opens (engines.py): Lance by default, a Milvus Lite index an earlier version wrote kept
and migrated when asked, Milvus for deployments; and the Lite growth warning (growth.py)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from vector_gateway import engines, growth
from vector_gateway.settings import GatewaySettings

DOCS = {"osprey.md": ["Ospreys dive for fish in cold lakes."], "wrench.md": ["A torque wrench sets a bolt's force."]}


async def _fill(client: Any, upsert: Any, make_doc: Any, collection: str) -> None:
    for source, texts in DOCS.items():
        await upsert(client, collection, make_doc(source, texts))


async def _state(client: Any) -> tuple[list[tuple[str, int, int, str]], list[str]]:
    listed = (await client.get("/v1/collections")).json()["collections"]
    counts = [(c["name"], c["document_count"], c["chunk_count"], c["engine"]) for c in listed]
    hits = (await client.post("/v1/search", json={"query": "fish in lakes", "top_k": 1})).json()["hits"]
    return counts, [h["source"] for h in hits]


def _files(folder: Path) -> dict[str, int]:
    return {str(p.relative_to(folder)): p.stat().st_size for p in sorted(folder.rglob("*")) if p.is_file()}


def test_auto_chooses_lance_but_milvus_for_a_deployment(tmp_path: Path) -> None:
    lite = tmp_path / "milvus.db"
    assert engines.choose(GatewaySettings(milvus_uri=str(lite))) == engines.EngineChoice("lance", "lance")
    assert GatewaySettings(milvus_uri=str(lite)).lance_folder == tmp_path / "lance"
    server = GatewaySettings(milvus_uri="http://milvus:19530")
    assert engines.choose(server) == engines.EngineChoice("milvus", "milvus")
    replicas = GatewaySettings(milvus_uri=str(lite), broker_url="redis://redis:6379/0")
    assert engines.choose(replicas).label == "milvus-lite"
    assert engines.choose(GatewaySettings(milvus_uri=str(lite), index_engine="milvus")).label == "milvus-lite"
    # A Lite index holding only the gateway's own tables (started once, nothing written) is no one's documents.
    (lite / "collections" / "_documents").mkdir(parents=True)
    (lite / "collections" / "_write_leases").mkdir()
    assert engines.choose(GatewaySettings(milvus_uri=str(lite))).engine == "lance"
    (lite / "collections" / "notes").mkdir()
    kept = engines.choose(GatewaySettings(milvus_uri=str(lite)))
    assert (kept.engine, kept.label, kept.lite, kept.migrate) == ("milvus", "milvus-lite", lite, False)
    # Once the Lance folder holds tables, it is the index (the Lite files are left behind, untouched).
    (tmp_path / "lance" / "_documents.lance").mkdir(parents=True)
    assert engines.choose(GatewaySettings(milvus_uri=str(lite))) == engines.EngineChoice("lance", "lance")


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"migrate_lite": True, "index_engine": "milvus"}, "VECTOR_GATEWAY_MIGRATE_LITE=true copies"),
        ({"migrate_lite": True, "milvus_uri": "http://milvus:19530"}, "a server's index moves"),
        ({"migrate_lite": True, "broker_url": "redis://redis:6379/0"}, "a broker for replicas"),
        ({"lance_uri": "s3://bucket/lance"}, "VECTOR_GATEWAY_LANCE_URI='s3://bucket/lance': give a local folder"),
        ({"index_engine": "sqlite"}, "index_engine"),
    ],
)
def test_conflicting_engine_settings_are_refused_at_start(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message.replace("(", r"\(").replace("?", r"\?")):
        GatewaySettings(**{"milvus_uri": "./x.db", **fields})


async def test_an_earlier_lite_index_is_kept_then_migrated_when_asked_and_nothing_is_lost(
    open_gateway: Any, tmp_path: Path, upsert: Any, make_doc: Any, caplog: pytest.LogCaptureFixture
) -> None:
    db = tmp_path / "milvus.db"
    async with open_gateway(db, index_engine="milvus") as (client, _):  # what the earlier default wrote
        await _fill(client, upsert, make_doc, "notes")
        before = await _state(client)
    assert before == ([("notes", 2, 2, "milvus-lite")], ["osprey.md"])
    lite_files = _files(db)

    caplog.set_level(logging.WARNING, "vector_gateway")
    async with open_gateway(db) as (client, _):  # the new default on the old folder: it keeps serving it
        assert await _state(client) == before
    said = [r.getMessage() for r in caplog.records if "written by an earlier version" in r.getMessage()]
    assert len(said) == 1, said
    assert f"`vector-gateway-migrate --milvus-uri {db} --lance-uri {db.with_suffix('.lance')}`" in said[0]
    assert "VECTOR_GATEWAY_MIGRATE_LITE=true" in said[0]
    assert not db.with_suffix(".lance").exists()

    caplog.clear()
    async with open_gateway(db, migrate_lite=True) as (client, _):  # asked: copied at start, served from Lance
        assert await _state(client) == ([("notes", 2, 2, "lance")], ["osprey.md"])
        await upsert(client, "notes", make_doc("heron.md", ["Herons wait in the shallows for frogs."]))
    assert any("copied" in r.getMessage() and "rows in" in r.getMessage() for r in caplog.records)
    assert _files(db) == lite_files  # the Lite index is left exactly as it was: the way back stays open
    async with open_gateway(db) as (client, _):  # the next start finds the Lance tables: no copy, no warning
        counts, _hits = await _state(client)
        assert counts == [("notes", 3, 3, "lance")]


async def test_lite_warns_once_when_a_collection_passes_the_mark_and_lance_never(
    open_gateway: Any,
    tmp_path: Path,
    upsert: Any,
    make_doc: Any,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(growth, "LITE_SLOWS_AT", 3)
    monkeypatch.setattr(growth, "CHECK_EVERY_S", 0.0)
    caplog.set_level(logging.WARNING, "vector_gateway")
    for engine in ("lance", "milvus"):
        db = tmp_path / engine / "milvus.db"
        async with open_gateway(db, index_engine=engine) as (client, _):
            await _fill(client, upsert, make_doc, "big")  # 2 chunks: under the mark
            await upsert(client, "big", make_doc("more.md", ["One.", "Two."]))  # 4: past it
            await upsert(client, "big", make_doc("again.md", ["Three."]))
            await client.get("/v1/collections")
    said = [r.getMessage() for r in caplog.records if "slows past" in r.getMessage()]
    assert len(said) == 1, said
    assert "collection 'big' holds 4 chunks on Milvus Lite" in said[0]
    assert f"vector-gateway-migrate --milvus-uri {tmp_path / 'milvus' / 'milvus.db'}" in said[0]
