"""Every letter of a PDF text layer intact: accents composed, ligatures unfolded, fragments of a line joined.

TeX (OT1 fonts) and some other generators print an accented letter as two glyphs, the accent and the letter,
and the text layer holds a *spacing* accent before the letter ("Br" U+00A8 "oker"). docling-parse even cuts
the line at the raised accent ("Br" U+00A8 and "oker," side by side). pdftotext composes them ("Bröker"); so does
this module: a spacing accent right before a letter becomes the letter with its combining mark, and the text
is then put in Unicode NFC, so "ö" is one code point whichever way the PDF spelt it. Ligature glyphs
(U+FB00-FB06: ﬁ, ﬂ, ﬀ, ...) are unfolded, as pdftotext does. ASCII ``^``, ``~`` and ``'`` are never composed
(code uses them); a backtick is, only between letters in a line that is not code ("Cr`eme").
"""

from __future__ import annotations

import re
import unicodedata

# Spacing accent -> the combining mark it stands for.
_SPACING = {
    "\u00a8": "\u0308",  # diaeresis
    "\u00b4": "\u0301",  # acute
    "\u00b8": "\u0327",  # cedilla
    "\u00af": "\u0304",  # macron
    "\u02c6": "\u0302",  # circumflex
    "\u02dc": "\u0303",  # tilde
    "\u02c7": "\u030c",  # caron
    "\u02d8": "\u0306",  # breve
    "\u02d9": "\u0307",  # dot above
    "\u02da": "\u030a",  # ring above
    "\u02dd": "\u030b",  # double acute
    "\u02db": "\u0328",  # ogonek
}
_ACCENT_CLASS = "".join(_SPACING)
# An accent, maybe a space left by a cut line, then the letter it sits on (TeX prints the accent first).
_BEFORE = re.compile(rf"([{_ACCENT_CLASS}]) ?([^\W\d_])")
_GRAVE = re.compile(r"(?<=[^\W\d_])`([aeiouAEIOU])")
_LIGATURES = str.maketrans({"\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi", "\ufb04": "ffl",
                            "\ufb05": "st", "\ufb06": "st"})  # fmt: skip
ENDS_WITH_ACCENT = re.compile(rf"[{_ACCENT_CLASS}]$")


def _compose(match: re.Match[str]) -> str:
    return match.group(2) + _SPACING[match.group(1)]


def clean_text(text: str, *, code: bool = False) -> str:
    """``text`` with spacing accents composed onto their letters, ligatures unfolded, in NFC."""
    if text.isascii() and "`" not in text:
        return text
    text = text.translate(_LIGATURES)
    text = _BEFORE.sub(_compose, text)
    if not code:
        text = _GRAVE.sub(lambda m: m.group(1) + "\u0300", text)
    return unicodedata.normalize("NFC", text)
