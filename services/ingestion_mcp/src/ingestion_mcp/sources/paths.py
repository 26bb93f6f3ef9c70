"""Local paths the server may read: only under the configured allowed roots, symlinks resolved strictly."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from .errors import INVALID_PATH, SourceError
from .file_names import escaped


def resolve_allowed(
    path: str | os.PathLike[str], roots: Sequence[str | os.PathLike[str]], *, walked: bool = False
) -> Path:
    """The real path of an existing file under one of `roots`; relative paths start at the first root. `walked`:
    a path a folder walk found, whose name may hold anything a file system allows (a newline, bytes that are not
    UTF-8): judged by where it leads, and named escaped (file_names.py) in errors."""
    real_roots = allowed_real_roots(roots)
    lexical_roots = [Path(os.path.abspath(Path(r).expanduser())) for r in roots]
    candidate = Path(path) if walked else _lexical(path, real_roots, lexical_roots)
    shown = escaped(str(candidate))
    try:
        resolved = candidate.resolve(strict=True)
    except FileNotFoundError as exc:
        raise SourceError(
            INVALID_PATH,
            f"File not found: {shown}.",
            "Verify the file exists and the path is absolute.",
        ) from exc
    except (OSError, RuntimeError) as exc:  # symlink loops, permission problems
        reason = getattr(exc, "strerror", None) or type(exc).__name__
        raise SourceError(
            INVALID_PATH, f"Cannot read {shown}: {reason}.", "Check the path and its permissions."
        ) from exc
    if not inside_any(resolved, real_roots):
        raise _outside(str(path), real_roots, "it is a link that leads outside them")
    if not resolved.is_file():
        raise SourceError(
            INVALID_PATH,
            f"{shown} is not a regular file.",
            "Pass the path of a single document file, not a folder or device.",
        )
    return resolved


def ensure_inside(path: str | os.PathLike[str], roots: Sequence[str | os.PathLike[str]]) -> Path:
    """A path (that may not exist yet, e.g. a download folder) whose existing part lies under a root."""
    real_roots = allowed_real_roots(roots)
    candidate = _lexical(path, real_roots, [Path(os.path.abspath(Path(r).expanduser())) for r in roots])
    existing = candidate
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    resolved = existing.resolve(strict=True) / candidate.relative_to(existing)
    if not inside_any(resolved, real_roots):
        raise _outside(str(path), real_roots, "it resolves outside them")
    return resolved


def allowed_real_roots(roots: Sequence[str | os.PathLike[str]]) -> list[Path]:
    """The allowed folders as real paths (links resolved); none configured is refused."""
    if not roots:
        raise SourceError(
            INVALID_PATH,
            "No folder may be read: INGESTION_MCP_ALLOWED_ROOTS is not set and the MCP client declared no roots.",
            "Set INGESTION_MCP_ALLOWED_ROOTS to the folders documents live in (comma-separated) in the server's "
            "configuration, or open the folder in your client as a workspace root (stdio clients that declare roots); "
            "ingest_from_url and ingest_text need no folder.",
        )
    return [Path(root).expanduser().resolve() for root in roots]


def _lexical(path: str | os.PathLike[str], roots: list[Path], lexical_roots: list[Path]) -> Path:
    text = os.fspath(path)
    if not text or "\x00" in text or any(ord(ch) < 32 for ch in text):
        raise SourceError(
            INVALID_PATH,
            "The path is empty or contains NUL/control characters.",
            "Pass a plain file path such as /data/docs/report.pdf.",
        )
    raw = Path(text).expanduser()
    if ".." in raw.parts:
        raise _outside(text, roots, "it contains '..'")
    candidate = raw if raw.is_absolute() else roots[0] / raw
    # Judge the literal path before touching the disk, so paths outside the roots reveal nothing.
    if not inside_any(candidate, roots + lexical_roots):
        raise _outside(text, roots, "it is outside them")
    return candidate


def _inside(path: Path, root: Path) -> bool:
    return path == root or path.is_relative_to(root)


def inside_any(path: Path, roots: list[Path]) -> bool:
    """Whether `path` lies in one of `roots` (compare real paths with real roots)."""
    return any(_inside(path, root) for root in roots)


def _outside(path: str, roots: list[Path], why: str) -> SourceError:
    allowed = ", ".join(str(root) for root in roots)
    return SourceError(
        INVALID_PATH,
        f"Access denied: {path!r} is not inside the allowed folders ({allowed}); {why}.",
        f"Use a file under {allowed}, or ingest it with ingest_from_url / ingest_text.",
    )
