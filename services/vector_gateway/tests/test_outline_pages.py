"""A section's last page is where its text ends, not the running head of the page the next section opens
(gnuplot.pdf: "Part II Plotting styles" ends on page 86; page 87 starts with "87", "gnuplot 5.4", then Part III)."""

from __future__ import annotations

from ingestion_contracts.gateway import DocumentInfo, SearchHit
from vector_gateway.outline import document_structure

BODY = "The plotting styles are described in this part of the manual, one per section, with examples."


def _hit(index: int, text: str, start: int, page: int, path: list[str]) -> SearchHit:
    return SearchHit(
        chunk_id=f"c{index}", doc_id="d", collection="c", source="s", key="k", title="t", file_type="pdf",
        page=page, page_end=page, cited_page=page, heading_path=path, heading_levels=[1] * len(path),
        chunk_index=index, text=text, start=start, end=start + len(text), token_count=10, score=0.0,
        dense_score=0.0, keyword_score=0.0, tags=[], metadata={}, last_modified="2026-11-28T00:00:00Z",
    )  # fmt: skip


def test_a_running_head_before_the_next_title_is_not_the_section_s_last_page() -> None:
    chunks, start = [], 0
    for page in range(81, 87):  # every page opens with its number and the running head
        text = f"# Part II Plotting styles\n\n{BODY}" if page == 81 else f"{page}\n\ngnuplot 5.4\n\n{BODY}"
        chunks.append(_hit(len(chunks), text, start, page, ["Part II Plotting styles"]))
        start += len(text) + 2
    head = "gnuplot 5.4\n\n87"
    chunks.append(_hit(len(chunks), head, start, 87, ["Part II Plotting styles"]))
    start += len(head) + 2
    chunks.append(_hit(len(chunks), f"# Part III Terminals\n\n{BODY}", start, 87, ["Part III Terminals"]))
    info = DocumentInfo(
        doc_id="d", collection="c", source="s", title="t", file_type="pdf", content_hash="h", chunk_count=8,
        token_count=50, created_at="x", updated_at="x", last_modified="x", tags=[], metadata={},
    )  # fmt: skip
    rows = [{"chunk_index": h.chunk_index, "metadata": {}} for h in chunks]
    structure = document_structure(info, chunks, rows)
    spans = {tuple(s.heading_path): (s.page, s.page_end) for s in structure.sections}
    assert spans[("Part II Plotting styles",)] == (81, 86)
    assert spans[("Part III Terminals",)] == (87, 87)


def test_a_short_sentence_that_runs_onto_the_next_page_keeps_that_page() -> None:
    """Only a repeated running head is left out: a section's own few words on its last page count."""
    first = f"# Costs\n\n{BODY} Costs rose on page one and went on rising on"
    tail = "page two."
    chunks = [
        _hit(0, first, 0, 1, ["Costs"]),
        _hit(1, tail, len(first) + 2, 2, ["Costs"]),
        _hit(2, f"# Outlook\n\n{BODY}", len(first) + len(tail) + 4, 2, ["Outlook"]),
    ]
    info = DocumentInfo(
        doc_id="d", collection="c", source="s", title="t", file_type="pdf", content_hash="h", chunk_count=3,
        token_count=30, created_at="x", updated_at="x", last_modified="x", tags=[], metadata={},
    )  # fmt: skip
    rows = [{"chunk_index": h.chunk_index, "metadata": {}} for h in chunks]
    spans = {tuple(s.heading_path): (s.page, s.page_end) for s in document_structure(info, chunks, rows).sections}
    assert spans[("Costs",)] == (1, 2)
