"""Words as printed: a text line's word gaps read from its characters' own gaps, where the PDF has no space characters.

TeX through xdvipdfmx writes no space characters: a word gap is only a gap between two glyphs. docling-parse joins
two glyphs into one word when their gap is under about a third of the average character width, and a tight justified
line's word gaps fall under it (0.17 of the type size in biblatex's German manual): "bietetUnterstützung",
"fürBibliografiengegliedert". pdftotext breaks a word at a gap wider than a tenth of the font size (poppler's
``minWordBreakSpace``); so does this module, with PDFium's characters:

- only on a page where PDFium's own reading splits a word of the parser's lines in two (each page costs one PDFium text
  page, a few milliseconds; a page whose words all stand apart, the common case, costs nothing more);
- each character goes to the line whose box holds its centre; a gap is measured from the right of every character
  before it (an accent TeX prints over its letter ends inside the letter), with the characters' advance boxes
  (PDFium's loose boxes: unkerned letters touch, so a glyph's side bearings are no gap);
- a space goes into the line's text where the gap is wider than ``WORD_BREAK`` of the font size and than twice the
  line's median gap (a letter-spaced line's spacing is no word gap), and the line has none there; kerned pairs (TeX's
  kerns are negative or a few hundredths of an em) stay one word. A line whose characters do not spell its text
  (another line's glyphs in its box) is left as the parser read it. Code (a monospaced line) keeps the parser's
  reading, and so does a line the gaps would cut into letters (a listing set on fixed columns in a proportional
  font, zlib's crc-doc: pdftotext reads "i n t e r l e a v e d").
"""

from __future__ import annotations

import itertools
import statistics
import unicodedata
from dataclasses import replace
from difflib import SequenceMatcher

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c
from docling.utils.locks import pypdfium2_lock

from .pdf_lines import Line

WORD_BREAK = 0.1  # of the font size: a wider gap between two characters is a word gap (poppler's minWordBreakSpace)
SPACING = 2.0  # ... and wider than this many times the line's median gap between characters
# Cutting a line into this many more one-letter words reads a letter-spaced line (a fixed-column listing: "i nt e r l
# eaved"), not words: it keeps the parser's reading.
LETTERS_ALONE = 2
# A gap narrower than this (points) is no word gap at any size: the font size is not asked for.
MIN_GAP = 0.4

_HYPHENS = str.maketrans({"\ufffe": "-", "\x02": "-"})
Char = tuple[str, float, float, float]  # its letters as compared (key), left, right, font size at a gap (0: not asked)


def _key(text: str) -> str:
    """Characters as compared between the parser and PDFium: compatibility-decomposed, accents and white space out
    (PDFium gives a hyphen that ends a line as U+FFFE or 0x02, text_layer.py)."""
    text = text.translate(_HYPHENS)
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c) and not c.isspace()
                   and unicodedata.category(c) != "Sk")  # fmt: skip


def glued_on_page(text: str, lines: list[Line]) -> bool:
    """Whether a word of the parser's ``lines`` is two words of PDFium's ``text`` of the page, run together."""
    theirs = [_key(token) for token in text.split()]
    pairs = {first + second for first, second in itertools.pairwise(theirs) if first and second}
    return any(_key(token) in pairs for line in lines for token in line.text.split())


def spaced(lines: list[Line], data: bytes) -> list[Line]:
    """``lines`` with a space where their characters stand a word gap apart and the text has none."""
    by_page: dict[int, list[int]] = {}
    for index, line in enumerate(lines):
        if line.printed and line.box is None and not line.mono and line.text.strip():
            by_page.setdefault(line.page, []).append(index)
    if not by_page:
        return lines
    out = list(lines)
    with pypdfium2_lock:
        document = pdfium.PdfDocument(data)
    try:
        for number, held in sorted(by_page.items()):
            with pypdfium2_lock:
                texts = _page_texts(document, number, [lines[i] for i in held])
            for position, text in texts.items():
                out[held[position]] = replace(lines[held[position]], text=text)
    finally:
        with pypdfium2_lock:
            document.close()
    return out


def _page_texts(document: pdfium.PdfDocument, number: int, lines: list[Line]) -> dict[int, str]:
    """The texts of ``lines`` (of page ``number``) that gain a space, by their position in ``lines``."""
    page = document[number - 1]
    textpage = page.get_textpage()
    try:
        text = textpage.get_text_range()
        if not glued_on_page(text, lines):
            return {}
        owned = _owned_chars(textpage, page.get_height(), lines)
    finally:
        textpage.close()
        page.close()
    found = {}
    for position, chars in owned.items():
        respaced = respace(lines[position].text, chars)
        if respaced != lines[position].text:
            found[position] = respaced
    return found


def _owned_chars(textpage: pdfium.PdfTextPage, height: float, lines: list[Line]) -> dict[int, list[Char]]:
    """Each line's characters (by position in ``lines``): those whose centre its box holds, left to right. Each is
    asked for by its index (the page's text as one string is no map of them: crc-doc's page 4 ran one off)."""
    owned: dict[int, list[Char]] = {}
    box = pdfium_c.FS_RECTF()
    current = 0
    for at in range(pdfium_c.FPDFText_CountChars(textpage.raw)):
        # Past U+FFFD (PDFium's line-end hyphen U+FFFE, a math letter): no letter, the alignment steps over it.
        char = chr(min(pdfium_c.FPDFText_GetUnicode(textpage.raw, at), 0xFFFD))
        if char.isspace() or not pdfium_c.FPDFText_GetLooseCharBox(textpage.raw, at, box):
            continue  # a space PDFium generated or the PDF printed, a line break
        x, y = (box.left + box.right) / 2, height - (box.top + box.bottom) / 2
        if not _holds(lines[current], x, y):
            found = next((i for i, line in enumerate(lines) if _holds(line, x, y)), None)
            if found is None:
                continue
            current = found
        size = pdfium_c.FPDFText_GetFontSize(textpage.raw, at)
        owned.setdefault(current, []).append((_key(char), box.left, box.right, size))
    for chars in owned.values():
        chars.sort(key=lambda char: char[1])
    return owned


def _holds(line: Line, x: float, y: float) -> bool:
    return line.left - 1 <= x <= line.right + 1 and line.top - 1 <= y <= line.bottom + 1


def respace(text: str, chars: list[Char]) -> str:
    """``text`` with a space where ``chars`` (the line's characters left to right, as PDFium reads them) stand a word
    gap apart and the text has none between the same two letters or digits (the two spellings aligned letter by letter:
    a quotation mark may differ, a list's number be another line's); before the punctuation the gap comes before."""
    theirs, breaks = _breaks(chars)
    if not breaks:
        return text
    ours = [(index, letter) for index, char in enumerate(text) for letter in _key(char) if letter.isalnum()]
    mine = "".join(letter for _, letter in ours)
    blocks = (
        [(0, 0, len(theirs))]
        if mine == theirs
        else SequenceMatcher(None, theirs, mine, autojunk=False).get_matching_blocks()
    )
    at: dict[int, int] = {}  # where in ``text`` a space goes: the index it goes before
    for first, mine_first, size in blocks:
        for offset in range(1, size):
            if (before := breaks.get(first + offset)) is not None:
                at.update(_place(text, ours[mine_first + offset - 1][0], ours[mine_first + offset][0], before))
    out = list(text)
    for index in sorted(at, reverse=True):
        out.insert(index, " ")
    respaced = "".join(out)
    return text if _letters_alone(respaced) >= _letters_alone(text) + LETTERS_ALONE else respaced


def _letters_alone(text: str) -> int:
    return sum(len(token) == 1 and token.isalnum() for token in text.split())


def _place(text: str, left: int, right: int, before_punctuation: bool) -> dict[int, int]:
    """Where a space goes between the letters at ``left`` and ``right`` of ``text``: none if one is there (or both
    letters are one character's), else before ``right``, or before the punctuation that follows ``left``."""
    between = text[left + 1 : right]
    if right <= left or any(char.isspace() for char in between):
        return {}
    index = left + 1 if before_punctuation and between else right
    return {index: index}


def _breaks(chars: list[Char]) -> tuple[str, dict[int, bool]]:
    """The line's letters and digits as PDFium spells them, and which of them follow a word gap (by index: True
    where the gap comes before punctuation that precedes the letter)."""
    letters: list[str] = []
    breaks: dict[int, bool] = {}
    if len(chars) < 2:
        return "", breaks
    right = chars[0][2]
    gaps = [0.0]
    for char in chars[1:]:
        gaps.append(char[1] - right)
        right = max(right, char[2])
    floor = max(MIN_GAP, SPACING * max(statistics.median(gaps[1:]), 0.0))
    pending: bool | None = None  # a gap seen, not yet followed by a letter: whether punctuation came first
    for char, gap in zip(chars, gaps, strict=True):
        if letters and gap > floor and gap > WORD_BREAK * char[3] and pending is None:
            pending = False
        word = [letter for letter in char[0] if letter.isalnum()]
        if not word and char[0] and pending is False:
            pending = True
        if word and pending is not None:
            breaks[len(letters)] = pending
            pending = None
        letters.extend(word)
    return "".join(letters), breaks
