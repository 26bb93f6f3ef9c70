"""The long report generator (bench/pdf_scale_docs.py): every page holds its own sentence, whole, and no other's."""

from __future__ import annotations

import re

import pypdfium2 as pdfium
import pytest

from bench.pdf_scale_docs import report_pdf


def page_texts(data: bytes) -> list[str]:
    document = pdfium.PdfDocument(data)
    try:
        return [re.sub(r"\s+", " ", page.get_textpage().get_text_range()) for page in document]
    finally:
        document.close()


def test_each_page_holds_its_own_sentence_and_no_other() -> None:
    data, sentences = report_pdf(40, seed=3)
    texts = page_texts(data)
    assert len(texts) == 40 and sorted(sentences) == list(range(1, 41))
    for number, text in enumerate(texts, start=1):
        assert [page for page, sentence in sentences.items() if sentence in text] == [number], number
    assert report_pdf(40, seed=3) == (data, sentences)  # deterministic: same bytes, same sentences


def test_prose_flows_across_page_breaks() -> None:
    texts = page_texts(report_pdf(12)[0])
    # A page that ends mid-sentence: the paragraph goes on at the top of the next one.
    assert sum(not text.rstrip().endswith((".", "|")) for text in texts[:-1]) >= 3


def test_no_pages_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        report_pdf(0)
