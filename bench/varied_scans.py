"""Scans of text the OCR settings were not chosen on: a second opinion beside bench.office_scans.

bench.office_scans' report repeats a dozen sentences in one typeface (Helvetica 11 pt) at one skew. Here
each document takes real abstracts (SciFact: scientific prose with numbers and units; DBpedia: names and
places with accented letters) from shared/bench/, sets them in Helvetica, Times or Courier at 9-12 pt, and
scans them at 150, 200 or 300 dpi with a random skew (up to 1 degree either way), blur and JPEG quality
(50-85), all drawn from a seeded generator: the same documents on every run.

    from bench.varied_scans import varied_scans; docs = varied_scans(6)
"""

from __future__ import annotations

import random
import unicodedata
from dataclasses import dataclass

from .data import DATASETS, Doc, load
from .office_scans import Typography, office_scan, report_pdf, scan_pdf
from .pdf_fixtures import Fixture

FONTS = ("helvetica", "times", "courier")
SIZES = (9, 10, 11, 12)
DPIS = (150, 200, 300)
_PARAGRAPHS_A_PAGE = 3
_MAX_PARAGRAPH = 650  # characters: three paragraphs of 12 pt Courier still fit on an A4 page


@dataclass(frozen=True)
class Look:
    """How one document is printed and scanned."""

    font: str
    size: int
    dpi: int
    angle: float
    blur: float
    jpeg: int

    def label(self) -> str:
        return f"{self.font} {self.size} pt, {self.dpi} dpi, skew {self.angle:+.2f}, blur {self.blur:.2f}, q{self.jpeg}"


def printable(text: str) -> str:
    """The text as PDF core fonts can print it (Latin-1): letters outside it lose their accents or go."""
    out = []
    for char in unicodedata.normalize("NFC", " ".join(text.split())):
        if char.encode("latin-1", "ignore"):
            out.append(char)
        else:
            base = unicodedata.normalize("NFKD", char).encode("latin-1", "ignore").decode("latin-1")
            out.append("".join(c for c in base if not unicodedata.combining(c)))
    return " ".join("".join(out).split())


def _paragraph(doc: Doc) -> str:
    text = printable(doc.text)
    if len(text) <= _MAX_PARAGRAPH:
        return text
    cut = text[:_MAX_PARAGRAPH]
    return cut[: cut.rfind(" ")]


def _pages(docs: list[Doc], pages: int, rng: random.Random) -> list[list[str]]:
    """Per page: a heading (an abstract's title) and three abstracts."""
    out = []
    for _ in range(pages):
        chosen = rng.sample(docs, _PARAGRAPHS_A_PAGE)
        heading = printable(chosen[0].title)
        if len(heading) > 70:  # one line at 15 pt
            heading = heading[:70].rsplit(" ", 1)[0]
        out.append([heading, *(_paragraph(doc) for doc in chosen)])
    return out


def scan(text: list[list[str]], look: Look) -> bytes:
    """``text`` typeset and scanned as ``look`` says: a PDF of page images, no text layer."""
    pages = office_scan(report_pdf(text, Typography.scaled(look.font, look.size)), dpi=look.dpi,
                        angle=look.angle, blur=look.blur, jpeg=look.jpeg)  # fmt: skip
    return scan_pdf(pages, look.dpi)


def varied_scans(count: int = 6, pages: int = 2, seed: int = 2026) -> list[Fixture]:
    """``count`` scanned documents of ``pages`` pages, alternating SciFact and DBpedia abstracts; each
    fixture's name says how it was printed and scanned. Raises FileNotFoundError without shared/bench."""
    rng = random.Random(seed)
    corpora = [load(DATASETS["scifact"]).docs, load(DATASETS["dbpedia-5k"]).docs]
    corpora = [[doc for doc in docs if len(doc.text) > 300 and doc.title] for docs in corpora]
    out = []
    for number in range(count):
        look = Look(
            font=FONTS[number % len(FONTS)],
            size=rng.choice(SIZES),
            dpi=DPIS[number % len(DPIS)] if number < len(DPIS) else rng.choice(DPIS),
            angle=round(rng.uniform(-1.0, 1.0), 2),
            blur=round(rng.uniform(0.5, 1.0), 2),
            jpeg=rng.randint(50, 85),
        )
        source = ("scifact", "dbpedia")[number % 2]
        text = _pages(corpora[number % 2], pages, rng)
        lines = tuple(line for page in text for line in page)
        name = f"{source}_{number + 1}: {look.label()}"
        out.append(Fixture(name, scan(text, look), "office-scan", pages, lines))
    return out
