"""Type detection: the extension, checked against what the bytes are (unit tests, no I/O)."""

from __future__ import annotations

import gzip
import io
import zipfile

import pytest
from docling_service.formats import detect_file_type, safe_file_name, sniff, unwrap_gzip
from servicekit import PayloadTooLarge, Unprocessable, UnsupportedMediaType


def office_zip(*members: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for member in members:
            archive.writestr(member, "<x/>")
    return buffer.getvalue()


DOCX = office_zip("[Content_Types].xml", "word/document.xml")
PPTX = office_zip("[Content_Types].xml", "ppt/presentation.xml")
XLSX = office_zip("[Content_Types].xml", "xl/workbook.xml")


def odf_zip(mimetype: str, *members: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("mimetype", mimetype)
        for member in members:
            archive.writestr(member, "<x/>")
    return buffer.getvalue()


ODT = odf_zip("application/vnd.oasis.opendocument.text", "content.xml")
ODS = odf_zip("application/vnd.oasis.opendocument.spreadsheet", "content.xml")
ODP = odf_zip("application/vnd.oasis.opendocument.presentation", "content.xml")
EPUB = odf_zip("application/epub+zip", "META-INF/container.xml", "OEBPS/content.opf")
OLE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 64


@pytest.mark.parametrize(
    ("data", "kind"),
    [
        (b"%PDF-1.7\n...", "pdf"),
        (b"\xef\xbb\xbf  %PDF-1.4 junk before the header is allowed", "pdf"),
        (DOCX, "docx"),
        (PPTX, "pptx"),
        (XLSX, "xlsx"),
        (office_zip("readme.txt"), "zip"),
        (ODT, "odt"),
        (ODS, "ods"),
        (ODP, "odp"),
        (EPUB, "epub"),
        # An EPUB whose "mimetype" member is not first, or missing (Debian's live-manual), is told by its container.
        (office_zip("META-INF/container.xml", "OEBPS/content.opf"), "epub"),
        (odf_zip("application/vnd.oasis.opendocument.text-template", "content.xml"), "zip"),
        (b"{\\rtf1\\ansi\\ansicpg1252 Hello}", "rtf"),
        (OLE, "ole"),
        (b"PK\x03\x04 not really a zip", "binary"),
        (b"<!DOCTYPE html><html><body>x</body></html>", "html"),
        (b"  <html lang='en'><p>Hi</p>", "html"),
        (b"# Title\n\nplain words", "text"),
        ("Gr\u00fc\u00dfe aus K\u00f6ln".encode(), "text"),
        (b"\x00\x01\x02\x03binary", "binary"),
        ("caf\xe9".encode("latin-1"), "binary"),
    ],
)
def test_sniff(data: bytes, kind: str) -> None:
    assert sniff(data) == kind


def test_a_multibyte_character_cut_by_the_sniff_window_is_still_text() -> None:
    data = b"a" * 8191 + "\u00e9".encode() + b" more text"
    assert sniff(data) == "text"


@pytest.mark.parametrize(
    ("name", "data", "file_type"),
    [
        ("Report.PDF", b"%PDF-1.4\n", "pdf"),
        ("minutes.docx", DOCX, "docx"),
        ("deck.pptx", PPTX, "pptx"),
        ("sheet.xlsx", XLSX, "xlsx"),
        ("page.htm", b"<html><body>x</body></html>", "html"),
        ("notes.markdown", b"# Notes", "md"),
        ("notes.md", b"<div>inline html is markdown too</div>", "md"),
        ("log.text", b"plain", "txt"),
        ("download", b"%PDF-1.4\n", "pdf"),
        ("download", DOCX, "docx"),
        ("download", b"just some words", "txt"),
        ("book.epub", EPUB, "epub"),
        ("letter.odt", ODT, "odt"),
        ("budget.ods", ODS, "ods"),
        ("talk.odp", ODP, "odp"),
        ("notes.rtf", b"{\\rtf1\\ansi Hello}", "rtf"),
        ("mail.eml", b"From: a@example.org\nSubject: Hi\n\nBody", "email"),
        ("mail.msg", OLE, "email"),
        ("page.mht", b"MIME-Version: 1.0\nContent-Type: multipart/related; boundary=x\n\n--x--", "mhtml"),
        ("table.csv", b"a,b\n1,2\n", "csv"),
        ("paper.tex", b"\\documentclass{article}", "latex"),
        ("guide.adoc", b"= Guide\n\n== Part", "asciidoc"),
        ("README.rst", b"Title\n=====\n", "txt"),
        ("notes.org", b"* Heading\n", "txt"),
        ("download", ODT, "odt"),
        ("download", b"{\\rtf1 x}", "rtf"),
    ],
)
def test_detect(name: str, data: bytes, file_type: str) -> None:
    assert detect_file_type(name, data) == file_type


@pytest.mark.parametrize(
    ("name", "data", "needle"),
    [
        ("virus.exe", b"MZ\x90\x00", ".exe"),
        ("old.doc", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 8, ".doc"),
        ("download", b"GIF89a\x00", "GIF image"),
        ("bundle", office_zip("a.txt"), "zip archive"),
        ("letter.ott", ODT, ".ott"),
        ("download", OLE, "Outlook message"),
    ],
)
def test_unsupported_is_415_with_the_supported_list(name: str, data: bytes, needle: str) -> None:
    with pytest.raises(UnsupportedMediaType) as caught:
        detect_file_type(name, data)
    assert needle in caught.value.message and "Supported types: PDF, DOCX" in caught.value.message
    assert all(kind in caught.value.message for kind in ("EPUB", "ODT", "RTF", "EMAIL", "LATEX", ".pdf.gz"))


@pytest.mark.parametrize(
    ("name", "data", "code", "needle"),
    [
        ("empty.txt", b"", "EMPTY_FILE", "empty"),
        ("fake.pdf", bytes(range(256)) * 4, "CORRUPT_FILE", "not a valid PDF"),
        ("fake.docx", b"%PDF-1.4\n", "CORRUPT_FILE", "content is a PDF file"),
        ("fake.xlsx", DOCX, "CORRUPT_FILE", "content is a Word (DOCX) file"),
        ("notes.txt", b"\x89PNG\r\n\x1a\n\x00\x00", "CORRUPT_FILE", "PNG image"),
        ("notes.md", "caf\xe9".encode("latin-1"), "NOT_UTF8", "not UTF-8 text"),
        ("page.html", b"\x00\x00\x00 binary", "CORRUPT_FILE", "not a valid HTML file"),
        ("book.epub", DOCX, "CORRUPT_FILE", "content is a Word (DOCX) file"),
        ("notes.rtf", b"plain words", "CORRUPT_FILE", "not a valid RTF file"),
        ("mail.msg", b"From: a@example.org", "CORRUPT_FILE", "not a valid e-mail (EML/MSG) file"),
        ("sheet.ods", ODT, "CORRUPT_FILE", "content is a OpenDocument text (ODT) file"),
    ],
)
def test_unreadable_is_422(name: str, data: bytes, code: str, needle: str) -> None:
    with pytest.raises(Unprocessable) as caught:
        detect_file_type(name, data)
    assert caught.value.code == code and needle in caught.value.message and caught.value.suggestion


@pytest.mark.parametrize(
    ("raw", "safe"),
    [
        ("report.pdf", "report.pdf"),
        ("../../etc/passwd", "passwd"),
        ("C:\\Users\\me\\report.docx", "report.docx"),
        ("bad\x00name\n.txt", "badname.txt"),
        ("..", "upload"),
        ("", "upload"),
        (None, "upload"),
        ("a" * 300 + ".pdf", "a" * 251 + ".pdf"),
    ],
)
def test_safe_file_name(raw: str | None, safe: str) -> None:
    assert safe_file_name(raw) == safe


def test_a_gzipped_document_is_its_inner_document() -> None:
    name, data = unwrap_gzip("install.en.pdf.gz", gzip.compress(b"%PDF-1.4\n"), 1 << 20)
    assert (name, data) == ("install.en.pdf", b"%PDF-1.4\n")
    assert unwrap_gzip("notes.md", b"# x", 1 << 20) == ("notes.md", b"# x")


@pytest.mark.parametrize(
    ("name", "data", "error", "needle"),
    [
        ("notes.md.gz", b"# not packed", Unprocessable, "not a valid gzip file"),
        ("archive.tar.gz", gzip.compress(b"x"), UnsupportedMediaType, "a gzipped .tar"),
        ("twice.pdf.gz.gz", gzip.compress(gzip.compress(b"%PDF")), UnsupportedMediaType, "gzipped .gz"),
        ("cut.pdf.gz", gzip.compress(b"%PDF-1.4\n" * 1000)[:40], Unprocessable, "damaged gzip"),
        # 64 MiB of zeros pack into ~64 KiB: past 200x the packed size, a bomb is stopped unpacked no further.
        ("bomb.txt.gz", gzip.compress(bytes(64 << 20)), PayloadTooLarge, "unpacks to more than"),
    ],
    ids=["not packed", "tar", "twice", "cut", "bomb"],
)
def test_gzip_errors_say_what_to_do(name: str, data: bytes, error: type[Exception], needle: str) -> None:
    with pytest.raises(error) as caught:
        unwrap_gzip(name, data, 100 << 20)
    assert needle in caught.value.message and caught.value.suggestion  # type: ignore[attr-defined]  # each error class here has both
