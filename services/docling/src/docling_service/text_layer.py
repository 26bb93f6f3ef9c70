"""Lines whose text docling-parse could not decode, read again from PDFium (no docling here but its lock).

A Type 3 font without a Unicode map (pdfTeX's bitmap fonts, common in older papers: device-tree-compiler's
dtc-paper.pdf) is decoded by docling-parse through a symbol font's encoding: "❚❤❡ ❢♦a114♠❛a116" for "The
format". PDFium reads the same glyphs by their codes and gets the words. On a page whose lines read mostly as
symbols, each line's text, type size and box are taken from PDFium's characters inside the line.
"""

from __future__ import annotations

import ctypes
import unicodedata
from collections.abc import Iterable
from dataclasses import replace

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c
from docling.utils.locks import pypdfium2_lock

from .pdf_lines import Line
from .pdf_text import clean_text
from .regions import Box, union

# A page whose lines' visible characters are this share of symbols (Unicode "So": dingbats) or more is unreadable.
UNREADABLE_SHARE = 0.3
MIN_CHARS = 40  # fewer visible characters than this on a page: too few to judge (a figure's labels)
# TeX's OT1 encoding puts its ligatures at control codes, which PDFium passes through from a font without a
# Unicode map; PDFium gives a hyphen at a line's end as 0x02 character by character (U+FFFE in a page's text).
_CODES = str.maketrans(
    {"\x1b": "ff", "\x1c": "fi", "\x1d": "fl", "\x1e": "ffi", "\x1f": "ffl", "\x02": "-", "\ufffe": "-"}
)


def symbols_share(texts: Iterable[str]) -> tuple[float, int]:
    """The share of symbols among the visible characters of ``texts``, and how many visible characters there are."""
    visible = symbols = 0
    for text in texts:
        visible += len("".join(text.split()))
        if not text.isascii():  # an ASCII text holds no symbol
            symbols += sum(unicodedata.category(char) == "So" for char in text)
    return (symbols / visible if visible else 0.0), visible


def unreadable_pages(lines: list[Line]) -> set[int]:
    by_page: dict[int, list[str]] = {}
    for line in lines:
        by_page.setdefault(line.page, []).append(line.text)
    found = set()
    for page, texts in by_page.items():
        share, count = symbols_share(texts)
        if count >= MIN_CHARS and share >= UNREADABLE_SHARE:
            found.add(page)
    return found


def readable(lines: list[Line], data: bytes) -> list[Line]:
    """``lines`` with those of unreadable pages read again from PDFium. Each of PDFium's
    characters goes to the line whose box holds its centre (a space or line break it generates, to the line of the
    character before): the line's text, hyphens at its end included; its type size, the font size most of its
    letters are set in (docling-parse's word boxes of such fonts are no measure of the type); and its box, the
    union of its characters' (docling-parse's cut such lines short or ran them on)."""
    pages = unreadable_pages(lines)
    if not pages:
        return lines
    out = list(lines)
    with pypdfium2_lock:
        document = pdfium.PdfDocument(data)
        try:
            for number in sorted(pages):
                mine = [index for index, line in enumerate(lines) if line.page == number and line.box is None]
                for index, (text, size, box) in _read(document[number - 1], [lines[i] for i in mine]).items():
                    if text:
                        left, top, right, bottom = box
                        out[mine[index]] = replace(lines[mine[index]], text=clean_text(text), size=size, words=(),
                                                   pieces=(), left=left, top=top, right=right,
                                                   bottom=bottom)  # fmt: skip
        finally:
            document.close()
    return out


def _holder(lines: list[Line], x: float, y: float) -> int | None:
    return next(
        (
            i
            for i, line in enumerate(lines)
            if line.left - 1 <= x <= line.right + 1 and line.top - 1 <= y <= line.bottom + 1
        ),
        None,
    )


def _read(page: pdfium.PdfPage, lines: list[Line]) -> dict[int, tuple[str, float, Box]]:
    """Each line's (text, type size, box) as PDFium reads the page (``lines`` and the boxes: top-left, points)."""
    height = page.get_height()
    textpage = page.get_textpage()
    chars: dict[int, list[str]] = {}
    sizes: dict[int, dict[float, int]] = {}
    inked: dict[int, list[Box]] = {}
    left, right, bottom, top = (ctypes.c_double() for _ in range(4))
    loose = pdfium_c.FS_RECTF()
    owner: int | None = None
    try:
        for at in range(textpage.count_chars()):
            char = chr(pdfium_c.FPDFText_GetUnicode(textpage.raw, at))
            pdfium_c.FPDFText_GetCharBox(textpage.raw, at, left, right, bottom, top)
            if right.value > left.value or top.value > bottom.value:
                x, y = (left.value + right.value) / 2, height - (bottom.value + top.value) / 2
                owner = _holder(lines, x, y)
                if owner is not None and pdfium_c.FPDFText_GetLooseCharBox(textpage.raw, at, loose):
                    # The font's box (ascent to descent), as a printed line's, not the glyph's ink.
                    inked.setdefault(owner, []).append(
                        (loose.left, height - loose.top, loose.right, height - loose.bottom)
                    )
            if owner is None:
                continue
            chars.setdefault(owner, []).append(char)
            if char.isalnum():
                size = round(pdfium_c.FPDFText_GetFontSize(textpage.raw, at), 1)
                sizes.setdefault(owner, {})[size] = sizes.get(owner, {}).get(size, 0) + 1
    finally:
        textpage.close()
        page.close()
    found = {}
    for index, pieces in chars.items():
        counted = sizes.get(index, {})
        size = max(sorted(counted), key=lambda s: counted[s]) if counted else 0.0
        line = lines[index]
        box = union(inked[index]) if index in inked else (line.left, line.top, line.right, line.bottom)
        found[index] = (" ".join("".join(pieces).translate(_CODES).split()), size, box)
    return found
