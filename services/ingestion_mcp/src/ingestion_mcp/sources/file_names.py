"""File names as document keys and labels: any name the file system holds, written so it can be stored, shown
and turned back into the same file.

A POSIX file name is bytes. Python hands the bytes that are not UTF-8 over as lone surrogates
(`os.fsdecode`'s surrogateescape: b"bad\\xffname.md" -> "bad\\udcffname.md"), which no JSON, HTTP or MCP message
can carry: one such name used to fail a whole sync ("keys.1: Input should be a valid string"). So every path a
sync stores or shows goes through `escaped`:

- a byte that is not UTF-8 -> `\\xHH` (b"bad\\xffname.md" -> "bad\\xffname.md", shown as it reads);
- a control character (newline, tab, DEL, C1), a line or paragraph separator, a bidirectional override (which
  would make a name read backwards) -> `\\uHHHH`;
- a backslash -> `\\\\`, so that the above cannot be forged by a name that holds them literally.

Everything else (accents, NFC and NFD spellings alike, CJK, emoji, spaces, quotes) is kept as it is: an ordinary
name's key is its path, unchanged. `unescaped` reverses it exactly, so a key names one file and one only
(`file_of`).
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

BIDI_CONTROLS = frozenset("\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u061c")
_ESCAPE = re.compile(r"\\(?:(\\)|x([89a-f][0-9a-f])|u([0-9a-f]{4}))")


def _needs_escape(ch: str) -> bool:
    if ch == "\\" or ch in BIDI_CONTROLS:
        return True
    return unicodedata.category(ch) in ("Cc", "Cs", "Zl", "Zp")


def _escape(ch: str) -> str:
    code = ord(ch)
    if ch == "\\":
        return "\\\\"
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (surrogateescape)
        return f"\\x{code - 0xDC00:02x}"
    return f"\\u{code:04x}"


def escaped(name: str) -> str:
    """A name or path (from os.scandir, os.fsdecode) as a printable, storable string; ordinary names unchanged."""
    if name.isprintable() and "\\" not in name and not BIDI_CONTROLS.intersection(name):
        return name  # the usual case, without a look at each character
    return "".join(_escape(ch) if _needs_escape(ch) else ch for ch in name)


def unescaped(text: str) -> str:
    """The name `escaped` was given (lone surrogates where the bytes were not UTF-8). A backslash that starts no
    escape is refused: no key this module wrote holds one."""
    out, at = [], 0
    while (slash := text.find("\\", at)) >= 0:
        match = _ESCAPE.match(text, slash)
        if match is None:
            raise ValueError(f"not an escaped name: the backslash at {slash} starts no escape")
        backslash, byte, char = match.groups()
        out += [text[at:slash], "\\" if backslash else chr(0xDC00 + int(byte, 16)) if byte else chr(int(char, 16))]
        at = match.end()
    out.append(text[at:])
    return "".join(out)


def file_of(key: str) -> Path:
    """The file a path key names (the same bytes the file system gave)."""
    return Path(unescaped(key))
