"""The one error every source fetcher raises: a stable code, what went wrong, what to do next."""

from __future__ import annotations

from typing import Final

# Codes shared with the docs-server API (fetch_file / fetch_repo) plus the network-safety ones.
INVALID_URL: Final = "INVALID_URL"
DOWNLOAD_FAILED: Final = "DOWNLOAD_FAILED"
FILE_TOO_LARGE: Final = "FILE_TOO_LARGE"
UNSUPPORTED_FORMAT: Final = "UNSUPPORTED_FORMAT"
INVALID_PATH: Final = "INVALID_PATH"
INVALID_REPO_URL: Final = "INVALID_REPO_URL"
REPO_TOO_LARGE: Final = "REPO_TOO_LARGE"
REPOMIX_FAILED: Final = "REPOMIX_FAILED"
URL_BLOCKED: Final = "URL_BLOCKED"
TLS_ERROR: Final = "TLS_ERROR"
TIMEOUT: Final = "TIMEOUT"

ERROR_CODES: Final = frozenset(
    {
        INVALID_URL,
        DOWNLOAD_FAILED,
        FILE_TOO_LARGE,
        UNSUPPORTED_FORMAT,
        INVALID_PATH,
        INVALID_REPO_URL,
        REPO_TOO_LARGE,
        REPOMIX_FAILED,
        URL_BLOCKED,
        TLS_ERROR,
        TIMEOUT,
    }
)


class SourceError(Exception):
    """A source could not be read; `message` names the cause, `suggestion` the next step."""

    def __init__(self, code: str, message: str, suggestion: str, *, status: int | None = None) -> None:
        if code not in ERROR_CODES:
            raise ValueError(f"unknown source error code {code!r}")
        super().__init__(message)
        self.code = code
        self.message = message
        self.suggestion = suggestion
        self.status = status  # the HTTP status when the remote server answered with an error

    def __str__(self) -> str:
        return f"{self.code}: {self.message} {self.suggestion}"

    def __repr__(self) -> str:
        return f"SourceError({self.code!r}, {self.message!r}, {self.suggestion!r})"
