"""What BM25 and the embedding model see of a chunk, and the document rebuilt from its chunks."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .lexical import Analysis, analyze

# Milvus VARCHAR limit. A server counts bytes, Lite counts characters: stay under it in bytes.
MAX_VARCHAR_BYTES = 65_535
HEADING_SEPARATOR = " > "


def truncate_utf8(text: str, max_bytes: int = MAX_VARCHAR_BYTES) -> str:
    """``text`` cut to at most ``max_bytes`` of UTF-8, never inside a character."""
    data = text.encode("utf-8")
    if len(data) <= max_bytes:
        return text
    return data[:max_bytes].decode("utf-8", errors="ignore")


def _context(title: str, heading_path: Sequence[str]) -> list[str]:
    parts = [title.strip()] if title.strip() else []
    headings = [h.strip() for h in heading_path if h.strip()]
    # The last heading repeats the title in many documents; say it once.
    if headings and parts and headings[0] == parts[0]:
        headings = headings[1:]
    if headings:
        parts.append(HEADING_SEPARATOR.join(headings))
    return parts


def passage_text(title: str, heading_path: Sequence[str], text: str) -> str:
    """The text the embedding model reads: title, heading path, then the chunk text."""
    return "\n".join([*_context(title, heading_path), text])


def search_text(
    title: str, heading_path: Sequence[str], text: str, analysis: Analysis = "raw", language: str = "en"
) -> str:
    """The text BM25 indexes: the same context words as the embedding (so titles match keywords), analysed
    in the document's ``language`` (lexical.py)."""
    return truncate_utf8(analyze("\n".join([*_context(title, heading_path), text]), analysis, language))


@dataclass(frozen=True)
class ChunkSpan:
    index: int
    text: str
    start: int
    end: int


def _offsets_usable(chunks: Sequence[ChunkSpan]) -> bool:
    if not chunks or all(c.start == 0 and c.end == 0 for c in chunks):
        return False
    previous_start = -1
    for chunk in chunks:
        # A chunk may carry more than its span in front (a table chunk repeats its table's header rows).
        if chunk.end - chunk.start > len(chunk.text) or chunk.start < previous_start:
            return False
        previous_start = chunk.start
    return True


def _span(chunk: ChunkSpan) -> str:
    """The part of a chunk's text that lies at its offsets: its last end - start characters."""
    return chunk.text[len(chunk.text) - (chunk.end - chunk.start) :]


def _gap(length: int) -> str:
    # The chunker trims whitespace at chunk edges; what it cut between two chunks was a line
    # or paragraph break in Markdown, so newlines of the same length put it back.
    return "\n" * length


def rebuild_text(chunks: Sequence[ChunkSpan]) -> str:
    """The document text from its chunks, ordered by index, overlaps removed by offsets (``layout``)."""
    return layout(chunks).text


@dataclass(frozen=True)
class Layout:
    text: str
    # Where each chunk's own text begins in ``text``, by chunk index: for a chunk after a gap, where the gap
    # ends; for an overlapping chunk, where what it adds begins. A chunk inside text already written is absent.
    starts: dict[int, int]
    by_offsets: bool  # laid out at the chunks' offsets (else joined by blank lines)
    origin: int = 0  # the source offset of the text's first character

    def position(self, chunk: ChunkSpan, offset: int) -> int:
        """Where an offset in a chunk's text lies in ``text`` (a table chunk's repeated header rows in front
        of its span lie where the span begins)."""
        if not self.by_offsets:
            return self.starts.get(chunk.index, 0) + offset
        return chunk.start - self.origin + max(0, offset - (len(chunk.text) - (chunk.end - chunk.start)))


def layout(chunks: Sequence[ChunkSpan]) -> Layout:
    """The document text from its chunks, and where each chunk lies in it.

    When every chunk's text ends with its ``end - start`` characters of source (a table chunk carries its
    header rows in front), the chunks are laid out at their offsets: equal to the source text where they
    cover it; trimmed whitespace between chunks comes back as newlines. Without usable offsets the chunk
    texts are joined by blank lines.
    """
    ordered = sorted(chunks, key=lambda c: c.index)
    starts: dict[int, int] = {}
    if not _offsets_usable(ordered):
        position = 0
        for chunk in ordered:
            starts[chunk.index] = position
            position += len(chunk.text) + 2
        return Layout("\n\n".join(c.text for c in ordered), starts, by_offsets=False)
    pieces: list[str] = []
    origin = cursor = ordered[0].start
    for chunk in ordered:
        if chunk.end <= cursor:
            continue  # entirely inside text already written
        if chunk.start >= cursor:
            pieces.append(_gap(chunk.start - cursor))
            starts[chunk.index] = chunk.start - origin
            pieces.append(_span(chunk))
        else:
            starts[chunk.index] = cursor - origin
            pieces.append(_span(chunk)[cursor - chunk.start :])
        cursor = chunk.end
    return Layout("".join(pieces), starts, by_offsets=True, origin=origin)
