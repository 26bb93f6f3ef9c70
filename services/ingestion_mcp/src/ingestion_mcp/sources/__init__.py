"""Where documents come from: URLs, local paths, git repositories (all handled as hostile).

The domain layer under the MCP tools: build one `SourcePolicy` from settings at start-up and pass it in.
Every failure is a `SourceError(code, message, suggestion)`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .detect import Kind, detect_kind
    from .download import download_target, sanitize_filename, save_download
    from .errors import ERROR_CODES, SourceError
    from .fetch import FetchedResource, fetch_url
    from .html import HtmlDocument, html_to_markdown
    from .netguard import VettedTarget, vet_url
    from .paths import ensure_inside, resolve_allowed
    from .policy import AllowList, SourcePolicy
    from .repo import ProgressCallback, RepoSnapshot, clone_repo
    from .repo_files import RepoDocument, SkippedFile

# Loaded on first use: importing one submodule (say .errors) must not load them all (.html is slow).
_EXPORTS = {
    "Kind": ".detect",
    "detect_kind": ".detect",
    "download_target": ".download",
    "sanitize_filename": ".download",
    "save_download": ".download",
    "ERROR_CODES": ".errors",
    "SourceError": ".errors",
    "FetchedResource": ".fetch",
    "fetch_url": ".fetch",
    "HtmlDocument": ".html",
    "html_to_markdown": ".html",
    "VettedTarget": ".netguard",
    "vet_url": ".netguard",
    "ensure_inside": ".paths",
    "resolve_allowed": ".paths",
    "AllowList": ".policy",
    "SourcePolicy": ".policy",
    "ProgressCallback": ".repo",
    "RepoSnapshot": ".repo",
    "clone_repo": ".repo",
    "RepoDocument": ".repo_files",
    "SkippedFile": ".repo_files",
}
__all__ = [
    "ERROR_CODES",
    "AllowList",
    "FetchedResource",
    "HtmlDocument",
    "Kind",
    "ProgressCallback",
    "RepoDocument",
    "RepoSnapshot",
    "SkippedFile",
    "SourceError",
    "SourcePolicy",
    "VettedTarget",
    "clone_repo",
    "detect_kind",
    "download_target",
    "ensure_inside",
    "fetch_url",
    "html_to_markdown",
    "resolve_allowed",
    "sanitize_filename",
    "save_download",
    "vet_url",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value
