"""Ignore files in a synced folder: `.gitignore` and `.ingestionignore`, with git's own rules.

A folder sync skips what the user's own tools skip (node_modules/, build output, secrets): every `.gitignore`
in the folder tree applies to its own folder and below, as in git (patterns relative to the file's folder,
`!` negation, `dir/` for folders only, `**`, the last matching line wins, and a deeper file over a shallower
one). A `.ingestionignore` has the same syntax and is read after the `.gitignore` of the same folder, so it
can add patterns or re-include with `!`. The matching is git's own (ingest/gitignore.py, a port of git's dir.c and
wildmatch.c held to `git check-ignore` by a differential test); a `!` cannot re-include a file whose folder is
excluded: that falls out of the walk, which never enters an ignored folder. Each verdict names the ignore file and
line that decided it, so that a sync says how many files each ignore file hid.

Not read: ignore files above the synced folder, `.git/info/exclude` and the user's global excludes (they are
outside what was asked to sync). Lines git would reject (a lone `!`, a trailing backslash) are skipped, as
git skips them.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from .gitignore import Pattern, matching, read_patterns

IGNORE_FILES = (".gitignore", ".ingestionignore")  # read in this order: the second can override the first
MAX_IGNORE_BYTES = 1 << 20


def is_ignore_file(name: str) -> bool:
    return name in IGNORE_FILES


def _read(path: Path) -> bytes:
    """An ignore file's bytes; a link, a non-file or an unreadable file gives none (O_NOFOLLOW)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return b""
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return b""
        return handle.read(MAX_IGNORE_BYTES)


class Ignores:
    """The ignore files of one folder tree, each folder's read once (when the walk or a changed path needs it)."""

    def __init__(self, root: Path, enabled: bool = True) -> None:
        self.root = root
        self.enabled = enabled
        self._files: dict[str, list[tuple[str, list[Pattern]]]] = {}

    def files(self, folder: str) -> list[tuple[str, list[Pattern]]]:
        """(ignore file's folder-relative path, its patterns) for the ignore files in `folder` ("": the root)."""
        if folder not in self._files:
            base = self.root.joinpath(*folder.split("/")) if folder else self.root
            found = []
            for name in IGNORE_FILES:
                patterns = read_patterns(_read(base / name))
                if patterns:
                    found.append((f"{folder}/{name}" if folder else name, patterns))
            self._files[folder] = found
        return self._files[folder]

    def forget(self) -> None:
        """Read the ignore files again when next needed (one of them changed)."""
        self._files.clear()

    def why(self, rel: str, is_dir: bool) -> str | None:
        """The ignore file that hides the folder-relative `rel` (None: not hidden). Its own folders above it are not
        checked: the walk does not enter an ignored folder (see `path_ignored`)."""
        if not self.enabled:
            return None
        parts = rel.split("/")
        for depth in range(len(parts) - 1, -1, -1):  # the deepest ignore file that has a say decides
            below = "/".join(parts[depth:])
            # In one folder .ingestionignore is read after .gitignore: its lines come last, so they win.
            for source, patterns in reversed(self.files("/".join(parts[:depth]))):
                found = matching(patterns, below, is_dir)
                if found is not None:
                    return None if found.negative else source
        return None

    def ignored(self, rel: str, is_dir: bool) -> bool:
        return self.why(rel, is_dir) is not None

    def path_ignored(self, rel: str, is_dir: bool) -> bool:
        """`ignored`, for a path reached without walking to it (a watched change): each folder above it too."""
        parts = rel.split("/")
        return any(self.ignored("/".join(parts[:n]), True) for n in range(1, len(parts))) or self.ignored(rel, is_dir)
