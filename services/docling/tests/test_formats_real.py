"""Every format the converter reads, on a real document of it (tests/fixtures/real_documents.py): the type found,
the words in the text, the headings in order, the title; each through docling's own backend (issue 51, point 1)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from docling_service.converter import Converter
from ingestion_contracts.docling import SUPPORTED_FILE_TYPES, ConvertResponse

from tests.fixtures.real_documents import DOCUMENTS, RealDocument


@pytest.mark.parametrize("document", DOCUMENTS, ids=[d.name for d in DOCUMENTS])
def test_a_real_document_of_each_format_reads_with_its_words_and_headings(
    converter: Converter, check: Callable[[ConvertResponse], None], document: RealDocument
) -> None:
    if document.missing:
        pytest.skip(document.missing)
    result = converter.convert(document.path.read_bytes(), document.name)
    check(result)
    pipeline = "text" if document.file_type == "txt" else "simple"
    assert (result.file_type, result.pipeline) == (document.file_type, pipeline)
    assert document.phrase in " ".join(result.markdown.split())
    headings = [block.text for block in result.blocks if block.kind in ("title", "heading")]
    found = iter(headings)
    assert all(heading in found for heading in document.headings), headings[:20]  # in this order
    if document.title:
        assert result.title == document.title


def test_every_format_of_the_contract_has_a_real_document() -> None:
    covered = {document.file_type for document in DOCUMENTS}
    # PDF, Office, HTML, Markdown, text and images have their own suites on real and generated files.
    assert set(SUPPORTED_FILE_TYPES) - covered == {"pdf", "docx", "pptx", "xlsx", "html", "md", "image"}
