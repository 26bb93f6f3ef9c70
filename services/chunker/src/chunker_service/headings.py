"""No chunk made only of headings or markup: a heading travels with the text under it.

The splitter can leave a heading alone: a section with nothing but its title before a sub-section, or a
heading whose paragraph is too big to share the window with it. Such a chunk embeds close to any query
about its topic and says nothing. Each *bare* span (after removing heading lines, HTML comments such as
docling's ``<!-- image -->`` and markup characters, no letter or digit is left) is joined to the span
after it, so the chunk starts at the heading; if that would exceed the window it joins the span before it.
It stays alone only when it fits with neither (a heading longer than the preset's overlap, between spans
that fill the window; never with the presets' overlaps of 30 to 60 tokens and headings shorter than
that), so no text is lost, and when the whole text is headings.
"""

from __future__ import annotations

import dataclasses
import re

from .markdown import heading_starts
from .spans import BaseSpan
from .tokens import MAX_CHARS_PER_TOKEN

_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)


def is_bare(text: str) -> bool:
    """Whether ``text`` holds nothing but heading lines, HTML comments, whitespace and markup."""
    lines = {offset for offset, _, _ in heading_starts(text)}
    body = "".join(line for offset, line in _lines(text) if offset not in lines)
    return not any(char.isalnum() for char in _COMMENT.sub("", body))


def _lines(text: str) -> list[tuple[int, str]]:
    out, offset = [], 0
    for line in text.splitlines(keepends=True):
        out.append((offset, line))
        offset += len(line)
    return out


def _fits(first: BaseSpan, second: BaseSpan, window: int) -> bool:
    return first.tokens + second.tokens <= window and second.end - first.start <= window * MAX_CHARS_PER_TOKEN


def _join(first: BaseSpan, second: BaseSpan, *, section: int) -> BaseSpan:
    return dataclasses.replace(
        second, start=first.start, section=section, tokens=first.tokens + second.tokens,
        token_starts=list(second.token_starts),
    )  # fmt: skip


def attach_headings(text: str, bases: list[BaseSpan], window: int) -> list[BaseSpan]:
    """``bases`` (in text order) with every bare one joined to a neighbour that has text, or dropped."""
    out: list[BaseSpan] = []
    pending: BaseSpan | None = None
    for base in bases:
        if is_bare(text[base.start : base.end]):
            pending = base if pending is None else _attach_pending(out, pending, base, window)
            continue
        if pending is not None:
            if _fits(pending, base, window):
                base = _join(pending, base, section=base.section)
            else:
                _settle(out, pending, window)
            pending = None
        out.append(base)
    if pending is not None:
        _settle(out, pending, window)
    return out


def _settle(out: list[BaseSpan], pending: BaseSpan, window: int) -> None:
    """A bare span the text after it cannot take: the text before it takes it, or it stays (no text lost)."""
    if out and _fits(out[-1], pending, window):
        out[-1] = _join(out[-1], pending, section=out[-1].section)
    else:
        out.append(pending)


def _attach_pending(out: list[BaseSpan], pending: BaseSpan, base: BaseSpan, window: int) -> BaseSpan:
    """Two bare spans in a row: one pending span if they fit together; otherwise settle the first."""
    if _fits(pending, base, window):
        return _join(pending, base, section=base.section)
    _settle(out, pending, window)
    return base
