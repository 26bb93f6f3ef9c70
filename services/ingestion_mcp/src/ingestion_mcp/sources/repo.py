"""fetch_repo: a shallow `git` clone of a vetted URL into a temp dir, selected files as Markdown documents."""

from __future__ import annotations

import asyncio
import inspect
import re
import shutil
import tempfile
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from . import repo_files
from .errors import REPO_TOO_LARGE, REPOMIX_FAILED, TIMEOUT, SourceError
from .gitcli import GitRunner, RepoTarget, validate_ref, validate_repo_url
from .policy import MiB, SourcePolicy
from .repo_files import RepoDocument, SkippedFile

ProgressCallback = Callable[[float, str], Awaitable[None] | None]
_FULL_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_RENDER_BATCH = 64


@dataclass(frozen=True)
class RepoSnapshot:
    """The selected files of one commit, each a Markdown document headed by its path."""

    url: str
    ref: str | None
    commit: str
    documents: tuple[RepoDocument, ...]
    skipped: tuple[SkippedFile, ...]


async def clone_repo(
    url: str,
    branch: str | None = None,
    *,
    policy: SourcePolicy,
    include: Sequence[str] | None = None,
    exclude: Sequence[str] | None = None,
    max_files: int | None = None,
    show_line_numbers: bool = True,
    max_total_bytes: int | None = None,
    timeout: float | None = None,
    progress_cb: ProgressCallback | None = None,
) -> RepoSnapshot:
    """Clone `url` at `branch` (branch, tag or full commit sha; None: the default branch) and render it.

    Raises SourceError: INVALID_REPO_URL, URL_BLOCKED, REPO_TOO_LARGE, REPOMIX_FAILED, TIMEOUT.
    """
    target = await validate_repo_url(url, policy)
    ref = validate_ref(branch)
    include = list(include) if include else list(repo_files.DEFAULT_INCLUDE)
    exclude = [*repo_files.DEFAULT_EXCLUDE, *(exclude or ())]
    limit_files = max_files or policy.repo_max_files
    limit_bytes = max_total_bytes or policy.repo_max_total_bytes
    report = _Progress(progress_cb)
    workdir = Path(tempfile.mkdtemp(prefix="ingest-repo-"))
    try:
        async with asyncio.timeout(timeout or policy.repo_timeout_s):
            await report(0.0, "cloning")
            git = GitRunner(workdir, target, policy)
            commit = await _checkout(git, target, ref)
            await report(0.5, "selecting")
            candidates = await asyncio.to_thread(_select, git.worktree, include, exclude, limit_files, url)
            documents, skipped = await _render_all(candidates, show_line_numbers, limit_bytes, policy, report)
    except TimeoutError as exc:
        raise SourceError(
            TIMEOUT,
            f"Repository processing timed out after {timeout or policy.repo_timeout_s:g} s ({url}).",
            "Retry later, or narrow includePatterns / pass a smaller branch; very large repositories are refused.",
        ) from exc
    finally:
        await asyncio.to_thread(shutil.rmtree, workdir, True)
    if not documents:
        raise SourceError(
            REPOMIX_FAILED,
            f"No text files in {url} matched includePatterns {include[:8]}{'...' if len(include) > 8 else ''}.",
            "Check the patterns (e.g. ['docs/**/*.md', '*.py']) and the branch; binary files are always skipped.",
        )
    await report(1.0, "done")
    return RepoSnapshot(target.display, ref, commit, tuple(documents), tuple(skipped))


async def _checkout(git: GitRunner, target: RepoTarget, ref: str | None) -> str:
    if ref is not None and _FULL_SHA.fullmatch(ref.lower()):
        await git.fetch_commit(ref.lower())
    else:
        await git.clone(ref)
    return await git.head_commit()


def _select(root: Path, include: list[str], exclude: list[str], max_files: int, url: str) -> list[tuple[str, Path]]:
    candidates = sorted(repo_files.candidate_files(root, include, exclude))
    if len(candidates) > max_files:
        raise SourceError(
            REPO_TOO_LARGE,
            f"Repository {url} has {len(candidates):,} files matching the include patterns; "
            f"the limit is maxFiles={max_files:,}.",
            "Narrow includePatterns (e.g. ['docs/**/*.md', 'src/**/*.py']), add excludePatterns, or raise maxFiles.",
        )
    return candidates


async def _render_all(
    candidates: list[tuple[str, Path]],
    line_numbers: bool,
    limit_bytes: int,
    policy: SourcePolicy,
    report: _Progress,
) -> tuple[list[RepoDocument], list[SkippedFile]]:
    documents: list[RepoDocument] = []
    skipped: list[SkippedFile] = []
    total = 0
    for start in range(0, len(candidates), _RENDER_BATCH):
        batch = candidates[start : start + _RENDER_BATCH]
        rendered = await asyncio.to_thread(_render_batch, batch, line_numbers, policy.repo_max_file_bytes)
        for item in rendered:
            if isinstance(item, SkippedFile):
                skipped.append(item)
                continue
            total += item.size_bytes
            if total > limit_bytes:
                raise SourceError(
                    REPO_TOO_LARGE,
                    f"The selected files hold more than {limit_bytes / MiB:.0f} MiB of text (stopped at {item.path}).",
                    "Narrow includePatterns to the folders you need (e.g. ['docs/**']) or add excludePatterns.",
                )
            documents.append(item)
        await report(0.6 + 0.4 * min(1.0, (start + len(batch)) / max(1, len(candidates))), "rendering")
    return documents, skipped


def _render_batch(
    batch: list[tuple[str, Path]], line_numbers: bool, max_bytes: int
) -> list[RepoDocument | SkippedFile]:
    out: list[RepoDocument | SkippedFile] = []
    for rel, full in batch:
        text, reason = repo_files.read_text_file(full, max_bytes)
        out.append(
            SkippedFile(rel, reason) if text is None else repo_files.render(rel, text, line_numbers=line_numbers)
        )
    return out


class _Progress:
    """Calls the user's callback (sync or async) with non-decreasing fractions; its errors stay its own."""

    def __init__(self, callback: ProgressCallback | None) -> None:
        self._callback = callback
        self._last = -1.0

    async def __call__(self, fraction: float, step: str) -> None:
        if self._callback is None or fraction < self._last:
            return
        self._last = fraction
        result = self._callback(round(fraction, 4), step)
        if inspect.isawaitable(result):
            await result
