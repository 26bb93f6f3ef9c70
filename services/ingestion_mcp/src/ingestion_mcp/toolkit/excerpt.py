"""A long passage cut for a concise answer, around the words the query asked for.

A concise search answer shows at most ``limit`` characters of a passage. Cutting at the start hid the match when a
chunk holds it past that point (a section's first chunk fills the embedding window: the sentence an agent searched
for sat 600+ characters in, and the top hit showed none of it). The cut is the window holding the most distinct
query words, started at the beginning of its sentence; without a word in common (a match by meaning), the start.
"""

from __future__ import annotations

import re

_WORD = re.compile(r"[^\W_]{3,}|\d+")
_SENTENCE_START = re.compile(r"(?:[.!?:;]\s+|\n+)")
BACK = 160  # how far before the first word a sentence start is looked for
MARK = "…"


def excerpt(text: str, query: str, limit: int) -> str:
    """``text`` whole when it fits ``limit``; otherwise a window of ``limit`` characters with "…" where cut."""
    if len(text) <= limit:
        return text
    start = _best_start(text, query, limit)
    end = min(start + limit, len(text))
    return f"{MARK if start else ''}{text[start:end]}{MARK if end < len(text) else ''}"


def _best_start(text: str, query: str, limit: int) -> int:
    wanted = {word.casefold() for word in _WORD.findall(query)}
    hits = [(m.start(), m.group().casefold()) for m in _WORD.finditer(text) if m.group().casefold() in wanted]
    if not hits:
        return 0
    best, best_count = 0, len({word for at, word in hits if at + len(word) <= limit})
    for at, _ in hits:
        start = _sentence_start(text, at)
        count = len({word for where, word in hits if start <= where and where + len(word) <= start + limit})
        if count > best_count:
            best, best_count = start, count
    return best


def _sentence_start(text: str, at: int) -> int:
    """Where the sentence holding ``at`` begins, if that is at most BACK characters before it; else ``at``."""
    begin = max(at - BACK, 0)
    starts = [m.end() for m in _SENTENCE_START.finditer(text, begin, at)]
    if starts:
        return starts[-1]
    return 0 if begin == 0 else at
