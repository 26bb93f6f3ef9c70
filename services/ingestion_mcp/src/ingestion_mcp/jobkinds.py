"""The job kinds: every piece of long work as a name plus JSON parameters, so that a queue can carry it.

A tool validates its arguments, resolves what only the replica knows (the collection, the folder),
and submits (kind, params) to the job store. Whoever runs the job (this process, or a worker on the
queue) looks the kind up here and calls it with the app state it opened itself. Results are JSON-ready.
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable
from dataclasses import asdict
from typing import Any

from .errors import ToolFailure
from .jobs import ProgressFn
from .pipeline import BatchItem, IngestOutcome
from .state import AppState

KindFn = Callable[[AppState, dict[str, Any], ProgressFn], Awaitable[Any]]
JOB_KINDS: dict[str, KindFn] = {}


def job_kind(name: str) -> Callable[[KindFn], KindFn]:
    def register(fn: KindFn) -> KindFn:
        JOB_KINDS[name] = fn
        return fn

    return register


async def run_kind(state: AppState, kind: str, params: dict[str, Any], progress: ProgressFn) -> Any:
    """Run one job of ``kind``; its parameters are copied, so a retry sees them as they were submitted."""
    fn = JOB_KINDS.get(kind)
    if fn is None:
        raise ToolFailure(
            f"Unknown job kind {kind!r}.",
            "The worker and the server run different versions; deploy the same version of both.",
            code="INTERNAL_ERROR",
        )
    return await fn(state, copy.deepcopy(params), progress)


def outcome_of(result: dict[str, Any]) -> IngestOutcome:
    """An ingest job's result (JSON) as the outcome the tools shape their answers from."""
    return IngestOutcome(**result)


@job_kind("ingest_document")
async def ingest_document(state: AppState, params: dict[str, Any], progress: ProgressFn) -> dict[str, Any]:
    path = params.pop("file_path")
    return asdict(await state.ingestor.ingest_file(path, **params, progress=progress))


@job_kind("ingest_text")
async def ingest_text(state: AppState, params: dict[str, Any], progress: ProgressFn) -> dict[str, Any]:
    text = params.pop("text")
    return asdict(await state.ingestor.ingest_text(text, **params, progress=progress))


@job_kind("ingest_from_url")
async def ingest_from_url(state: AppState, params: dict[str, Any], progress: ProgressFn) -> dict[str, Any]:
    url = params.pop("url")
    outcome = await state.ingestor.ingest_url(
        url, policy=state.policy, default_source="domain", **params, progress=progress
    )
    return asdict(outcome)


@job_kind("ingest_batch")
async def ingest_batch(state: AppState, params: dict[str, Any], progress: ProgressFn) -> dict[str, Any]:
    from .profiles.ingestion.batch import summarize

    batch = [BatchItem(**item) for item in params.pop("items")]
    outcomes = await state.ingestor.ingest_many(batch, **params, progress=progress)
    return summarize(batch, outcomes)


@job_kind("fetch_file")
async def fetch_file(state: AppState, params: dict[str, Any], progress: ProgressFn) -> dict[str, Any]:
    from .profiles.docs_server.jobs import DocsContext, fetch_file_job
    from .profiles.docs_server.models import FileOptions

    options = FileOptions(**params["options"])
    docs = DocsContext(state, state.policy)
    return await fetch_file_job(docs, params["url"], params["filename"], params["folder"], options, progress)


@job_kind("fetch_repo")
async def fetch_repo(state: AppState, params: dict[str, Any], progress: ProgressFn) -> dict[str, Any]:
    from .profiles.docs_server.jobs import DocsContext, fetch_repo_job
    from .profiles.docs_server.models import RepoOptions

    options = RepoOptions(**params["options"])
    docs = DocsContext(state, state.policy)
    return await fetch_repo_job(docs, params["url"], params["branch"], options, progress)
