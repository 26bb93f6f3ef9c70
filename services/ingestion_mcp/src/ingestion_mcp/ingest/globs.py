"""A folder sync's include and exclude globs: checked before anything runs, matched ignoring case, and counted, so
that a glob that matches nothing is named instead of emptying a folder (ingest/sync.py).

- A malformed glob ("[unclosed", an empty one, one that climbs out with "..") is refused with what is wrong.
- They match the folder-relative path or the file name, ignoring case ("*.MD" takes "a.md": a case slip must not
  drop a folder's files), and "dir/" means all under dir.
"""

from __future__ import annotations

import fnmatch
import re
from functools import lru_cache
from pathlib import PurePosixPath

from ..errors import ToolFailure

MAX_PATTERNS = 100
MAX_PATTERN_CHARS = 512
BRACES = re.compile(r"\{([^{}]*,[^{}]*)\}")
# Anchors, an escaped class or dot, alternatives: never in a glob ("README.*" is a glob: not these).
REGEX = re.compile(r"^\^|\$$|\\[.dDwWsSb]|\([^)]*\|[^)]*\)")


def pattern_problem(pattern: str) -> str | None:
    """What is wrong with one include/exclude glob (None: nothing)."""
    if not pattern.strip():
        return "it is empty"
    if len(pattern) > MAX_PATTERN_CHARS:
        return f"it is longer than {MAX_PATTERN_CHARS} characters"
    if any(ord(ch) < 32 for ch in pattern):
        return "it contains control characters"
    if (slip := _slip(pattern)) is not None:
        return slip
    if pattern.startswith("/"):
        return "it starts with '/', but globs match paths inside the folder (e.g. 'docs/*.md')"
    if "\\" in pattern:
        return "it contains '\\': separate folders with '/'"
    if ".." in PurePosixPath(pattern).parts:
        return "it contains '..', which no path inside the folder has"
    return _bracket_problem(pattern)


def _slip(pattern: str) -> str | None:
    """A brace expansion or a regular expression given where a glob goes (issue 48: both matched nothing)."""
    if (braces := BRACES.search(pattern)) is not None:
        head, tail = pattern[: braces.start()], pattern[braces.end() :]
        globs = ", ".join(repr(head + part + tail) for part in braces.group(1).split(","))
        return f"it is a brace expansion, which globs here do not expand; pass one glob each: {globs}"
    if REGEX.search(pattern):
        glob = re.sub(r"\\(.)", r"\1", re.sub(r"\.[*+]", "*", pattern.removeprefix("^").removesuffix("$")))
        instead = f"'{glob}'" if not set("()|+{}") & set(glob) else "one glob per alternative, e.g. '*.md'"
        return f"it looks like a regular expression; globs use '*' for any characters and '?' for one: {instead}"
    return None


def _bracket_problem(pattern: str) -> str | None:
    i, n = 0, len(pattern)
    while i < n:
        if pattern[i] == "[":
            j = i + 1
            if j < n and pattern[j] == "!":
                j += 1
            if j < n and pattern[j] == "]":  # a leading ']' is a member of the set
                j += 1
            while j < n and pattern[j] != "]":
                j += 1
            if j >= n:
                return f"the '[' at position {i + 1} opens a character set that no ']' closes"
            i = j
        i += 1
    return None


def check_patterns(include: tuple[str, ...] | list[str], exclude: tuple[str, ...] | list[str]) -> None:
    """Refuse malformed globs before anything is read or written (a glob that matches nothing empties a folder)."""
    for name, patterns in (("include", include), ("exclude", exclude)):
        if len(patterns) > MAX_PATTERNS:
            raise ToolFailure(
                f"Too many {name} patterns ({len(patterns)}); at most {MAX_PATTERNS}.",
                "Use fewer, broader globs, or an .ingestionignore file in the folder.",
                code="INVALID_PATTERN",
            )
        for pattern in patterns:
            problem = pattern_problem(pattern)
            if problem is not None:
                shown = pattern[:80].encode("unicode_escape").decode()
                raise ToolFailure(
                    f"The {name} pattern '{shown}' is malformed: {problem}. Nothing was synced.",
                    "Globs match the path inside the folder or the file name: '*.md', 'notes/*', '[ab]*.txt'; "
                    "'[[]' matches a literal '['; no regular expressions, no braces.",
                    code="INVALID_PATTERN",
                )


@lru_cache(maxsize=256)
def _compiled(patterns: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(fnmatch.translate(p + "*" if p.endswith("/") else p), re.IGNORECASE) for p in patterns)


def _matches(rel: str, patterns: tuple[str, ...]) -> bool:
    name = rel.rsplit("/", 1)[-1]
    return any(p.match(rel) or p.match(name) for p in _compiled(patterns))


def matches_filters(rel: str, include: tuple[str, ...], exclude: tuple[str, ...]) -> bool:
    """Whether the include/exclude globs take this folder-relative path."""
    if include and not _matches(rel, include):
        return False
    return not _matches(rel, exclude)


def pattern_hits(rel: str, patterns: tuple[str, ...]) -> list[str]:
    """The patterns (one by one) that match this folder-relative path."""
    return [p for p in patterns if _matches(rel, (p,))]
