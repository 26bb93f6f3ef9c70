"""A queued job belongs to the token's subject that submitted it, in the record every replica and worker reads."""

from __future__ import annotations

import json

from ingestion_mcp.access.policy import Caller, Grant, acting_as
from ingestion_mcp.jobs.queue import RedisJobStore, record_key

from .conftest import claim_as_worker


async def test_the_owner_travels_with_the_job_record(replica: RedisJobStore, other_replica: RedisJobStore) -> None:
    with acting_as(Caller("alice", (Grant("alice-*", "write"),))):
        job = await replica.submit("ingest_text", {"text": "x" * 100, "collection": "alice-notes"}, "notes")
    stored = json.loads(await replica.redis.get(record_key(job.id)))
    assert stored["owner"] == "alice"
    seen = await other_replica.get(job.id)
    assert seen is not None and seen.owner == "alice"
    assert Caller("alice", ()).owns(seen.owner) and not Caller("bob", (Grant("*", "write"),)).owns(seen.owner)
    assert Caller("root", (Grant("*", "admin"),)).owns(seen.owner)
    claimed = await claim_as_worker(replica, job.id, 1)
    assert claimed is not None and claimed.owner == "alice"  # the worker acts on alice's behalf
