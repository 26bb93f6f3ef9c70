"""The PDF fidelity metrics measure what they say (no docling here)."""

from __future__ import annotations

from bench.pdf_fidelity import cell_recall, char_accuracy, edit_distance, glued_words, markdown_rows, report_lines

TABLE = (("Region", "Q1"), ("Asia", "310"), ("Europe", "120"))


def test_edit_distance_and_character_accuracy() -> None:
    assert edit_distance("kitten", "sitting") == 3 and edit_distance("", "abc") == 3
    assert char_accuracy("The  north lot", "the north lot") == 1.0
    assert char_accuracy("abcd", "abxd") == 0.75 and char_accuracy("abc", "") == 0.0


def test_glued_words_are_neighbours_run_together() -> None:
    assert glued_words("Section 1: Orchard report. The figures", "Section1: Orchard report. Thefigures") == 2
    assert glued_words("the figures", "the figures") == 0


def test_cell_recall_counts_cells_in_the_right_row_and_column() -> None:
    markdown = "Intro\n\n| Region | Q1 |\n|---|---|\n| Asia | 310 |\n| Europe | 999 |\n"
    assert markdown_rows(markdown) == [["Region", "Q1"], ["Asia", "310"], ["Europe", "999"]]
    assert cell_recall(TABLE, markdown) == (5, 6)
    assert cell_recall(TABLE, "Region Q1 Asia 310 Europe 120") == (0, 6)  # words as prose are not a table


def test_the_report_names_every_pipeline() -> None:
    row = {"table_cell_recall": 1.0, "ocr_char_accuracy_mean": 0.9, "pages_per_s": {"born-digital": 20, "scan": 0.5}}
    pdf = {
        "fixtures": [{"name": "a.pdf"}],
        "repeats": 3,
        "pipelines": {"embedded": row, "standard": {"unavailable": "x"}},
    }
    text = "\n".join(report_lines(pdf))
    assert "| embedded | 100.0% | 90.0% | 20.0 | 0.50 |" in text and "| standard | n/a" in text
