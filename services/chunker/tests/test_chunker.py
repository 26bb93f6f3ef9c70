"""The chunking domain against the real tokenizer: offsets, coverage, bounds, headings, hostile text."""

from __future__ import annotations

import base64
import itertools
import random

import pytest
from chunker_service.chunker import TextChunker
from chunker_service.tokens import MAX_CHARS_PER_TOKEN, TokenCounter

WORDS = [
    "the",
    "retrieval",
    "model",
    "reads",
    "passages",
    "of",
    "text",
    "and",
    "the",
    "index",
    "returns",
    "the",
    "nearest",
    "ones",
    "quickly",
]


def _prose(seed: int, paragraphs: int, words: tuple[int, int] = (20, 120)) -> str:
    rng = random.Random(seed)
    out = []
    for _ in range(paragraphs):
        sentences = []
        for _ in range(rng.randint(1, 6)):
            sentence = " ".join(rng.choice(WORDS) for _ in range(rng.randint(*words) // 4))
            sentences.append(sentence.capitalize() + rng.choice([".", "!", "?", ";"]))
        out.append(" ".join(sentences))
    return "\n\n".join(out)


@pytest.mark.parametrize(("window", "overlap"), [(200, 40), (100, 30), (400, 60), (16, 15), (32, 0)])
def test_prose_meets_every_promise(chunker: TextChunker, check, window: int, overlap: int) -> None:
    text = _prose(1, 40)
    result = chunker.chunk(text, window=window, overlap=overlap)
    check(text, result, window, overlap)
    assert len(result.chunks) > 1


def test_chunks_fill_the_window_and_overlap_the_previous_one(chunker: TextChunker, counter: TokenCounter) -> None:
    text = _prose(2, 60)
    chunks = chunker.chunk(text, window=200, overlap=40).chunks
    sizes = [c.token_count for c in chunks[1:-1]]
    assert sum(sizes) / len(sizes) > 120, "windows are mostly full"
    shared = [counter.count(text[b.start : a.end]) for a, b in itertools.pairwise(chunks) if b.start < a.end]
    assert len(shared) >= len(chunks) // 2, "consecutive chunks overlap"
    assert max(shared) <= 40 and sum(shared) / len(shared) > 15


def test_zero_overlap_means_disjoint_chunks(chunker: TextChunker) -> None:
    chunks = chunker.chunk(_prose(3, 20), window=64, overlap=0).chunks
    assert all(b.start >= a.end for a, b in itertools.pairwise(chunks))


def test_total_tokens_is_the_count_of_the_whole_text(chunker: TextChunker, counter: TokenCounter) -> None:
    text = "# Title\n\n" + _prose(4, 15) + "\n\n## Sub\n\nhttps://example.com/a?b=c " + "x" * 300
    assert chunker.chunk(text, window=100, overlap=20).total_tokens == counter.count(text)


def test_offsets_are_exact_in_repetitive_text(chunker: TextChunker, check) -> None:
    # Searching for a chunk's text would find the wrong copy here; the offsets come from the split.
    text = "same words again " * 400
    result = chunker.chunk(text, window=20, overlap=5)
    check(text, result, 20, 5)
    assert result.chunks[-1].end == len(text.rstrip())


def test_heading_paths_and_sections(chunker: TextChunker, check) -> None:
    text = (
        "Preface text.\n\n# Guide\n\nIntro.\n\n## Install\n\n### Linux\n\n" + _prose(5, 6) + "\n\n"
        "```bash\n# not a heading\napt install thing\n```\n\n### Mac\n\nbrew.\n\n# Appendix\n\nEnd.\n"
    )
    result = chunker.chunk(text, window=64, overlap=10)
    check(text, result, 64, 10)
    by_path: dict[tuple[str, ...], list[str]] = {}
    for c in result.chunks:
        by_path.setdefault(c.heading_path, []).append(text[c.start : c.end])
    assert list(by_path) == [
        (),
        ("Guide",),
        ("Guide", "Install", "Linux"),
        ("Guide", "Install", "Mac"),
        ("Appendix",),
    ]
    # An empty section's heading travels with the text under it (headings.py): no chunk is "## Install" alone.
    assert by_path[("Guide", "Install", "Linux")][0].startswith("## Install\n\n### Linux")
    assert any("# not a heading" in t for t in by_path[("Guide", "Install", "Linux")])


def test_no_chunk_spans_two_sections(chunker: TextChunker) -> None:
    text = "# A\n\none two three\n\n# B\n\nfour five six\n"
    chunks = chunker.chunk(text, window=200, overlap=40).chunks
    assert [text[c.start : c.end] for c in chunks] == ["# A\n\none two three", "# B\n\nfour five six"]
    plain = chunker.chunk(text, window=200, overlap=40, markdown=False).chunks
    assert [text[c.start : c.end] for c in plain] == [text.strip()]
    assert plain[0].heading_path == ()


def test_a_section_that_fits_the_window_is_one_chunk(chunker: TextChunker, counter: TokenCounter, check) -> None:
    # An abstract of 150-200 tokens was cut at window - overlap (160) and its tail embedded again with
    # 40 tokens of overlap: two chunks, ~1.3x the tokens, the meaning split for nothing.
    abstract = _prose(8, 3, words=(40, 60))
    while counter.count(abstract) <= 170:
        abstract += " " + _prose(9, 1, words=(8, 12))
    assert 170 < counter.count(abstract) <= 200
    for text in (abstract, "Title of the paper\n\n" + abstract[: len(abstract) * 9 // 10]):
        result = chunker.chunk(text, window=200, overlap=40, markdown=False)
        check(text, result, 200, 40)
        assert [(c.start, c.end) for c in result.chunks] == [(0, len(text.rstrip()))]
        assert result.chunks[0].token_count == counter.count(text.strip())
    # Each Markdown section that fits is whole; one that does not is still cut with overlap.
    long = _prose(10, 12)
    text = f"# Short\n\n{abstract}\n\n# Long\n\n{long}\n\n# Also short\n\nA line.\n"
    result = chunker.chunk(text, window=200, overlap=40)
    check(text, result, 200, 40)
    paths = [c.heading_path for c in result.chunks]
    assert paths.count(("Short",)) == 1 and paths.count(("Also short",)) == 1
    assert paths.count(("Long",)) > 2
    short = result.chunks[0]
    assert text[short.start : short.end] == f"# Short\n\n{abstract}"
    # A heading with no text of its own travels with the section after it, which is then cut as before if the two
    # do not fit together: the heading never joins the section before it.
    text = f"# Intro\n\nA line.\n\n# Part\n\n## Chapter\n\n{abstract}\n"
    window = counter.count(f"## Chapter\n\n{abstract}")  # the chapter fits alone, not with "# Part"
    result = chunker.chunk(text, window=window, overlap=40)
    check(text, result, window, 40)
    assert text[result.chunks[0].start : result.chunks[0].end] == "# Intro\n\nA line."
    assert text[result.chunks[1].start :].startswith("# Part\n\n## Chapter")
    assert result.chunks[1].heading_path == ("Part", "Chapter")


@pytest.mark.parametrize(
    "word",
    [
        "https://example.com/" + "/".join(f"segment{i}" for i in range(300)) + "?q=1",
        base64.b64encode(random.Random(7).randbytes(6000)).decode(),
        "x" * 20_000,
        "supercalifragilistic" * 200,
    ],
    ids=["url", "base64", "one-letter", "long-word"],
)
def test_words_longer_than_the_window_are_split(chunker: TextChunker, check, word: str) -> None:
    text = f"Before the run. {word} after the run."
    result = chunker.chunk(text, window=32, overlap=8)
    check(text, result, 32, 8)
    assert all(c.end - c.start <= 32 * MAX_CHARS_PER_TOKEN for c in result.chunks)
    assert len(result.chunks) > 2


def test_crlf_text(chunker: TextChunker, check) -> None:
    text = "# Title\r\n\r\n" + _prose(8, 10).replace("\n", "\r\n") + "\r\n## Next\r\nline\r\n"
    result = chunker.chunk(text, window=50, overlap=10)
    check(text, result, 50, 10)
    assert result.chunks[-1].heading_path == ("Title", "Next")
    assert all("\r" not in text[c.start] + text[c.end - 1] for c in result.chunks)


def test_unicode_emoji_and_cjk(chunker: TextChunker, check) -> None:
    text = (
        "# Überschrift 🎉\n\nCafé naïve façade — “quotes” 👩‍👩‍👧 emoji 🇫🇷 flags.\n\n"
        + "日本語の文章です。次の文もあります\uff01" * 40
        + "\n\n"
        + "Ελληνικά κείμενα και русский текст. " * 30
    )
    result = chunker.chunk(text, window=24, overlap=6)
    check(text, result, 24, 6)
    assert result.chunks[0].heading_path == ("Überschrift 🎉",)


def test_whitespace_only_text_has_no_chunks(chunker: TextChunker) -> None:
    result = chunker.chunk(" \n\t\r\n  ", window=200, overlap=40)
    assert result.chunks == [] and result.total_tokens == 0


def test_control_characters_and_zero_width_text(chunker: TextChunker, check) -> None:
    text = "a\x00b\x01c " * 50 + "\u200b\ufeff" * 40 + " end"
    check(text, chunker.chunk(text, window=16, overlap=4), 16, 4)


def test_overlap_must_be_smaller_than_the_window(chunker: TextChunker) -> None:
    with pytest.raises(ValueError, match="smaller than the window"):
        chunker.chunk("text", window=16, overlap=16)
