"""A worker's lease on a job: held while it lives, given up before it can lapse, and fencing what it writes.

arq marks a job it starts "in progress" (a key with an expiry); while the key exists no other worker
starts the job, and when it vanishes the job is run again. The worker that claims the job writes its own
token into that key with an expiry of INGESTION_MCP_JOB_LEASE_S and renews it while it works, so a killed
worker's job runs again after at most one lease. Three rules make "a job never runs twice at once" hold
when the broker freezes, restarts or is unreachable:

- renewal only extends the key while it still holds this worker's token (a script: compare, then extend);
  a renewal that finds another token, or none, means the lease is lost;
- the worker keeps its own deadline on its monotonic clock (the send time of the last renewal that
  succeeded, plus the lease): the key expires no earlier than that. Before the deadline comes within
  MARGIN, the job stops itself (unless it is committing), so it is over before any other worker can start it;
- a commit carries the time the lease still covers (commit_within_ms): the gateway commits only within it.
  arq's clean-up after a job (finish_job) touches the job only while this worker holds the key.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from arq.constants import in_progress_key_prefix

from .job import Job
from .queue import RUNNING_TTL_S, record_key

# How long before its deadline a lease counts as lost: a commit has this much time to travel and land
# (a third of the lease when that is shorter, for the short leases of tests).
MARGIN_S = 3.0

_CLAIM = """#!lua flags=allow-oom
-- KEYS: record, arq's in-progress key. ARGV: record as read, claimed record, ttl s, token, lease ms
if redis.call('get', KEYS[1]) ~= ARGV[1] then return 0 end
if redis.call('exists', KEYS[2]) == 0 then return -1 end
redis.call('set', KEYS[1], ARGV[2], 'EX', ARGV[3])
redis.call('set', KEYS[2], ARGV[4], 'PX', ARGV[5])
return 1
"""
_RENEW = """#!lua flags=allow-oom
-- KEYS: arq's in-progress key. ARGV: token, lease ms
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end
return 0
"""
# arq's finish_job / finish_failed_job, fenced: nothing is touched while another worker holds the job.
_FINISH = """#!lua flags=allow-oom
-- KEYS: in-progress, retry, job, abort set, queue. ARGV: our token ('' if none), finish '1'|'0', score+, job id
local holder = redis.call('get', KEYS[1])
if holder and holder ~= ARGV[1] and not (ARGV[1] == '' and holder == '1') then return 0 end
redis.call('del', KEYS[1])
if ARGV[2] == '1' then
  redis.call('del', KEYS[2], KEYS[3])
  redis.call('zrem', KEYS[4], ARGV[4])
  redis.call('zrem', KEYS[5], ARGV[4])
elseif ARGV[3] ~= '' then
  redis.call('zincrby', KEYS[5], ARGV[3], ARGV[4])
end
return 1
"""


def new_token(worker: str, attempt: int) -> str:
    return f"{worker}:{attempt}:{uuid.uuid4().hex[:8]}"


@dataclass
class Lease:
    """This worker's hold on one job (see the module's text)."""

    redis: Any
    job_id: str
    token: str
    seconds: float
    valid_until: float = field(default_factory=time.monotonic)
    lost: bool = False

    @property
    def key(self) -> str:
        return in_progress_key_prefix + self.job_id

    @property
    def margin(self) -> float:
        return min(MARGIN_S, self.seconds / 3)

    def remaining(self) -> float:
        return self.valid_until - time.monotonic()

    @property
    def expiring(self) -> bool:
        """True once the lease may lapse before a commit could land: the job must stop."""
        return self.lost or self.remaining() < self.margin

    def commit_budget_ms(self) -> int | None:
        """How long a commit may still take to land while this lease holds (the gateway's commit deadline)."""
        return 0 if self.lost else max(0, int((self.remaining() - self.margin) * 1000))

    async def renew(self) -> bool:
        """Extend the lease if this worker still holds it; False (and lost) when another token, or none, is there."""
        sent = time.monotonic()
        script = self.redis.register_script(_RENEW)
        held = bool(await script(keys=[self.key], args=[self.token, int(self.seconds * 1000)]))
        if held:
            self.valid_until = sent + self.seconds
        else:
            self.lost = True
        return held


async def claim(redis: Any, job_id: str, attempt: int, token: str, lease_s: float) -> tuple[Job, Lease] | None:
    """Take the job for its ``attempt``-th start: the record says so and arq's in-progress key holds our token.

    None if the job ended meanwhile (cancelled while queued, finished by an earlier try, expired) or arq's key
    is already gone (its lease lapsed before this start could claim it: another worker will start it)."""
    script = redis.register_script(_CLAIM)
    while True:
        raw = await redis.get(record_key(job_id))
        if raw is None:
            return None
        job = Job.from_record(json.loads(raw))
        if job.finished:
            return None
        job.attempt, job.current_step = attempt, "starting"
        sent = time.monotonic()
        args = [raw, json.dumps(job.record()), RUNNING_TTL_S, token, int(lease_s * 1000)]
        taken = await script(keys=[record_key(job_id), in_progress_key_prefix + job_id], args=args)
        if taken == 1:
            return job, Lease(redis, job_id, token, lease_s, valid_until=sent + lease_s)
        if taken == -1:
            return None


async def finish_fenced(redis: Any, job_id: str, token: str | None, *, finish: bool, score: int | None) -> bool:
    """arq's clean-up of a job (done: off the queue; not done: back on it, ``score`` later), only while this worker
    (``token``) or nobody holds the job. False when another worker holds it: then nothing is touched."""
    from arq.constants import abort_jobs_ss, job_key_prefix, retry_key_prefix

    from .queue import QUEUE

    script = redis.register_script(_FINISH)
    keys = [in_progress_key_prefix + job_id, retry_key_prefix + job_id, job_key_prefix + job_id, abort_jobs_ss, QUEUE]
    args = [token or "", "1" if finish else "0", "" if score is None else score, job_id]
    return bool(await script(keys=keys, args=args))
