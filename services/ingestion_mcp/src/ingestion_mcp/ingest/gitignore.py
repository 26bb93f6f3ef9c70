"""Git's ignore patterns, matched as git matches them: a port of git's dir.c (parse_path_pattern, match_basename,
match_pathname) and wildmatch.c (WM_PATHNAME) to Python regular expressions.

Why not a library: pathspec's GitIgnoreSpec (which this replaced) and dulwich's IgnoreFilter both take `foo/**` to
exclude the folder `foo` itself, so `foo/**` + `!foo/bar.md` lost foo/bar.md; pathspec also answered "ignored"
for a folder that `!*/` re-includes after `*` (issue 48). Measured against `git check-ignore` on random trees,
pathspec differed on 10 of 300. What git does is small and fully specified by its source; this module follows it
line by line and `tests/.../test_ignore_like_git.py` holds it to git itself on 500 random trees and the idioms.

Git's rules, as implemented:
- a line is split on "\\n" only (a trailing "\\r" dropped); blank lines and lines starting with "#" are skipped;
  trailing spaces are dropped unless escaped ("a\\ "); a leading "!" negates; "\\!" and "\\#" are literal;
- a trailing "/" matches folders only; a pattern with no other "/" matches the name at any depth, one with a "/"
  (leading, inside) is anchored to the ignore file's folder;
- wildmatch with WM_PATHNAME: "*", "?" and "[...]" never match "/"; "**" matches across folders only as "**/" at the
  start, "/**/" inside or "/**" at the end (elsewhere it is "*"); "[!...]" or "[^...]" negates, "[:alpha:]" and the
  other POSIX classes, ranges, "\\" escapes; a pattern with an unclosed "[" or a trailing "\\" matches nothing;
- within a file the last matching line decides; a deeper folder's ignore file decides before a shallower one's;
  a folder that is excluded is never entered, so nothing under it can be re-included (the walk's part).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

NEVER = re.compile(r"(?!)")
CLASSES = {
    "alnum": "a-zA-Z0-9", "alpha": "a-zA-Z", "blank": " \\t", "cntrl": "\\x00-\\x1f\\x7f", "digit": "0-9",
    "graph": "!-~", "lower": "a-z", "print": " -~", "punct": "!-/:-@\\[-`{-~", "space": " \\t\\n\\r\\f\\v",
    "upper": "A-Z", "xdigit": "0-9a-fA-F",
}  # fmt: skip


@dataclass(frozen=True)
class Pattern:
    text: str  # the line as written (for "ignored by" answers)
    regex: re.Pattern[str]
    negative: bool
    dir_only: bool
    basename: bool  # no "/" but a trailing one: matched against the name at any depth


def trim_trailing_spaces(line: str) -> str:
    """git's trim_trailing_spaces: unescaped trailing spaces go; a line ending in a lone backslash is kept whole."""
    last_space, i = None, 0
    while i < len(line):
        ch = line[i]
        if ch == " ":
            last_space = i if last_space is None else last_space
        elif ch == "\\":
            i += 1
            if i >= len(line):
                return line
            last_space = None
        else:
            last_space = None
        i += 1
    return line if last_space is None else line[:last_space]


def parse(line: str) -> Pattern | None:
    """One line of an ignore file (None: a blank line or a comment)."""
    if not line or line.startswith("#"):
        return None
    text = trim_trailing_spaces(line)
    body, negative = (text[1:], True) if text.startswith("!") else (text, False)
    dir_only = body.endswith("/")
    if dir_only:
        body = body[:-1]
    basename = "/" not in body
    if not basename and body.startswith("/"):
        body = body[1:]
    return Pattern(line, compile_wildmatch(body) if body else NEVER, negative, dir_only, basename)


def compile_wildmatch(pattern: str) -> re.Pattern[str]:
    """git's wildmatch(pattern, text, WM_PATHNAME) as one anchored regular expression."""
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "\\":
            if i + 1 >= n:
                return NEVER  # a trailing backslash: git's wildmatch aborts, nothing matches
            out.append(re.escape(pattern[i + 1]))
            i += 2
        elif ch == "*":
            j = i
            while j < n and pattern[j] == "*":
                j += 1
            at_start = i == 0 or pattern[i - 1] == "/"
            if j - i >= 2 and at_start and (j == n or pattern[j] == "/"):
                if j == n:
                    out.append(".*")  # "/**" at the end, or "**" alone: everything below
                else:
                    out.append("(?:.*/)?")  # "**/" at the start or "/**/": zero or more folders
                    j += 1
            else:
                out.append("[^/]*")
            i = j
        elif ch == "?":
            out.append("[^/]")
            i += 1
        elif ch == "[":
            found = _bracket(pattern, i)
            if found is None:
                return NEVER  # an unclosed "[" or an unknown class: git's wildmatch aborts
            piece, i = found
            out.append(piece)
        else:
            out.append(re.escape(ch))
            i += 1
    return re.compile("".join(out) + r"\Z", re.DOTALL)


def _bracket(pattern: str, start: int) -> tuple[str, int] | None:
    """The "[...]" at `start` as a regex class that never matches "/", and the index after it."""
    i, n = start + 1, len(pattern)
    negated = i < n and pattern[i] in "!^"
    i += negated
    members: list[str] = []
    first = True
    while True:
        if i >= n:
            return None
        ch = pattern[i]
        if ch == "]" and not first:
            break
        first = False
        if ch == "\\":
            i += 1
            if i >= n:
                return None
            ch = pattern[i]
        elif ch == "[" and pattern.startswith("[:", i):
            end = pattern.find(":]", i + 2)
            if end < 0:  # not a class: a literal "["
                members.append(re.escape(ch))
                i += 1
                continue
            name = pattern[i + 2 : end]
            if name not in CLASSES:
                return None
            members.append(CLASSES[name])
            i = end + 2
            continue
        if i + 2 < n and pattern[i + 1] == "-" and pattern[i + 2] != "]":
            low, high = ch, pattern[i + 2]
            if pattern[i + 2] == "\\" and i + 3 < n:
                high = pattern[i + 3]
                i += 1
            members.append(f"{re.escape(low)}-{re.escape(high)}" if low <= high else "")
            i += 3
            continue
        members.append(re.escape(ch))
        i += 1
    body = "".join(members)
    if negated:
        return f"[^/{body}]", i + 1
    return (f"(?!/)[{body}]" if body else "(?!)"), i + 1


def read_patterns(data: bytes) -> list[Pattern]:
    """The patterns of an ignore file's bytes (a UTF-8 BOM skipped, lines split on "\\n" as git splits them)."""
    text = data.decode("utf-8", errors="surrogateescape").removeprefix("\ufeff")
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    return [p for p in map(parse, lines) if p is not None]


def matching(patterns: list[Pattern], rel: str, is_dir: bool) -> Pattern | None:
    """The last of these patterns (one ignore file's, relative to its folder) that matches `rel`, or None."""
    name = rel.rsplit("/", 1)[-1]
    for pattern in reversed(patterns):
        if pattern.dir_only and not is_dir:
            continue
        if pattern.regex.match(name if pattern.basename else rel):
            return pattern
    return None
