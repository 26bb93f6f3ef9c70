"""The start-up sweep removes rows of versions the registry never committed, and nothing else."""

from __future__ import annotations

from vector_gateway.where import Eq


async def test_sweep_removes_uncommitted_rows_only(open_gateway, tmp_path, upsert, make_doc) -> None:
    async with open_gateway(tmp_path / "sweep.db") as (client, app):
        service = app.state.gateway
        await service.sweep_uncommitted()  # the start-up sweep may still be running: let it finish
        doc = make_doc("live.md", ["Live okapi chunk.", "Second okapi chunk."])
        live = (await upsert(client, "sweep", doc))["doc_id"]
        rows = service.store.query("sweep", Eq("doc_id", live), ["*"])
        # A killed writer leaves rows of an uncommitted version, of a known and of a never-committed document.
        orphans = [row | {"chunk_id": f"{row['chunk_id']}-dead", "version": "deadbeef"} for row in rows]
        orphans += [
            row | {"chunk_id": f"ghost-{i}", "doc_id": "ghost", "version": "cafe"} for i, row in enumerate(rows)
        ]
        service.store.insert("sweep", [{k: v for k, v in row.items() if k != "sparse"} for row in orphans])
        service.store.flush("sweep")
        assert service.store.count("sweep") == 6

        assert await service.sweep_uncommitted() == 4
        assert service.store.count("sweep") == 2
        content = (await client.get(f"/v1/collections/sweep/documents/{live}")).json()["content"]
        assert "Live okapi chunk." in content and "Second okapi chunk." in content
        assert await service.sweep_uncommitted() == 0
