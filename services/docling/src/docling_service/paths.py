"""Server-side files: a path is read only when it resolves (symlinks included) inside an allowed root."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from servicekit import NotFound, PayloadTooLarge, ServiceError, Unprocessable

_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
_UPLOAD_HINT = "Upload the file to POST /v1/convert instead."


class PathNotAllowed(ServiceError):
    status_code = 403
    code = "PATH_NOT_ALLOWED"


def too_large(size: int | None, max_bytes: int) -> PayloadTooLarge:
    got = f" ({size / 1048576:.1f} MiB)" if size is not None else ""
    return PayloadTooLarge(
        f"The document is larger than the {max_bytes / 1048576:g} MiB limit{got}.",
        suggestion="Split the document into smaller files, or ask the operator to raise DOCLING_MAX_UPLOAD_MB.",
        details={"max_bytes": max_bytes},
    )


def _inside(path: Path, roots: list[Path]) -> bool:
    return any(path == root or path.is_relative_to(root) for root in roots)


def resolve_allowed(raw: str, roots: list[Path]) -> Path:
    """The real path ``raw`` names, if it lies inside one of ``roots`` (already resolved); else 403/422."""
    if not roots:
        raise PathNotAllowed(
            "Server-side path conversion is disabled: DOCLING_ALLOWED_ROOTS is not set on the docling service.",
            suggestion=f"{_UPLOAD_HINT} Or set DOCLING_ALLOWED_ROOTS to the directories the service may read.",
        )
    if "\x00" in raw:
        raise Unprocessable("The path contains a NUL character.", code="INVALID_PATH", suggestion=_UPLOAD_HINT)
    candidate = Path(raw).expanduser()
    if not candidate.is_absolute():
        raise Unprocessable(
            f"The path {raw!r} is relative; give an absolute path.",
            code="INVALID_PATH",
            suggestion=f"Use a path under one of: {', '.join(map(str, roots))}.",
        )
    real = Path(os.path.realpath(candidate))
    if not _inside(real, roots):
        raise PathNotAllowed(
            f"The path {raw!r} is outside the directories this service may read.",
            suggestion=f"Use a path under one of: {', '.join(map(str, roots))}; or: {_UPLOAD_HINT}",
        )
    return real


def _not_found(raw: str) -> NotFound:
    return NotFound(
        f"File not found: {raw}. Verify the file exists and the path is absolute.",
        code="FILE_NOT_FOUND",
        suggestion="Check the spelling and the directory; list the directory to find the right name.",
    )


def _open(real: Path, raw: str) -> int:
    try:
        return os.open(real, _OPEN_FLAGS)
    except FileNotFoundError as exc:
        raise _not_found(raw) from exc
    except IsADirectoryError as exc:
        raise _not_a_file(raw) from exc
    except PermissionError as exc:
        raise PathNotAllowed(
            f"The service may not read {raw!r} (permission denied).",
            code="FILE_NOT_READABLE",
            suggestion=f"Make the file readable by the service user. {_UPLOAD_HINT}",
        ) from exc
    except OSError as exc:  # ELOOP: the last component became a symlink after it was resolved
        raise PathNotAllowed(f"The path {raw!r} could not be opened safely ({exc.strerror}).") from exc


def _not_a_file(raw: str) -> Unprocessable:
    return Unprocessable(
        f"{raw!r} is not a regular file (a directory, device or pipe).",
        code="NOT_A_FILE",
        suggestion="Give the path of one document; convert the files of a directory one by one.",
    )


def read_allowed_file(raw: str, roots: list[Path], max_bytes: int) -> tuple[Path, bytes]:
    """Read a document under an allowed root, at most ``max_bytes``; raises 403/404/413/422 errors."""
    real = resolve_allowed(raw, roots)
    fd = _open(real, raw)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _not_a_file(raw)
        # The opened file is the one checked, even if a directory on the way was swapped meanwhile.
        opened = Path(f"/proc/self/fd/{fd}")
        if opened.exists() and not _inside(Path(os.path.realpath(opened)), roots):
            raise PathNotAllowed(f"The path {raw!r} is outside the directories this service may read.")
        if info.st_size > max_bytes:
            raise too_large(info.st_size, max_bytes)
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(max_bytes + 1)
    finally:
        os.close(fd)
    if len(data) > max_bytes:  # the file grew after fstat
        raise too_large(None, max_bytes)
    return real, data
