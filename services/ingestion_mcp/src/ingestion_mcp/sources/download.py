"""fetch_file's save step: a sanitised name, a path that stays in the folder, an atomic write."""

from __future__ import annotations

import os
import tempfile
import unicodedata
from collections.abc import Sequence
from pathlib import Path

from .errors import INVALID_PATH, SourceError
from .paths import ensure_inside

MAX_NAME_BYTES = 200  # well under the 255-byte limit of common file systems, room for temp suffixes
_WINDOWS_RESERVED = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(1, 10)), *(f"lpt{i}" for i in range(1, 10))}
_UNSAFE = set('<>:"|?*\\/')


def sanitize_filename(name: str) -> str:
    """A plain, visible, bounded file name: basename only, no separators, `..`, control chars or leading dots."""
    text = unicodedata.normalize("NFC", name or "")
    text = text.replace("\\", "/").rsplit("/", 1)[-1]  # basename, whatever separator was used
    cleaned = "".join("_" if ch in _UNSAFE or unicodedata.category(ch)[0] == "C" else ch for ch in text)
    cleaned = cleaned.strip().strip(".").strip()  # no hidden files, no "..", no trailing dots (Windows)
    while ".." in cleaned:
        cleaned = cleaned.replace("..", ".")
    if not cleaned or set(cleaned) <= {"_", " "}:
        raise SourceError(
            INVALID_PATH,
            f"The file name {name!r} has nothing usable left after removing unsafe characters.",
            "Pass a plain file name such as report.pdf (letters, digits, '-', '_', one extension).",
        )
    stem, dot, ext = cleaned.rpartition(".")
    if not dot:
        stem, ext = cleaned, ""
    if stem.lower() in _WINDOWS_RESERVED:
        stem = f"_{stem}"
    ext = ext[:20]
    while len(f"{stem}{dot}{ext}".encode()) > MAX_NAME_BYTES:
        stem = stem[:-1]
    return f"{stem}{dot}{ext}"


def download_target(
    folder: str | os.PathLike[str],
    filename: str,
    overwrite: bool = True,
    *,
    roots: Sequence[str | os.PathLike[str]] | None = None,
) -> Path:
    """Where save_download would write, checked the same way, without touching the disk."""
    directory = ensure_inside(folder, roots) if roots else Path(folder).expanduser().resolve()
    target = directory / sanitize_filename(filename)
    if target.is_symlink():
        raise SourceError(INVALID_PATH, f"Refusing to write through {target}.", "Choose another file name.")
    if target.exists() and not overwrite:
        raise _exists(target)
    return target


def save_download(
    data: bytes,
    folder: str | os.PathLike[str],
    filename: str,
    overwrite: bool = True,
    *,
    roots: Sequence[str | os.PathLike[str]] | None = None,
) -> Path:
    """Write `data` to folder/<sanitised filename> atomically; with `roots`, the folder must lie under one."""
    safe_name = sanitize_filename(filename)
    directory = ensure_inside(folder, roots) if roots else Path(folder).expanduser().resolve()
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SourceError(
            INVALID_PATH, f"Cannot create folder {directory}: {exc}.", "Choose a writable docFolder."
        ) from exc
    directory = directory.resolve(strict=True)
    if roots:
        ensure_inside(directory, roots)  # a symlink created in a race must not carry the write outside
    target = directory / safe_name
    if target.parent != directory or target.is_symlink():
        raise SourceError(INVALID_PATH, f"Refusing to write through {target}.", "Choose another file name.")
    if target.exists() and not overwrite:
        raise _exists(target)
    _write_atomically(data, directory, target, overwrite)
    return target


def _write_atomically(data: bytes, directory: Path, target: Path, overwrite: bool) -> None:
    fd, temp_name = tempfile.mkstemp(prefix=".fetch-", suffix=".part", dir=directory)
    temp = Path(temp_name)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if overwrite:
            os.replace(temp, target)  # atomic; replaces a link itself, never writes through it
        else:
            os.link(temp, target)  # atomic no-clobber: fails if the name appeared meanwhile
    except FileExistsError as exc:
        raise _exists(target) from exc
    except OSError as exc:
        raise SourceError(
            INVALID_PATH, f"Cannot write {target}: {exc}.", "Check the folder's permissions and free space."
        ) from exc
    finally:
        temp.unlink(missing_ok=True)


def _exists(target: Path) -> SourceError:
    return SourceError(
        INVALID_PATH,
        f"{target} already exists and overwrite is false.",
        "Pass another filename, or set options.overwrite=true to replace it.",
    )
