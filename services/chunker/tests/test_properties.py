"""Property tests: random text and Markdown, random window and overlap; every promise holds."""

from __future__ import annotations

import itertools

from chunker_service.chunker import TextChunker
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

_WORD = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=30
) | st.sampled_from(["the", "model", "token", "https://ex.com/a/b", "é", "🎉", "日本語", "x" * 150, "a.b,c;d"])
_SEP = st.sampled_from([" ", " ", " ", "\n", "\n\n", "\r\n", "\t", ". ", "  \n \n", ""])
_LINE = st.sampled_from(["# H1", "## H2", "### H3", "```", "~~~", "#", "    # code", "- item", "> quote"])


@st.composite
def _text(draw) -> str:
    parts = []
    for _ in range(draw(st.integers(1, 60))):
        if draw(st.integers(0, 9)) == 0:
            parts.append("\n" + draw(_LINE) + " " + draw(_WORD) + "\n")
        else:
            parts.append(draw(_WORD) + draw(_SEP))
    return "".join(parts)


@st.composite
def _window(draw) -> tuple[int, int]:
    window = draw(st.integers(16, 120))
    return window, draw(st.integers(0, window - 1))


_SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_SETTINGS
@given(text=_text(), window=_window(), markdown=st.booleans())
def test_random_text_meets_every_promise(chunker: TextChunker, check, text, window, markdown) -> None:
    size, overlap = window
    result = chunker.chunk(text, window=size, overlap=overlap, markdown=markdown)
    check(text, result, size, overlap)


@_SETTINGS
@given(text=st.text(min_size=1, max_size=400), window=_window())
def test_arbitrary_unicode_meets_every_promise(chunker: TextChunker, check, text, window) -> None:
    size, overlap = window
    check(text, chunker.chunk(text, window=size, overlap=overlap), size, overlap)


_PROSE_WORDS = st.sampled_from(["the", "cell", "protein", "gene", "study", "results", "patients", "model", "data"])


@_SETTINGS
@given(words=st.lists(_PROSE_WORDS, min_size=40, max_size=500), window=_window())
def test_prose_overlaps_exactly_as_configured(chunker: TextChunker, counter, words, window) -> None:
    # Words of one token each, single spaces: each chunk repeats exactly `overlap` tokens before the
    # previous chunk's end, or all the text there is when less (the checker above only bounds the
    # overlap from above), unless the window is full: a part that cannot be cut ("the." is two tokens,
    # more than a window of 16 with overlap 15 leaves) narrows the overlap only as far as it must.
    size, overlap = window
    text = " ".join(words) + "."
    chunks = chunker.chunk(text, window=size, overlap=overlap, markdown=False).chunks
    for previous, chunk in itertools.pairwise(chunks):
        shared = counter.count(text[chunk.start : previous.end]) if chunk.start < previous.end else 0
        wanted = min(overlap, counter.count(text[: previous.end]))
        assert shared == wanted or (shared < wanted and chunk.token_count == size), (size, overlap, previous, chunk)
