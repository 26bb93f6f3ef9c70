"""The docs_server profile's background work: download a file or a repository, save it, index it.

Each body runs as a job (jobs.JobManager) and returns a JSON-ready result for get_job_status.
Files are saved under INGESTION_MCP_DOCUMENTS_DIR (never outside it) and indexed from the saved bytes,
so a document's `filePath` is the absolute path of a real file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
from ingestion_contracts.docling import EXTENSIONS

from ...ingest.pipeline import IngestOutcome, Progress
from ...jobs import ProgressFn
from ...jobs.kinds import JobKinds
from ...sources import SourceError, SourcePolicy, clone_repo, download_target, fetch_url, save_download
from ...sources.detect import KIND_EXTENSIONS
from ...sources.policy import MiB
from ...state import AppState
from .models import FileOptions, RepoOptions, as_failure


@dataclass(frozen=True)
class DocsContext:
    """What the docs_server tools share: the app state and the source policy built at start-up."""

    state: AppState
    policy: SourcePolicy

    @property
    def collection(self) -> str:
        return self.state.settings.docs_collection

    @property
    def roots(self) -> list[Path]:
        """Where fetched files are saved: relative folders start at the documents dir."""
        return [self.state.settings.documents_folder]


def stage(progress: ProgressFn, low: float, high: float, names: dict[str, str] | None = None) -> Progress:
    """Map a sub-task's 0..1 progress into low..high of the job, with the spec's step names."""
    last = {"step": ""}

    async def report(fraction: float, step: str) -> None:
        if step == "done":  # the sub-task ended; the job's own next step says what follows
            step = last["step"] or step
        step = (names or {}).get(step, step)
        last["step"] = step
        await progress(low + (high - low) * min(max(fraction, 0.0), 1.0), step)

    return report


def with_extension(filename: str, kind: str) -> str:
    """Keep the caller's name, but make its extension say what the bytes are (docling reads it)."""
    suffix = Path(filename).suffix.lower()
    if suffix in KIND_EXTENSIONS.get(kind, ()) and suffix in EXTENSIONS:
        return filename
    return f"{filename}{KIND_EXTENSIONS[kind][0]}"


def outcome_fields(outcome: IngestOutcome) -> dict[str, Any]:
    return {
        "indexed": True,
        "status": outcome.status,
        "chunksCreated": outcome.chunks,
        "title": outcome.title,
        "warnings": outcome.warnings,
    }


async def index_then_save(
    docs: DocsContext, target: Path, data: bytes, metadata: dict[str, Any], progress: Progress, overwrite: bool
) -> tuple[Path, IngestOutcome]:
    """Index the bytes under the path they will have, then save them there.

    In this order a failed or cancelled ingest leaves no file behind (and an overwritten file intact);
    a save that fails after the index committed takes the document out of the index again."""
    modified = datetime.now(UTC).isoformat(timespec="seconds")
    outcome = await docs.state.ingestor.ingest_bytes(
        data, target.name, collection=docs.collection, key=str(target), last_modified=modified,
        metadata={"file_size": len(data), **metadata}, progress=progress,
    )  # fmt: skip
    try:
        path = await save(docs, data, target, overwrite)
    except BaseException:
        if outcome.status == "indexed":
            await docs.state.library.delete_document(docs.collection, outcome.doc_id)
        raise
    return path, outcome


async def save(docs: DocsContext, data: bytes, target: Path, overwrite: bool) -> Path:
    return await anyio.to_thread.run_sync(
        lambda: save_download(data, target.parent, target.name, overwrite, roots=docs.roots)
    )


async def fetch_file_job(
    docs: DocsContext, url: str, filename: str, folder: str, options: FileOptions, progress: ProgressFn
) -> dict[str, Any]:
    try:
        await progress(0.0, "downloading")
        limit = int(min(options.maxFileSizeMB, docs.state.settings.max_file_mb) * MiB)
        fetched = await fetch_url(url, policy=docs.policy, max_bytes=limit)
        name = with_extension(filename, fetched.kind)
        target = download_target(folder, name, options.overwrite, roots=docs.roots)
        if options.indexAfterSave:
            meta, indexing = {"url": url}, stage(progress, 0.3, 0.95)
            path, outcome = await index_then_save(docs, target, fetched.data, meta, indexing, options.overwrite)
        else:
            await progress(0.3, "saving")
            path, outcome = await save(docs, fetched.data, target, options.overwrite), None
        result: dict[str, Any] = {
            "url": url, "filePath": str(path), "fileSize": fetched.size, "format": fetched.kind, "indexed": False,
        }  # fmt: skip
        if outcome is not None:
            result.update(outcome_fields(outcome))
        return result
    except SourceError as exc:
        raise as_failure(exc) from None


def repo_markdown(url: str, commit: str, documents: list[Any]) -> str:
    """The whole repository as one Markdown file (repomix's markdown style): a header, then each file."""
    header = f"# Repository: {url}\n\nCommit: {commit}. Files: {len(documents)}.\n"
    return "\n\n".join([header, *(doc.markdown for doc in documents)]) + "\n"


def repo_file_name(url: str, branch: str | None) -> str:
    parts = [p for p in re.split(r"[/:]+", url.removesuffix(".git")) if p and p not in ("https", "http", "file")]
    name = "-".join(parts[-2:]) or "repository"
    if branch:
        name = f"{name}@{branch}"
    return re.sub(r"[^A-Za-z0-9._@-]+", "_", name)[:150] + ".md"


async def fetch_repo_job(
    docs: DocsContext, url: str, branch: str | None, options: RepoOptions, progress: ProgressFn
) -> dict[str, Any]:
    try:
        snapshot = await clone_repo(
            url, branch, policy=docs.policy, include=options.includePatterns, exclude=options.excludePatterns,
            max_files=options.maxFiles, show_line_numbers=options.showLineNumbers,
            progress_cb=stage(progress, 0.0, 0.4, {"cloning": "downloading", "selecting": "downloading",
                                                   "rendering": "converting"}),
        )  # fmt: skip
        markdown = repo_markdown(snapshot.url, snapshot.commit, list(snapshot.documents)).encode()
        folder, name = docs.state.settings.docs_repo_folder, repo_file_name(snapshot.url, branch)
        target = download_target(folder, name, True, roots=docs.roots)
        extra = {"url": snapshot.url, "commit": snapshot.commit}
        path, outcome = await index_then_save(docs, target, markdown, extra, stage(progress, 0.45, 1.0), True)
    except SourceError as exc:
        raise as_failure(exc) from None
    warnings = ["removeComments is not supported; comments were kept."] if options.removeComments else []
    result = {
        "repoUrl": snapshot.url, "branch": branch, "commit": snapshot.commit, "filePath": str(path),
        "fileSize": len(markdown), "files": len(snapshot.documents), "skippedFiles": len(snapshot.skipped),
        **outcome_fields(outcome),
    }  # fmt: skip
    result["warnings"] = [*warnings, *result["warnings"]]
    return result


async def fetch_file_kind(state: AppState, params: dict[str, Any], progress: ProgressFn) -> dict[str, Any]:
    options = FileOptions(**params["options"])
    docs = DocsContext(state, state.policy)
    return await fetch_file_job(docs, params["url"], params["filename"], params["folder"], options, progress)


async def fetch_repo_kind(state: AppState, params: dict[str, Any], progress: ProgressFn) -> dict[str, Any]:
    options = RepoOptions(**params["options"])
    docs = DocsContext(state, state.policy)
    return await fetch_repo_job(docs, params["url"], params["branch"], options, progress)


def register_jobs(kinds: JobKinds[AppState]) -> None:
    kinds.add("fetch_file", fetch_file_kind)
    kinds.add("fetch_repo", fetch_repo_kind)
