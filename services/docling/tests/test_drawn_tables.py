"""Tables as printed on real pages (issue 47): every row, one cell per printed cell, words as printed.

Each page comes from a Debian package's manual (graphviz-doc, installation-guide-amd64, xorg-docs, texlive-lang-german,
r-doc-pdf) and goes through the converter the embedded server runs (the native pipeline). The labelled set of 44
tables in bench/table_rows.json measures the same on 13 PDFs (python -m bench.table_rows).
"""

from __future__ import annotations

from collections.abc import Callable

from docling_service.converter import Converter
from ingestion_contracts.docling import ConvertResponse

from bench.table_rows import markdown_rows

Pages = Callable[..., bytes]


def tables(result: ConvertResponse) -> list[list[list[str]]]:
    return [markdown_rows(block.text) for block in result.blocks if block.kind == "table"]


def test_a_table_ruled_only_around_its_header_keeps_every_row_and_word(converter: Converter, debian_pdf: Pages) -> None:
    """The dot guide's page 31 ("Principal Node Attributes") rules its header off and prints 32 attributes inside
    one drawn row. It came out as one Markdown row of glued words ("labeltexthasnoaffectonnodesize"), so a chunk
    held a column, not a row; now each attribute is a row of three cells, the wrapped value whole."""
    result = converter.convert(debian_pdf("graphviz-doc", "graphviz/pdf/dotguide.pdf.gz", 31), "dot_p31.pdf")
    (rows,) = tables(result)
    assert len(rows) == 33 and rows[0] == ["Name", "Default", "Values"]
    assert ["fixedsize", "false", "label text has no affect on node size"] in rows
    assert ["layer", "overlay range", "all, id or id:id, or a comma-separated list of the former"] in rows
    assert ["comment", "", "any string (format-dependent)"] in rows
    assert "| fixedsize | false | label text has no affect on node size |" in result.markdown


def test_a_figure_drawn_as_boxes_is_no_table_and_a_numbered_listing_is_code(
    converter: Converter, debian_pdf: Pages
) -> None:
    """The dot guide's page 10 draws record-shaped nodes (boxes in boxes: "left | mid dle | right") and prints a
    numbered listing ("5: <TD COLSPAN=...>"). Both came out as tables; the drawing is its figure's, the listing code."""
    result = converter.convert(debian_pdf("graphviz-doc", "graphviz/pdf/dotguide.pdf.gz", 10), "dot_p10.pdf")
    assert tables(result) == []
    listing = next(block.text for block in result.blocks if block.kind == "code" and "digraph html" in block.text)
    assert "5:" in listing and '<TD COLSPAN="3">b</TD>' in listing and "16:" not in result.markdown.split(listing)[0]


def test_cells_printed_without_space_characters_keep_their_words(converter: Converter, debian_pdf: Pages) -> None:
    """The Debian installation guide (DBLaTeX, xdvipdfmx: no space characters) read its table cells glued
    ("Separate/home,/varand/tmp partitions"); a cell of two lines beside cells centred on them was three rows."""
    guide = "installation-guide-amd64/en/install.en.pdf.gz"
    result = converter.convert(debian_pdf("installation-guide-amd64", guide, 53), "install_p53.pdf")
    rows = next((t for t in tables(result) if t[0][0].startswith("Partitioning")), None)
    assert rows == [
        ["Partitioning scheme", "Minimum space", "Created partitions"],
        ["All files in one partition", "600MB", "/, swap"],
        ["Separate /home partition", "500MB", "/, /home, swap"],
        ["Separate /home, /var and /tmp partitions", "1GB", "/, /home, /var, /tmp, swap"],
    ]
    result = converter.convert(debian_pdf("installation-guide-amd64", guide, 15), "install_p15.pdf")
    (rows,) = tables(result)
    assert ["ARM with hardware FPU", "armhf", "multiplatform", "armmp"] in rows
    assert ["Intel x86-based", "i386", "default x86 machines", "default"] in rows and len(rows) == 15


def test_an_identifier_hyphenated_in_its_cell_is_one_word(converter: Converter, debian_pdf: Pages) -> None:
    """XACE-Spec (DocBook, Apache FOP) breaks "XACE_SCREENSAVER_ACCESS" as "AC-" / "CESS" in its cell."""
    result = converter.convert(debian_pdf("xorg-docs", "xorg-docs/Xserver/XACE-Spec.pdf.gz", 7), "xace_p7.pdf")
    (rows,) = tables(result)
    assert len(rows) == 15
    assert ["XACE_SCREENSAVER_ACCESS", "XaceScreenAccessRec", "the section called “Screen Saver Access”"] in rows


def test_a_booktabs_table_keeps_its_two_header_rows_and_its_columns(converter: Converter, debian_pdf: Pages) -> None:
    """biblatex's German manual (xdvipdfmx) draws booktabs rules only: a top rule, a \\cmidrule under "Formatierte
    Daten (Beispiele)" spanning two columns, a bottom rule. Its third column ran into its second, and its caption
    ("Tabelle 3") was no caption."""
    manual = "texlive-doc/latex/translation-biblatex-de/biblatex-de-Benutzerhandbuch.pdf"
    result = converter.convert(debian_pdf("texlive-lang-german", manual, 39), "biblatex_p39.pdf")
    (rows,) = tables(result)
    assert rows[:3] == [
        ["Datumspezifikation", "Formatierte Daten (Beispiele)", ""],
        ["", "Kurz/12-Stundenformat", "Lang/24-Stundenformat"],
        ["1850", "1850", "1850"],
    ]
    dash = "\u2013"  # an en dash, as printed
    assert ["1995-03-30/1995-04-05", f"30/03/1995{dash}05/04/1995", f"30ter März 1995{dash}5ter April 1995"] in rows
    assert len(rows) == 12
    (unit,) = [u for u in result.units if u.kind == "table"]
    assert unit.caption == "Tabelle 3: Datums- und Zeitspezifikationen"


def test_a_caption_between_two_tables_is_the_nearer_ones(converter: Converter, debian_pdf: Pages) -> None:
    """The Graphviz library guide's page 12 prints Table 4, its caption, Table 5, its caption: Table 5's unit was
    captioned "Table 4" (the paragraph just before it)."""
    result = converter.convert(debian_pdf("graphviz-doc", "graphviz/pdf/libguide.pdf.gz", 12), "lib_p12.pdf")
    captions = [unit.caption for unit in result.units if unit.kind == "table"]
    assert captions == ["Table 4: Geometric node attributes", "Table 5: Geometric edge attributes"]


def test_an_unruled_table_whose_cells_the_parser_joined_is_cut_at_its_column_gaps(
    converter: Converter, debian_pdf: Pages
) -> None:
    """R Internals (Texinfo's @multitable, no rules): docling-parse printed "0 NILSXP" as one line and joined the
    code font's "NULL" to it; the table began at its second row, the header and first row lost to a code block."""
    result = converter.convert(debian_pdf("r-doc-pdf", "r-doc-pdf/manual/R-ints.pdf", 6), "rints_p6.pdf")
    (rows,) = tables(result)
    assert rows[:3] == [["no", "SEXPTYPE", "Description"], ["0", "NILSXP", "NULL"], ["1", "SYMSXP", "symbols"]]
    assert len(rows) == 14
