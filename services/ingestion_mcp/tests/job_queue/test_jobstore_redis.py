"""The job store on a real Redis: what one replica records, every replica answers."""

from __future__ import annotations

import json
import time

import anyio
import pytest
from arq.constants import job_key_prefix
from ingestion_mcp.errors import ToolFailure
from ingestion_mcp.jobs import Job
from ingestion_mcp.jobs.queue import ACTIVE, QUEUE, RECENT, RedisJobStore, record_key
from ingestion_mcp.settings import McpSettings

from .conftest import claim_as_worker


async def test_a_job_accepted_by_one_replica_is_seen_by_another(
    replica: RedisJobStore, other_replica: RedisJobStore
) -> None:
    job = await replica.submit("ingest_text", {"text": "x" * 100, "collection": "c"}, "notes")
    seen = await other_replica.get(job.id)
    assert seen is not None and (seen.status, seen.current_step, seen.type) == ("running", "queued", "ingest_text")
    assert [j.id for j in await other_replica.active()] == [job.id]
    assert await replica.redis.zscore(QUEUE, job.id) is not None, "the job is on the arq queue"
    assert await other_replica.get("job_unknown") is None


async def test_progress_result_and_timings_travel(replica: RedisJobStore, other_replica: RedisJobStore) -> None:
    job = await replica.submit("ingest_text", {"text": "y"}, "notes")
    claimed = await claim_as_worker(replica, job.id, 1)
    assert claimed is not None
    await claimed.advance(0.4, "embedding")
    await replica.save(claimed, fenced=True)
    mid = await other_replica.get(job.id)
    assert mid is not None and (mid.progress, mid.current_step, mid.attempt) == (40.0, "embedding", 1)
    claimed.finish(result={"status": "indexed", "chunks": 3})
    await replica.save(claimed, fenced=True)
    done = await other_replica.get(job.id)
    assert done is not None and done.status == "completed" and done.result == {"status": "indexed", "chunks": 3}
    assert set(done.step_ms) >= {"starting", "embedding"} and done.end_time is not None
    assert await other_replica.active() == []
    ttl = await replica.redis.ttl(record_key(job.id))
    assert 0 < ttl <= replica.retention_s, "a finished job is kept for the retention time, then dropped"


async def test_progress_never_goes_back_across_a_retry(replica: RedisJobStore) -> None:
    job = await replica.submit("ingest_text", {"text": "z"}, "notes")
    first = await claim_as_worker(replica, job.id, 1)
    assert first is not None
    await first.advance(0.6, "embedding")
    await replica.save(first, fenced=True)
    second = await claim_as_worker(replica, job.id, 2)  # the first worker died; another runs it again
    assert second is not None
    await second.advance(0.1, "reading")
    await replica.save(second, fenced=True)
    again = await replica.get(job.id)
    assert again is not None and again.progress == 60.0 and again.attempt == 2


async def test_a_queued_job_cancelled_on_another_replica_never_runs(
    replica: RedisJobStore, other_replica: RedisJobStore
) -> None:
    job = await replica.submit("ingest_text", {"text": "w"}, "notes")
    cancelled = await other_replica.cancel(job.id, "on request")
    assert cancelled is not None and cancelled.status == "cancelled"
    assert await claim_as_worker(replica, job.id, 1) is None, "a worker that picks it up finds it ended"
    assert await replica.redis.zscore(QUEUE, job.id) is None, "it left the queue"
    assert await replica.redis.exists(job_key_prefix + job.id) == 0, "its payload is gone"
    assert await replica.redis.sismember(ACTIVE, job.id) == 0


async def test_a_running_job_gets_a_cancel_request(replica: RedisJobStore, other_replica: RedisJobStore) -> None:
    job = await replica.submit("ingest_text", {"text": "v"}, "notes")
    assert await claim_as_worker(replica, job.id, 1) is not None
    still = await other_replica.cancel(job.id, "on request")
    assert still is not None and still.status == "running", "the worker stops it at its next stage"
    assert await replica.cancel_requested(job.id) == "on request"


async def test_ended_jobs_are_listed_by_every_replica_the_last_to_end_first(
    replica: RedisJobStore, other_replica: RedisJobStore
) -> None:
    """What the console's jobs page shows after a job ends, whichever replica answers (issue 23)."""
    done, failed, queued, running = [await replica.submit("ingest_text", {"text": t}, t) for t in "dfqr"]
    for job_id, ending in ((done.id, {"result": {"status": "indexed"}}),
                           (failed.id, {"failure": ToolFailure("Bad.", "Fix it.", code="X")})):  # fmt: skip
        claimed = await claim_as_worker(replica, job_id, 1)
        assert claimed is not None
        claimed.finish(**ending)  # type: ignore[arg-type]  # result or failure, as a worker ends a job
        await replica.save(claimed, fenced=True)
        time.sleep(0.002)  # distinct end times
    await other_replica.cancel(queued.id, "on request")  # a queued job's cancel ends it (compare-and-set)
    assert await claim_as_worker(replica, running.id, 1) is not None
    ended = await other_replica.recent(10)
    assert [(j.id, j.status) for j in ended] == [(queued.id, "cancelled"), (failed.id, "failed"),
                                                (done.id, "completed")]  # fmt: skip
    assert ended[1].error == "Bad." and [j.id for j in await replica.active()] == [running.id]
    assert [j.id for j in await replica.recent(1)] == [queued.id]
    await replica.redis.delete(record_key(failed.id))  # its retention ran out
    assert [j.id for j in await other_replica.recent(10)] == [queued.id, done.id]
    assert await replica.redis.zscore(RECENT, failed.id) is None, "an expired record leaves the list"


async def test_failures_keep_their_code(replica: RedisJobStore, other_replica: RedisJobStore) -> None:
    job = await replica.submit("fetch_file", {"url": "u"}, "fetch")
    claimed = await claim_as_worker(replica, job.id, 1)
    assert claimed is not None
    claimed.finish(failure=ToolFailure("Download failed.", "Check the URL.", code="DOWNLOAD_FAILED"))
    await replica.save(claimed, fenced=True)
    seen = await other_replica.get(job.id)
    assert seen is not None and seen.failure is not None
    assert (seen.status, seen.error, seen.suggestion, seen.failure.code) == (
        "failed", "Download failed.", "Check the URL.", "DOWNLOAD_FAILED",
    )  # fmt: skip


async def test_oversized_parameters_are_refused_with_what_to_do(replica: RedisJobStore) -> None:
    with pytest.raises(ToolFailure) as refused:
        await replica.submit("ingest_text", {"text": "a" * (replica.max_payload_bytes + 1)}, "huge")
    assert refused.value.code == "PAYLOAD_TOO_LARGE" and "file" in (refused.value.suggestion or "")
    assert "INGESTION_MCP_MAX_PAYLOAD_MB" in refused.value.message, "the error names the one cap and its setting"
    assert await replica.active() == []


async def test_an_unreachable_broker_is_a_clear_error_within_a_bounded_time() -> None:
    store = RedisJobStore("redis://127.0.0.1:1/0", timeout_s=1.0)
    started = time.monotonic()
    with pytest.raises(ToolFailure) as down:
        await store.get("job_x")
    assert down.value.code == "SERVICE_UNAVAILABLE" and "broker" in down.value.message
    assert "Searches and document reads still work" in down.value.message
    assert time.monotonic() - started < 5
    await store.aclose()


async def test_a_job_is_queued_as_json_with_its_write_order(replica: RedisJobStore) -> None:
    """The queue carries JSON (write access to Redis must not mean code execution), and the job's write order."""
    first = await replica.submit("ingest_text", {"text": "q"}, "one")
    second = await replica.submit("ingest_text", {"text": "r"}, "two")
    payloads = [json.loads(await replica.redis.get(job_key_prefix + job.id)) for job in (first, second)]
    (id1, kind1, params1, order1), (_, _, _, order2) = (payload["a"] for payload in payloads)
    assert (id1, kind1, params1) == (first.id, "ingest_text", {"text": "q"})
    assert isinstance(order1, int) and order2 > order1, "the later submission carries the larger order"


def test_records_round_trip() -> None:
    job = Job(id="job_1", type="ingest_text", description="d")
    job.finish(failure=ToolFailure("m", "s", code="TIMEOUT"))
    back = Job.from_record(job.record())
    assert back.record() == job.record() and back.finished


async def test_folder_records_and_the_watching_lead_live_in_redis(queue_settings: McpSettings) -> None:
    """What watching keeps with a broker: records every replica reads, and a lead one replica holds at a time."""
    from ingestion_mcp.ingest.acquire import now_iso
    from ingestion_mcp.ingest.folders import LastSync, RedisFolders
    from ingestion_mcp.ingest.watch import RedisLeadership

    one, other = RedisFolders(queue_settings), RedisFolders(queue_settings)
    await one.change("c", "/d", watch=True, exclude=["drafts/*"], owner="ann")
    last = LastSync(at=now_iso(), trigger="watch", seconds=0.4, counts={"added": 1})
    await other.change("c", "/d", last_sync=last)  # another replica's write: a field of its own, nothing lost
    await other.change("c", "/d", changed_since=3)
    (seen,) = await one.all()
    assert (seen.watch, seen.exclude, seen.owner, seen.last_sync, seen.changed_since) == (
        True, ["drafts/*"], "ann", last, 3,
    )  # fmt: skip
    assert await one.forget("c") == 1 and await other.all() == []

    settings = queue_settings.model_copy(update={"watch_lease_s": 3})
    first, second = RedisLeadership(settings), RedisLeadership(settings)
    assert await first.hold() and await first.hold()  # taken, then renewed
    assert not await second.hold()
    await first.release()
    assert await second.hold()
    await anyio.sleep(3.5)  # a lead no longer renewed (its process died) lapses ...
    assert await first.hold()  # ... and another takes it
    assert not await second.hold()
    await first.release()
