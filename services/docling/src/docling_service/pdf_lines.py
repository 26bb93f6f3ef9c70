"""Text lines of the model-free PDF pipeline merged into paragraphs, headings and code (geometry only, no I/O).

The native pipeline reports one item per printed line, without reading structure. Lines are joined
into a paragraph while they follow each other closely on the same page in the same font size.
Headings: where the PDF has an outline, the lines its bookmarks point at (pdf_outline.py), at the bookmark's
level, and nothing else; without one, a short line set in a clearly larger font than the body text, its level
from its numbering ("3.2.1" is level 3; "Chapter 3", "Part II" level 1) or else from its size among the
heading sizes. Lines set in a monospaced font (code, terminal sessions, preformatted text) are a code block:
their line breaks and indentation are kept, and a ``#`` at their start stays code, never a heading.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, replace

from .markdown import Segment
from .pdf_text import ENDS_WITH_ACCENT, clean_text
from .regions import located, union

# A gap wider than this many line heights separates paragraphs (body leading is 0.15-0.5).
PARAGRAPH_GAP = 0.8
# Line heights that differ by more than this fraction are different font sizes.
SIZE_TOLERANCE = 0.15
HEADING_SIZE_RATIO = 1.2
MAX_HEADING_CHARS = 120
# A line ending a sentence that stops this far short of the column's right edge ends its paragraph.
SHORT_LINE = 0.8
_SENTENCE_END = re.compile(r"[.!?:;]['\")\]]?$")
_HYPHENATED = re.compile(r"[^\W\d_]-$")
# A compound printed whole somewhere in the document ("auto-dereference"): broken at its hyphen, it keeps it.
_COMPOUND = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)+")
# A chapter's label before its title ("Chapter 5", "CAPÍTULO 2", "Kapitel 3", "Chapitre 4", "Appendix A"): the
# heading keeps the number, so that the title reads as its bookmark does and an agent finds it by either.
_CHAPTER_LABEL = re.compile(
    r"^(?:chapter|kapitel|chapitre|cap[ií]tulo|capitolo|appendix|anhang|annexe|ap[eé]ndice)\s+"
    r"(\d+|[IVXLCDM]+|[A-Z])\s+(?=\S)",  # not "Chapter 1: Harbour Logistics", a title as it is worded
    re.IGNORECASE,
)
_LAST_WORD = re.compile(r"([^\W\d_]+)-$")
_FIRST_WORD = re.compile(r"^[^\W\d_]+")
# "3.2.1 Title", "A.2 Title": the level is the count of numbers; "Chapter 3", "Part II", "Appendix B": level 1.
_NUMBERED = re.compile(r"^(\d+(?:\.\d+)*|[A-Z](?:\.\d+)+)\.?\s+\S")
_CHAPTER = re.compile(r"^(?:part|chapter|appendix|kapitel|teil|anhang|chapitre|partie|annexe)\s+[\w.]+", re.I)
# Fonts of code: monospaced families as PDF generators name them (TeX's cmtt/lmmono/txtt, Courier, DejaVu Sans
# Mono, Liberation Mono, URW's Nimbus Mono L, Consolas, Menlo, Source Code, Fira Mono/Code, Inconsolata, ...).
_MONO = re.compile(
    r"mono|nimbusmon|courier|cmtt|lmtt|txtt|sftt|beramono|typewriter|consol|menlo|inconsolata|code|lucidaconsole|\btt\d",
    re.I,
)
# A heading is words: mostly letters (a formula fragment such as "(x-t)2+y2 dt" is not).
MIN_HEADING_LETTERS = 0.6
# A displayed formula's line or fragment is no heading, large as its type may be: an operator of a formula
# ("vK,n(x) · x-nW + xD"), or a digit run into a lower-case letter with no word of three letters ("nk2k",
# "x2k": a power's exponent set apart). crc-doc.1.0.pdf had such "headings".
_FORMULA = re.compile(r"[·∑∏∫√≤≥≠≈∈⊕⊗]|\S\s[=+]\s\S")
_SCRIPTED = re.compile(r"(?=.*\d[a-z])(?!.*[^\W\d_]{3})[\w(),\u2032'-]+")  # "Qt5", "X11" stay headings
# Code lines further apart than this many line heights are separate blocks.
CODE_GAP = 1.2


def is_mono_font(name: str) -> bool:
    return bool(_MONO.search(name.split("+", 1)[-1]))


@dataclass(frozen=True)
class Line:
    """One printed line, in top-left coordinates (y grows downwards)."""

    text: str
    page: int
    left: float
    top: float
    right: float
    bottom: float
    font: str = ""  # the PDF font of the line's first character, when the parser says
    mono: bool = False  # set (mostly) in a monospaced font: code or preformatted text
    heading: int = 0  # the level of the bookmark whose title this line prints (pdf_outline.py); 0: none
    heading_id: int = -1  # which bookmark: the lines of one multi-line title share it
    box: tuple[float, float, float, float] | None = None  # where it is printed, when read turned (a sideways scan)
    printed: bool = True  # False: a bookmark's title its page does not print (pdf_outline.py), with no box
    size: float = 0.0  # the height of its plainest words (segments.py); 0: not known, see type_height
    words: tuple[tuple[str, tuple[float, float, float, float]], ...] = ()  # marked word by word: a formula's line
    # The line cut at its column gaps, where it has any: table cells the parser printed as one line (segments.py).
    pieces: tuple[tuple[str, tuple[float, float, float, float]], ...] = ()

    @property
    def height(self) -> float:
        return max(self.bottom - self.top, 0.1)

    @property
    def type_height(self) -> float:
        """How large its type is: the height of its plainest words, where the parser gave words. A sub- or
        superscript, a tall sum or bracket make a line taller, not its type larger: a sentence with inline
        math ("(20) may be implemented ... v'0 =") was a heading of its own, cut out of its paragraph."""
        return self.size if self.size > 0 else self.height


def _same_size(a: Line, b: Line) -> bool:
    return abs(a.type_height - b.type_height) <= SIZE_TOLERANCE * max(a.type_height, b.type_height)


def _column_right(lines: list[Line]) -> dict[int, float]:
    right: dict[int, float] = {}
    for line in lines:
        right[line.page] = max(right.get(line.page, 0.0), line.right)
    return right


def _continues(prev: Line, line: Line, column_right: float) -> bool:
    """Whether ``line`` continues the paragraph that ``prev`` ends."""
    if line.page != prev.page or not _same_size(prev, line):
        return False
    gap = line.top - prev.bottom
    if gap < -0.5 * prev.height or gap > PARAGRAPH_GAP * max(prev.height, line.height):
        return False  # above the previous line (a new column) or after a paragraph gap
    if line.left > prev.right:
        return False  # beside it: another column or a table cell
    width = column_right - prev.left
    ends_short = width > 0 and (prev.right - prev.left) < SHORT_LINE * width
    return not (ends_short and _SENTENCE_END.search(prev.text.rstrip()))


def compounds(lines: list[Line]) -> frozenset[str]:
    """The hyphenated words the document prints within a line (casefolded): its real hyphens."""
    return frozenset(word.casefold() for line in lines for word in _COMPOUND.findall(line.text))


def _join(lines: list[Line], real: frozenset[str] = frozenset()) -> str:
    """The lines as one text; a word hyphenated across a line break is one word again, without the hyphen unless
    the document prints it with one elsewhere (``real``: "auto-" + "dereference" stays "auto-dereference")."""
    text = ""
    for line in lines:
        part = line.text.strip()
        if not text:
            text = part
        elif _HYPHENATED.search(text) and part[:1].islower():
            left, right = _LAST_WORD.search(text), _FIRST_WORD.match(part)
            whole = f"{left.group(1) if left else ''}-{right.group(0) if right else ''}".casefold()
            text = text + part if whole in real else text[:-1] + part
        else:
            text = f"{text} {part}"
    return text


def without_label(text: str) -> str:
    """A heading's text without its chapter label word ("CAPÍTULO 2 Base de conocimiento" -> "2 Base de
    conocimiento")."""
    return _CHAPTER_LABEL.sub(r"\1 ", text, count=1)


def _body_height(lines: list[Line]) -> float:
    """The line height most of the text is set in (weighted by characters)."""
    weighted = [round(line.type_height, 1) for line in lines for _ in range(max(1, len(line.text) // 10))]
    return statistics.median(weighted) if weighted else 0.0


def _letters_share(text: str) -> float:
    visible = [c for c in text if not c.isspace()]
    return sum(c.isalpha() for c in visible) / len(visible) if visible else 0.0


def _numbered_level(text: str) -> int | None:
    """The level a heading's own numbering gives ("3.2.1 Title": 3, "Chapter 3": 1), None if unnumbered."""
    if _CHAPTER.match(text):
        return 1
    found = _NUMBERED.match(text)
    return min(found.group(1).count(".") + 1, 6) if found else None


def _heading_levels(paragraphs: list[list[Line]], body: float) -> dict[float, int]:
    single = [p[0].type_height for p in paragraphs if len(p) == 1]
    sizes = sorted({round(size, 1) for size in single if size >= HEADING_SIZE_RATIO * body}, reverse=True)
    return {size: min(index + 1, 3) for index, size in enumerate(sizes)}


def _is_heading(paragraph: list[Line], levels: dict[float, int]) -> bool:
    if len(paragraph) != 1 or round(paragraph[0].type_height, 1) not in levels or paragraph[0].mono:
        return False
    text = paragraph[0].text.strip()
    return (
        0 < len(text) <= MAX_HEADING_CHARS
        and _letters_share(text) >= MIN_HEADING_LETTERS
        and not text.endswith((".", ",", ";", "="))
        and not _FORMULA.search(text)
        and not _SCRIPTED.fullmatch(text)
    )


def _layout_level(paragraph: list[Line], levels: dict[float, int], numbered: bool) -> int:
    """A heading's level without an outline: its numbering where the document numbers its headings, else its
    size's rank among the heading sizes (below the numbered ones' levels when those exist)."""
    text = paragraph[0].text.strip()
    level = _numbered_level(text) if numbered else None
    return level if level is not None else levels[round(paragraph[0].type_height, 1)]


def _same_row(prev: Line, line: Line) -> bool:
    overlap = min(prev.bottom, line.bottom) - max(prev.top, line.top)
    # A raised accent ends over the letter it sits on, so the rest of the word starts before it ends.
    slack = prev.height if ENDS_WITH_ACCENT.search(prev.text) else 1.0
    return line.page == prev.page and overlap > 0.5 * min(prev.height, line.height) and line.left >= prev.right - slack


def join_fragments(lines: list[Line]) -> list[Line]:
    """Pieces of one printed line that the parser cut apart, joined: at a raised accent ("Br¨" + "oker,"),
    between the aligned parts of a code line ("plot 1 2 4" + "# horizontal line"), and at a word gap."""
    out: list[Line] = []
    for line in lines:
        prev = out[-1] if out else None
        if prev is None or prev.heading_id != line.heading_id or not _same_row(prev, line):
            out.append(line)
            continue
        gap = line.left - prev.right
        if ENDS_WITH_ACCENT.search(prev.text) and gap < 0.3 * prev.height:
            text = clean_text(prev.text + line.text.lstrip())
            pieces: tuple[tuple[str, tuple[float, float, float, float]], ...] = ()
        elif prev.mono and line.mono:
            width = (prev.right - prev.left) / max(len(prev.text), 1)
            text = prev.text + " " * max(1, round(gap / width) if width > 0 else 1) + line.text
            pieces = (*_pieces_of(prev), *_pieces_of(line))  # a table's cells in a code font: cut there again
        elif gap < 0.3 * prev.height:
            text = f"{prev.text} {line.text.lstrip()}"
            pieces = ()
        else:
            out.append(line)
            continue
        box = union((prev.box, line.box)) if prev.box and line.box else prev.box  # a turned line: both parts
        size = min((size for size in (prev.size, line.size) if size > 0), default=0.0)
        words = (*_parts(prev), *_parts(line)) if prev.words or line.words else ()
        out[-1] = replace(prev, text=text, right=max(prev.right, line.right), top=min(prev.top, line.top),
                          bottom=max(prev.bottom, line.bottom), box=box, size=size, words=words,
                          pieces=pieces)  # fmt: skip
    return out


def _pieces_of(line: Line) -> tuple[tuple[str, tuple[float, float, float, float]], ...]:
    return line.pieces or ((line.text, (line.left, line.top, line.right, line.bottom)),)


def _parts(line: Line) -> tuple[tuple[str, tuple[float, float, float, float]], ...]:
    return line.words or ((line.text, line.box or (line.left, line.top, line.right, line.bottom)),)


def _code_continues(prev: Line, line: Line) -> bool:
    gap = line.top - prev.bottom
    return line.page == prev.page and line.mono and -0.5 * prev.height <= gap <= CODE_GAP * prev.height


def code_text(lines: list[Line]) -> str:
    """The code lines with their breaks and their indentation (in characters of the block's font)."""
    left = min(line.left for line in lines)
    widths = [(line.right - line.left) / len(line.text) for line in lines if len(line.text.strip()) >= 4]
    width = statistics.median(widths) if widths else 0.0
    rows = []
    for line in lines:
        indent = round((line.left - left) / width) if width > 0 else 0
        rows.append(" " * max(indent, 0) + line.text.rstrip())
    return "\n".join(rows)


def _paragraphs(items: list[Line | Segment], right: dict[int, float]) -> list[list[Line] | Segment]:
    """Lines grouped into paragraphs (code lines into code blocks, a bookmarked title's lines into one
    heading); a ready segment (a table) ends the paragraph before it."""
    groups: list[list[Line] | Segment] = []
    for item in items:
        if isinstance(item, Segment):
            groups.append(item)
        elif item.text.strip():
            last = groups[-1] if groups else None
            if isinstance(last, list) and _joins(last, item, right[item.page]):
                last.append(item)
            else:
                groups.append([item])
    return groups


def _joins(group: list[Line], line: Line, column_right: float) -> bool:
    prev = group[-1]
    if prev.heading or line.heading:
        return prev.heading_id == line.heading_id
    if prev.mono or line.mono:
        return prev.mono and _code_continues(prev, line)
    return _continues(prev, line, column_right)


def merge_lines(items: list[Line | Segment]) -> list[Segment]:
    """Paragraph, heading and code segments from lines given in reading order; segments in between pass
    through. With an outline (lines marked by ``pdf_outline.mark_bookmarks``) only its titles are headings."""
    lines = [item for item in items if isinstance(item, Line) and item.text.strip()]
    groups = _paragraphs(items, _column_right(lines))
    outlined = any(line.heading for line in lines)
    paragraphs = [group for group in groups if isinstance(group, list)]
    levels = {} if outlined else _heading_levels(paragraphs, _body_height(lines))
    numbered = any(_is_heading(p, levels) and _numbered_level(p[0].text.strip()) is not None for p in paragraphs)
    real = compounds(lines)
    segments = []
    for paragraph in groups:
        if isinstance(paragraph, Segment):
            segments.append(paragraph)
            continue
        page = paragraph[0].page
        if paragraph[0].heading:
            text, level = without_label(_join(paragraph, real)), paragraph[0].heading
            segments.append(Segment(kind="heading", text=text, page=page, level=level, located=located(paragraph)))
        elif paragraph[0].mono:
            segments.append(Segment(kind="code", text=code_text(paragraph), page=page, located=located(paragraph)))
        elif _is_heading(paragraph, levels):
            text, level = without_label(_join(paragraph, real)), _layout_level(paragraph, levels, numbered)
            segments.append(Segment(kind="heading", text=text, page=page, level=level, located=located(paragraph)))
        else:
            segments.append(
                Segment(kind="paragraph", text=_join(paragraph, real), page=page, located=located(paragraph))
            )
    return segments
