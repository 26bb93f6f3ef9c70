"""Token windows over a text: the domain of the service, with no HTTP in it.

How a text becomes chunks:

1. Markdown sections (``markdown.py``): a chunk never spans two sections.
   A section that fits the window (a short note, an abstract, a short manual section) is one chunk as it is:
   cutting it at ``window - overlap`` tokens would embed its tail twice and split its meaning for nothing.
2. Every other section is cut into *base spans* of at most ``window - overlap`` tokens by langchain's
   ``RecursiveCharacterTextSplitter`` (paragraph, line, sentence, clause, then word boundaries),
   run without overlap and without stripping so that its pieces tile the section exactly: the
   offsets come from the tiling, never from searching the text for the chunk.
3. Every base span is counted with the model's tokenizer (one batch call); a span still too
   big (a word longer than the window, a run of [UNK]) is cut at token offsets, and
   neighbours that fit together (a heading left alone before a long paragraph) are joined.
4. Each chunk but a section's first gets up to ``overlap`` tokens of the text before it,
   starting at a word boundary, so a chunk is ``overlap + (window - overlap)`` tokens at most.
5. Every chunk and every overlap is counted again as its own text (one batch call); where
   the sum differs from the parts (tokens merge across a cut), the chunk drops its overlap.
"""

from __future__ import annotations

import itertools
import unicodedata
from dataclasses import dataclass

from langchain_text_splitters import RecursiveCharacterTextSplitter
from tokenizers import Encoding

from .headings import attach_headings, is_bare
from .markdown import Section, split_sections
from .spans import BaseSpan, ChunkSpan
from .tables import header_reserve, with_table_headers
from .tokens import MAX_CHARS_PER_TOKEN, TokenCounter

ENCODE_BATCH = 4096

# Regexes, coarse to fine. Each keeps its whitespace at the end of the piece before it.
SEPARATORS = [
    r"\n[^\S\n]*\n\s*",  # blank line: paragraphs, list blocks, code fences
    r"\n\s*",  # line
    r"(?<=[.!?])\s+|(?<=[\u3002\uff01\uff1f])",  # sentence (and CJK full stop, ! and ?)
    r"(?<=[;:,])\s+|(?<=[\uff1b\uff1a\uff0c\u3001])",  # clause (and CJK ; : , and enumeration comma)
    r"\s+",  # word
]


@dataclass(frozen=True, slots=True)
class ChunkedText:
    chunks: list[ChunkSpan]
    total_tokens: int


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _is_cjk(char: str) -> bool:
    return "\u3000" <= char <= "\u9fff" or "\uac00" <= char <= "\ud7af" or "\uf900" <= char <= "\ufaff"


def _word_start(text: str, offset: int, floor: int) -> bool:
    """Whether a chunk may start at ``offset`` without cutting a word (the tokenizer splits here too)."""
    if offset <= floor:
        return True
    before = text[offset - 1]
    return not before.isalnum() or _is_cjk(before) or _is_cjk(text[offset])


class TextChunker:
    """Splits text into token windows; safe to share between threads."""

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter

    def chunk(self, text: str, *, window: int, overlap: int, markdown: bool = True) -> ChunkedText:
        if not 0 <= overlap < window:
            raise ValueError(f"overlap ({overlap}) must be at least 0 and smaller than the window ({window})")
        sections = split_sections(text, markdown=markdown)
        # Room for a table's header in front of the rows that continue it (tables.py), if wider than the overlap.
        budget = window - max(overlap, header_reserve(text, self.counter, window) if markdown else 0)
        bases, total_tokens = self._whole_sections(text, sections, window, keep=max(overlap, 1))
        whole = {base.section for base in bases}
        pieces = self._split_sections(text, [(i, s) for i, s in enumerate(sections) if i not in whole], budget)
        for i in range(0, len(pieces), ENCODE_BATCH):  # bounded memory: Encodings are large
            group = pieces[i : i + ENCODE_BATCH]
            encodings = self.counter.encode_many([text[s:e] for s, e, _ in group])
            total_tokens += sum(len(e.ids) for e in encodings)
            bases.extend(self._fit(text, group, encodings, budget, keep=max(overlap, 1)))
        bases.sort(key=lambda b: b.start)
        bases = _merge_neighbours(text, bases, budget, keep=max(overlap, 1))
        bases = attach_headings(text, bases, window)  # no chunk of headings or markup alone (headings.py)
        chunks = self._add_overlap(text, sections, bases, window, overlap)
        if markdown:  # a chunk starts at a table row and carries the table's header row (tables.py)
            chunks = with_table_headers(text, chunks, self.counter, window)
        return ChunkedText(chunks=chunks, total_tokens=total_tokens)

    # -- 1. a section that fits the window is one chunk ------------------------------------------
    def _whole_sections(self, text: str, sections: list[Section], window: int, keep: int) -> tuple[list[BaseSpan], int]:
        """One base for each section that fits the window whole, with their token count.

        A section fits when it holds at most ``window`` tokens (and characters) together with the bare sections
        right before it (headings with no text of their own, "## Part" before "### 1. Chapter"): those join the
        chunk after them (headings.py), and a heading that found no room there would join the section before and
        open its section in the wrong chunk. Bare sections themselves are left to the split, as before.
        """
        candidates = []
        for index, section in enumerate(sections):
            start, end = _trim(text, section.start, section.end)
            if start < end and end - start <= window * MAX_CHARS_PER_TOKEN:
                candidates.append((start, end, index))
        counted: dict[int, tuple[int, int, Encoding]] = {}
        for i in range(0, len(candidates), ENCODE_BATCH):
            group = candidates[i : i + ENCODE_BATCH]
            encodings = self.counter.encode_many([text[s:e] for s, e, _ in group])
            counted.update((index, (s, e, enc)) for (s, e, index), enc in zip(group, encodings, strict=True))
        bases: list[BaseSpan] = []
        tokens = 0
        heads, head_start = 0, None  # tokens and start of the bare sections since the last one with text
        for index, section in enumerate(sections):
            if index not in counted:  # empty, or longer than any window: split as before
                body = text[section.start : section.end]
                if body.strip():  # a long bare one (markup only) leaves no room for a section after it
                    heads, head_start = (window + 1, section.start) if is_bare(body) else (0, None)
                continue
            start, end, encoding = counted[index]
            size = len(encoding.ids)
            if is_bare(text[start:end]):
                heads, head_start = heads + size, start if head_start is None else head_start
                continue
            first = start if head_start is None else head_start
            if heads + size <= window and end - first <= window * MAX_CHARS_PER_TOKEN:
                bases.append(BaseSpan(start, end, index, size, [start + a for a, _ in encoding.offsets[-keep:]]))
                tokens += size
            heads, head_start = 0, None
        return bases, tokens

    # -- 2. langchain's recursive split, as exact offsets -------------------------------------
    def _split_sections(
        self, text: str, sections: list[tuple[int, Section]], budget: int
    ) -> list[tuple[int, int, int]]:
        splitter = RecursiveCharacterTextSplitter(
            separators=SEPARATORS,
            is_separator_regex=True,
            keep_separator="end",
            strip_whitespace=False,
            chunk_size=budget,
            chunk_overlap=0,
            length_function=self.counter.size_function(),
        )
        spans: list[tuple[int, int, int]] = []
        for index, section in sections:
            offset = section.start
            for piece in splitter.split_text(text[section.start : section.end]):
                start, end = _trim(text, offset, offset + len(piece))
                if text[offset : offset + len(piece)] != piece:
                    raise RuntimeError("the text splitter changed the text; its pieces no longer tile the input")
                offset += len(piece)
                if start < end:
                    spans.append((start, end, index))
            if offset != section.end:
                raise RuntimeError("the text splitter dropped text; its pieces no longer tile the input")
        return spans

    # -- 3. exact token counts; cut what is still too big --------------------------------------
    def _fit(
        self, text: str, pieces: list[tuple[int, int, int]], encodings: list, budget: int, keep: int
    ) -> list[BaseSpan]:
        """Bases of at most ``budget`` tokens; each keeps the starts of its last ``keep`` tokens."""
        char_cap = budget * MAX_CHARS_PER_TOKEN
        fitted: list[BaseSpan] = []
        while pieces:
            too_big: list[tuple[int, int, int]] = []
            for (start, end, section), encoding in zip(pieces, encodings, strict=True):
                cuts = None
                if len(encoding.ids) > budget or end - start > char_cap:
                    cuts = _cut_points(text, start, end, encoding, budget, char_cap)
                if not cuts:
                    starts = [start + a for a, _ in encoding.offsets[-keep:]]
                    fitted.append(BaseSpan(start, end, section, len(encoding.ids), starts))
                    continue
                for a, b in cuts:
                    a, b = _trim(text, a, b)
                    if a < b:
                        too_big.append((a, b, section))
            pieces = too_big
            encodings = self.counter.encode_many([text[s:e] for s, e, _ in pieces])
        return fitted

    # -- 4/5. overlap, then exact counts of every chunk ----------------------------------------
    def _add_overlap(
        self, text: str, sections: list[Section], bases: list[BaseSpan], window: int, overlap: int
    ) -> list[ChunkSpan]:
        starts = _overlap_starts(text, sections, bases, overlap)
        chunk_texts = [text[s : b.end] for s, b in zip(starts, bases, strict=True)]
        shared = [(i, s, bases[i - 1].end) for i, s in enumerate(starts) if i and s < bases[i - 1].end]
        counts = self.counter.count_many(chunk_texts + [text[s:e] for _, s, e in shared])
        too_much = {i for (i, _, _), n in zip(shared, counts[len(bases) :], strict=True) if n > overlap}
        counts = counts[: len(bases)]
        char_cap = window * MAX_CHARS_PER_TOKEN
        dropped: list[int] = []
        for i, base in enumerate(bases):
            over = i in too_much or counts[i] > window or base.end - starts[i] > char_cap
            out_of_order = i and starts[i] < starts[i - 1]  # the one before dropped its overlap
            if starts[i] < base.start and (over or out_of_order):
                shrunk = self._shrink_overlap(text, sections, bases, i, starts, window, overlap) if over else None
                if shrunk is not None:
                    starts[i], counts[i] = shrunk
                    continue
                starts[i] = base.start
                dropped.append(i)
        recounted = self.counter.count_many([text[bases[i].start : bases[i].end] for i in dropped])
        for i, count in zip(dropped, recounted, strict=True):
            counts[i] = count
        return [
            ChunkSpan(
                start,
                base.end,
                count,
                sections[base.section].heading_path,
                heading_levels=sections[base.section].heading_levels,
            )
            for start, base, count in zip(starts, bases, counts, strict=True)
        ]

    def _shrink_overlap(
        self,
        text: str,
        sections: list[Section],
        bases: list[BaseSpan],
        i: int,
        starts: list[int],
        window: int,
        overlap: int,
    ) -> tuple[int, int] | None:
        """A later start for chunk ``i`` whose overlap was too wide for the window: the earliest word start
        that fits (chunk <= window, overlap <= ``overlap``, in order), with the chunk's count; None if none."""
        base, section_start = bases[i], sections[bases[i].section].start
        floor = max(starts[i - 1], base.end - window * MAX_CHARS_PER_TOKEN)
        candidates = [
            c for c in _previous_tokens(bases, i, overlap)
            if starts[i] < c < base.start and c >= floor and _word_start(text, c, section_start)
        ]  # fmt: skip
        if not candidates:
            return None
        previous_end = bases[i - 1].end
        counts = self.counter.count_many(
            [text[c : base.end] for c in candidates] + [text[c:previous_end] for c in candidates]
        )
        for c, total, shared in zip(candidates, counts, counts[len(candidates) :], strict=False):
            if total <= window and shared <= overlap:
                return c, total
        return None


def _splits_words(gap: str) -> bool:
    """Whether the tokenizer splits at ``gap``, so that the tokens on both sides add up."""
    return any(c in " \t\n\r" or unicodedata.category(c) == "Zs" for c in gap)


def _merge_neighbours(text: str, bases: list[BaseSpan], budget: int, keep: int) -> list[BaseSpan]:
    """Join neighbours that fit together (langchain leaves a heading or a short line alone
    before a paragraph it had to split further)."""
    char_cap = budget * MAX_CHARS_PER_TOKEN
    merged: list[BaseSpan] = []
    for base in bases:
        last = merged[-1] if merged else None
        if (
            last is not None
            and last.section == base.section
            and last.tokens + base.tokens <= budget
            and base.end - last.start <= char_cap
            and _splits_words(text[last.end : base.start])
        ):
            starts = (last.token_starts + base.token_starts)[-keep:]
            merged[-1] = BaseSpan(last.start, base.end, base.section, last.tokens + base.tokens, starts)
        else:
            merged.append(base)
    return merged


def _overlap_starts(text: str, sections: list[Section], bases: list[BaseSpan], overlap: int) -> list[int]:
    """Where each chunk starts: its base, or up to ``overlap`` tokens earlier at a word start."""
    result: list[int] = []
    for i, base in enumerate(bases):
        start = base.start
        if overlap and i and bases[i - 1].section == base.section:
            floor = max(sections[base.section].start, base.start - overlap * MAX_CHARS_PER_TOKEN)
            for candidate in _previous_tokens(bases, i, overlap):
                if candidate >= floor and _word_start(text, candidate, sections[base.section].start):
                    start = candidate
                    break
        if result and start < result[-1]:
            start = min(result[-1], base.start)  # keep chunks in order of start
        result.append(start)
    return result


def _previous_tokens(bases: list[BaseSpan], index: int, count: int) -> list[int]:
    """Start offsets of the ``count`` tokens before ``bases[index]`` in its section, in text order."""
    collected: list[int] = []
    j = index - 1
    while j >= 0 and bases[j].section == bases[index].section and len(collected) < count:
        collected = bases[j].token_starts[-(count - len(collected)) :] + collected
        j -= 1
    return collected


def _cut_points(text: str, start: int, end: int, encoding, budget: int, char_cap: int) -> list[tuple[int, int]]:
    """Cut an over-long span into pieces of about ``budget`` tokens and ``char_cap`` characters.

    The cuts prefer whitespace, then any place the tokenizer splits words, then any token; a
    single token over ``char_cap`` characters (WordPiece's [UNK] for a long word) is cut by
    characters. The pieces are counted again by the caller.
    """
    token_starts = [start + a for a, _ in encoding.offsets]
    cuts: list[int] = []
    piece_start, first = start, 0
    for i, token_start in enumerate(token_starts):
        while token_start - piece_start > char_cap:  # one token longer than the cap
            piece_start += char_cap
            cuts.append(piece_start)
            first = i
        if i - first >= budget or _ends_after(encoding, i, start) - piece_start > char_cap:
            cut = _best_cut(text, token_starts, first, i, piece_start)
            if cut > piece_start:
                cuts.append(cut)
                piece_start = cut
                first = next(k for k in range(first, i + 1) if token_starts[k] >= cut)
    while end - piece_start > char_cap:
        piece_start += char_cap
        cuts.append(piece_start)
    if not cuts and end - start > 1:
        cuts.append(start + (end - start) // 2)  # tokens that share one offset: halve by characters
    if not cuts:
        return []  # one character: nothing left to cut
    bounds = [start, *cuts, end]
    return list(itertools.pairwise(bounds))


def _ends_after(encoding, i: int, start: int) -> int:
    return start + encoding.offsets[i][1]


def _best_cut(text: str, token_starts: list[int], first: int, last: int, floor: int) -> int:
    """Offset to cut before: the latest good token start in the second half of tokens first..last."""
    lowest = first + max(1, (last - first) // 2)
    candidates = range(last, lowest - 1, -1)
    for k in candidates:
        if text[token_starts[k] - 1].isspace():
            return token_starts[k]
    for k in candidates:
        if _word_start(text, token_starts[k], floor):
            return token_starts[k]
    return token_starts[last] if last > first else floor
