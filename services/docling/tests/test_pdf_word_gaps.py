"""Words as printed on real pages without space characters (issue 47): split at the characters' own gaps.

TeX through xdvipdfmx writes no space characters, and docling-parse took a tight justified line's word gaps for
kerning: "bietetUnterstützung", "serapas ajoutéepour". Each page comes from a Debian package's manual
(texlive-lang-german, auto-multiple-choice-doc-pdf) and goes through the converter the embedded server runs; its words
are compared with pdftotext's (bench.glued_words, which measures the same on the 17 PDFs of bench/table_rows.json).
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable

import pytest
from docling_service.converter import Converter
from ingestion_contracts.docling import ConvertResponse

from bench.glued_words import Found, compare, page_texts

Pages = Callable[..., bytes]


def against_pdftotext(result: ConvertResponse, page: bytes) -> Found:
    """The converted page's words against poppler's reading of it: glued and split word pairs."""
    poppler = subprocess.run(["pdftotext", "-", "-"], input=page, capture_output=True, check=True).stdout
    ours = page_texts(result.model_dump(include={"markdown", "page_spans", "furniture"}))
    return compare(ours.get(1, ""), poppler.decode())


@pytest.fixture(scope="module")
def german(converter: Converter, debian_pdf: Pages) -> tuple[ConvertResponse, bytes]:
    manual = "texlive-doc/latex/translation-biblatex-de/biblatex-de-Benutzerhandbuch.pdf"
    page = debian_pdf("texlive-lang-german", manual, 5)
    return converter.convert(page, "biblatex_p5.pdf"), page


def test_a_tight_justified_line_keeps_its_word_gaps(german: tuple[ConvertResponse, bytes]) -> None:
    """biblatex's German manual, page 5 ("Inkompatible Pakete"): a line set tight (word gaps of 0.17 of the type
    size) read "bietetUnterstützung fürBibliografiengegliedert nachThemen"; 11 word pairs of the page were glued."""
    result, page = german
    assert "bietet Unterstützung für Bibliografien gegliedert nach Themen," in result.markdown
    assert "im Jurastudium und (meist deutsche)" in result.markdown
    found = against_pdftotext(result, page)
    assert (found.glued, found.split) == (0, 0), found.examples


def test_kerned_words_stay_whole(german: tuple[ConvertResponse, bytes]) -> None:
    """Kerned pairs ("Te" closer by 0.07 of the type size) and accents printed over their letter are no word gaps."""
    result, _ = german
    assert "Teilbibliografien" in result.markdown and "T eil" not in result.markdown
    assert "Unterstützung" in result.markdown and "Unterst ützung" not in result.markdown


def test_french_words_printed_without_spaces_stand_apart(converter: Converter, debian_pdf: Pages) -> None:
    """auto-multiple-choice's French manual (DBLaTeX, xdvipdfmx), page 22: "ne serapas ajoutéepour les questions"."""
    page = debian_pdf("auto-multiple-choice-doc-pdf", "auto-multiple-choice/auto-multiple-choice.fr.pdf", 22)
    result = converter.convert(page, "amc_p22.pdf")
    assert "ne sera pas ajoutée pour les questions" in " ".join(result.markdown.split())
    found = against_pdftotext(result, page)
    assert found.glued <= 1 and found.split == 0, found.examples


def test_a_bold_heading_keeps_its_word_gaps(converter: Converter, debian_pdf: Pages) -> None:
    """The German installation guide (DBLaTeX, xdvipdfmx), page 41: its heading read "5.2.7 Theme mit hohemKontrast",
    and the outline with it (issue 51, seen from outside)."""
    page = debian_pdf("installation-guide-amd64", "installation-guide-amd64/de/install.de.pdf.gz", 41)
    result = converter.convert(page, "install_de_p41.pdf")
    headings = [block.text for block in result.blocks if block.kind == "heading"]
    assert "5.2.7 Theme mit hohem Kontrast" in headings, headings
