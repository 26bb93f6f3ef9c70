"""Background jobs for long work: the job record (job.py), the in-process store (job_manager.py), job kinds
(kinds.py), the Redis queue (queue.py, queue_worker.py) and its leases (lease.py); docs/jobs.md."""

from .job import (
    RECENT_KEPT,
    UNINTERRUPTIBLE_STEPS,
    Job,
    JobBody,
    JobContext,
    JobStatus,
    JobStore,
    KindRunner,
    ProgressFn,
    current_job,
    in_job,
    new_job_id,
    uninterrupted,
)
from .job_manager import JobManager

__all__ = [
    "RECENT_KEPT",
    "UNINTERRUPTIBLE_STEPS",
    "Job",
    "JobBody",
    "JobContext",
    "JobManager",
    "JobStatus",
    "JobStore",
    "KindRunner",
    "ProgressFn",
    "current_job",
    "in_job",
    "new_job_id",
    "uninterrupted",
]
