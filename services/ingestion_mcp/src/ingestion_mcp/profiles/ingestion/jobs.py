"""The ingestion profile's job kinds: the ways its tools (and the console's upload) ingest, each a name plus JSON
parameters."""

from __future__ import annotations

import base64
from dataclasses import asdict
from typing import Any

from ...ingest.pipeline import BatchItem
from ...jobs import ProgressFn
from ...jobs.kinds import JobKinds
from ...state import AppState
from .batch import summarize
from .sync_tool import sync_folder_job


async def ingest_document(state: AppState, params: dict[str, Any], progress: ProgressFn) -> dict[str, Any]:
    path = params.pop("file_path")
    return asdict(await state.ingestor.ingest_file(path, **params, progress=progress))


async def ingest_text(state: AppState, params: dict[str, Any], progress: ProgressFn) -> dict[str, Any]:
    text = params.pop("text")
    return asdict(await state.ingestor.ingest_text(text, **params, progress=progress))


async def ingest_from_url(state: AppState, params: dict[str, Any], progress: ProgressFn) -> dict[str, Any]:
    url = params.pop("url")
    outcome = await state.ingestor.ingest_url(
        url, policy=state.policy, default_source="domain", **params, progress=progress
    )
    return asdict(outcome)


async def ingest_upload(state: AppState, params: dict[str, Any], progress: ProgressFn) -> dict[str, Any]:
    """A file uploaded in the console (docs/console.md): its bytes travel in the job, its name is its key."""
    data, name = base64.b64decode(params.pop("data_b64")), params.pop("file_name")
    return asdict(await state.ingestor.ingest_bytes(data, name, key=name, **params, progress=progress))


async def ingest_batch(state: AppState, params: dict[str, Any], progress: ProgressFn) -> dict[str, Any]:
    batch = [BatchItem(**item) for item in params.pop("items")]
    outcomes = await state.ingestor.ingest_many(batch, **params, progress=progress)
    return summarize(batch, outcomes)


def register_jobs(kinds: JobKinds[AppState]) -> None:
    for name, fn in (("ingest_document", ingest_document), ("ingest_text", ingest_text),
                     ("ingest_from_url", ingest_from_url), ("ingest_batch", ingest_batch),
                     ("ingest_upload", ingest_upload), ("sync_folder", sync_folder_job)):  # fmt: skip
        kinds.add(name, fn)
