"""Where documents come from: URLs, local paths, git repositories (all handled as hostile).

The domain layer under the MCP tools: build one `SourcePolicy` from settings at start-up and pass it in.
Every failure is a `SourceError(code, message, suggestion)`.
"""

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
