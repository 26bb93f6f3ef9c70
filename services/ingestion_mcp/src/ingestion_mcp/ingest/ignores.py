"""Ignore files in a synced folder: `.gitignore` and `.ingestionignore`, with git's own rules.

A folder sync skips what the user's own tools skip (node_modules/, build output, secrets): every `.gitignore`
in the folder tree applies to its own folder and below, as in git (patterns relative to the file's folder,
`!` negation, `dir/` for folders only, `**`, the last matching line wins, and a deeper file over a shallower
one). A `.ingestionignore` has the same syntax and is read after the `.gitignore` of the same folder, so it
can add patterns or re-include with `!`. The matching is pathspec's `GitIgnoreSpec` (the implementation
black, mypy's plugins and many linters use: it follows git's documented edge cases, e.g. a `!` cannot
re-include a file whose folder is excluded; that falls out of the walk, which never enters an ignored folder).

Not read: ignore files above the synced folder, `.git/info/exclude` and the user's global excludes (they are
outside what was asked to sync). Lines git would reject (a lone `!`, a trailing backslash) are skipped, as
git skips them.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from pathspec import GitIgnoreSpec
from pathspec.patterns.gitignore import GitIgnorePatternError

IGNORE_FILES = (".gitignore", ".ingestionignore")  # read in this order: the second can override the first
MAX_IGNORE_BYTES = 1 << 20


def is_ignore_file(name: str) -> bool:
    return name in IGNORE_FILES


def _read(path: Path) -> list[str]:
    """The lines of an ignore file; a link, a non-file or an unreadable file gives none (O_NOFOLLOW)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return []
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return []
        data = handle.read(MAX_IGNORE_BYTES)
    return data.decode("utf-8", errors="replace").splitlines()


def _spec(lines: list[str]) -> GitIgnoreSpec | None:
    try:
        spec = GitIgnoreSpec.from_lines(lines)
    except GitIgnorePatternError:  # one bad line: keep the others, as git does
        good = []
        for line in lines:
            try:
                GitIgnoreSpec.from_lines([line])
            except GitIgnorePatternError:
                continue
            good.append(line)
        spec = GitIgnoreSpec.from_lines(good)
    return spec if any(p.include is not None for p in spec.patterns) else None


class Ignores:
    """The ignore files of one folder tree, each folder's read once (when the walk or a changed path needs it)."""

    def __init__(self, root: Path, enabled: bool = True) -> None:
        self.root = root
        self.enabled = enabled
        self._specs: dict[str, GitIgnoreSpec | None] = {}

    def spec(self, folder: str) -> GitIgnoreSpec | None:
        """The patterns of the ignore files in the folder-relative `folder` ("" is the root), None when none."""
        if folder not in self._specs:
            base = self.root.joinpath(*folder.split("/")) if folder else self.root
            lines = [line for name in IGNORE_FILES for line in _read(base / name)]
            self._specs[folder] = _spec(lines) if lines else None
        return self._specs[folder]

    def forget(self) -> None:
        """Read the ignore files again when next needed (one of them changed)."""
        self._specs.clear()

    def ignored(self, rel: str, is_dir: bool) -> bool:
        """Whether the folder-relative `rel` is ignored by an ignore file in one of its folders (its own folders
        above it are not checked: the walk does not enter an ignored folder; see `path_ignored`)."""
        if not self.enabled:
            return False
        parts = rel.split("/")
        for depth in range(len(parts) - 1, -1, -1):  # the deepest ignore file that has a say decides
            spec = self.spec("/".join(parts[:depth]))
            if spec is None:
                continue
            verdict = spec.check_file("/".join(parts[depth:]) + ("/" if is_dir else "")).include
            if verdict is not None:
                return verdict
        return False

    def path_ignored(self, rel: str, is_dir: bool) -> bool:
        """`ignored`, for a path reached without walking to it (a watched change): each folder above it too."""
        parts = rel.split("/")
        return any(self.ignored("/".join(parts[:n]), True) for n in range(1, len(parts))) or self.ignored(rel, is_dir)
