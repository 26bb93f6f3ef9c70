"""Which docling backend reads each type, and a conversion that tells docling the type instead of letting it guess.

docling guesses a stream's format from its first bytes and its name. The service has checked the type already
(formats.detect_file_type), and docling's guess fails on real files: an EPUB whose "mimetype" member is not the
first in its zip (Debian's live-manual EPUBs) is an unknown zip to it. So every type but PDF (whose native
pipeline reads page windows through ``DocumentConverter.convert``) is handed to its backend by name.

RTF goes through docling's own RTF route: the document becomes a DOCX that docling's Word backend reads. docling
makes that DOCX with LibreOffice, which no pip install brings; pandoc (the pypandoc-binary wheel) makes it here,
in the laptop install and the images alike, with ``--sandbox`` so an RTF cannot make it read files or fetch URLs.
"""

from __future__ import annotations

import io
import subprocess
from pathlib import PurePosixPath

from docling.datamodel.base_models import InputFormat
from docling.datamodel.document import ConversionResult, InputDocument
from docling.document_converter import DocumentConverter
from ingestion_contracts.docling import FileType
from servicekit import Unprocessable

INPUT_FORMATS: dict[FileType, InputFormat] = {
    "pdf": InputFormat.PDF,
    "docx": InputFormat.DOCX,
    "pptx": InputFormat.PPTX,
    "xlsx": InputFormat.XLSX,
    "html": InputFormat.HTML,
    "md": InputFormat.MD,
    "epub": InputFormat.EPUB,
    "odt": InputFormat.ODT,
    "ods": InputFormat.ODS,
    "odp": InputFormat.ODP,
    "rtf": InputFormat.DOCX,  # after pandoc (above)
    "email": InputFormat.EMAIL,
    "mhtml": InputFormat.MHTML,
    "csv": InputFormat.CSV,
    "latex": InputFormat.LATEX,
    "asciidoc": InputFormat.ASCIIDOC,
}
# The extension docling's backends expect in the stream's name (the email backend tells .msg from .eml by it).
_STREAM_SUFFIX: dict[FileType, str] = {"rtf": "docx", "email": "eml"}


def docling_formats() -> list[InputFormat]:
    return list(dict.fromkeys(INPUT_FORMATS.values()))


def pandoc_path() -> str:
    """The pandoc binary the pypandoc-binary wheel ships (ImportError when it is not installed)."""
    from pypandoc import get_pandoc_path

    return str(get_pandoc_path())


def rtf_to_docx(file_name: str, data: bytes, timeout_s: float) -> bytes:
    """An RTF document as a DOCX, by pandoc; a failure is the document's (CORRUPT_FILE), said so."""
    command = [pandoc_path(), "--sandbox", "--from=rtf", "--to=docx", "--output=-"]
    try:
        done = subprocess.run(command, input=data, capture_output=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        done = None
    if done is None or done.returncode != 0 or not done.stdout.startswith(b"PK"):
        reason = "timed out" if done is None else done.stderr.decode("utf-8", "replace").strip()[:300]
        raise Unprocessable(
            f"{file_name!r} could not be converted: pandoc could not read it as RTF ({reason or 'no output'}).",
            code="CORRUPT_FILE",
            suggestion="Open it in a word processor and save it as .docx or .odt, then send that.",
        )
    return done.stdout


def convert_as(
    docling: DocumentConverter, file_name: str, file_type: FileType, data: bytes, timeout_s: float
) -> ConversionResult:
    """Convert with the backend of ``file_type``, without docling's format guess; errors stay in the result."""
    if file_type == "rtf":
        data = rtf_to_docx(file_name, data, timeout_s)
    input_format = INPUT_FORMATS[file_type]
    option = docling.format_to_options[input_format]
    suffix = PurePosixPath(file_name.lower()).suffix.lstrip(".")
    stem = PurePosixPath(file_name).stem or "document"
    document = InputDocument(
        path_or_stream=io.BytesIO(data),
        format=input_format,
        backend=option.backend,
        backend_options=option.backend_options,
        filename=f"{stem}.{_STREAM_SUFFIX.get(file_type, file_type) if suffix != 'msg' else 'msg'}",
    )
    # The public convert() has no way to name the format; its per-document step takes an InputDocument.
    return docling._process_document(document, raises_on_error=False)
