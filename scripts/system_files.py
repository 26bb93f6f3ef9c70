"""The files of Debian packages that tests and benchmarks read, each with the package that installs it.

Real material nobody here wrote (manuals, papers, a reference card, a library): a test asks for one through
``needs`` (a skip mark) or ``system_file`` (inside a test), and where it is missing the test is skipped with the
``apt-get install`` that brings it, never an error. .ci/run installs every package named here;
tests/test_system_files.py checks that, and that no test names such a file but through this module.
"""

from __future__ import annotations

import platform
from collections.abc import Iterable
from pathlib import Path
from typing import Any

DOC = Path("/usr/share/doc")
GNUPLOT = DOC / "gnuplot/gnuplot.pdf"  # pdfTeX, 648 bookmarks, ruled tables
PACKAGING_TUTORIAL = DOC / "packaging-tutorial/packaging-tutorial.fr.pdf"  # a Beamer deck
CRC_DOC = DOC / "zlib1g-dev/crc-doc.1.0.pdf.gz"  # numbered listings that read as tables
BDB_USENIX = DOC / "db5.3-doc/programmer_reference/bdb_usenix.pdf.gz"  # a two-column paper
HASH_USENIX = DOC / "db5.3-doc/programmer_reference/hash_usenix.pdf.gz"  # figures drawn with text inside
DTC_PAPER = DOC / "device-tree-compiler/dtc-paper.pdf.gz"  # Type 3 fonts without a Unicode map
REFCARD = DOC / "debian-refcard/refcard-en-a4.pdf.gz"  # Debian's reference card
CVS_PAPER = DOC / "cvs/cvs-paper.pdf"  # the CVS paper (the evidence tests)
NETTLE = DOC / "nettle-dev/nettle.pdf.gz"  # Nettle's manual, whose page 61 repeats its signatures
BASE_PASSWD_HTML = DOC / "base-passwd/users-and-groups.html"  # an HTML page (base-passwd is essential)
SPHINX_HTML = DOC / "python-ebooklib-doc/html/tutorial.html"  # a Sphinx HTML manual's page
TEXINFO_HTML = DOC / "r-doc-html/manual/R-intro.html"  # R-intro as Texinfo HTML
DOCBOOK_HTML = DOC / "installation-guide-amd64/en/ch01s01.html"  # the installation guide's DocBook HTML
R_INTRO_PDF = DOC / "r-doc-pdf/manual/R-intro.pdf"  # Texinfo PDF without Title metadata
BIBLATEX_DE = DOC / "texlive-doc/latex/translation-biblatex-de/biblatex-de-Benutzerhandbuch.pdf"  # run-in headings
WHY3_MANUAL = DOC / "why3-doc-pdf/manual.pdf"  # Sphinx's LaTeX: a bookmarked title above a screenshot
LIVE_MANUAL_EPUB = DOC / "live-manual/epub/live-manual.en.epub"  # SiSU's EPUB: sections as bold paragraphs
DOT_GUIDE = DOC / "graphviz/pdf/dotguide.pdf.gz"  # Graphviz's dot guide: ruled tables, vector figures, running heads
# libfaketime (LD_PRELOAD): a replica started with its clock skewed.
FAKETIME_DIR = Path(f"/usr/lib/{platform.machine()}-linux-gnu/faketime")
FAKETIME = FAKETIME_DIR / "libfaketime.so.1"

PACKAGE_OF: dict[Path, str] = {
    GNUPLOT: "gnuplot-doc",
    PACKAGING_TUTORIAL: "packaging-tutorial",
    CRC_DOC: "zlib1g-dev",
    BDB_USENIX: "db5.3-doc",
    HASH_USENIX: "db5.3-doc",
    DTC_PAPER: "device-tree-compiler",
    REFCARD: "debian-refcard",
    CVS_PAPER: "cvs",
    NETTLE: "nettle-dev",
    BASE_PASSWD_HTML: "base-passwd",
    SPHINX_HTML: "python-ebooklib-doc",
    TEXINFO_HTML: "r-doc-html",
    DOCBOOK_HTML: "installation-guide-amd64",
    R_INTRO_PDF: "r-doc-pdf",
    LIVE_MANUAL_EPUB: "live-manual-epub",
    BIBLATEX_DE: "texlive-lang-german",
    WHY3_MANUAL: "why3-doc-pdf",
    DOT_GUIDE: "graphviz-doc",
    FAKETIME: "faketime",
}


def missing(paths: Iterable[Path]) -> str | None:
    """Why these files cannot be read here (the packages to install), or None when they all can."""
    absent = [path for path in paths if not path.exists()]
    if not absent:
        return None
    packages = sorted({PACKAGE_OF.get(path) or doc_package(path) for path in absent})
    return f"needs {', '.join(map(str, absent))}: apt-get install -y {' '.join(packages)} (.ci/run installs it)"


def doc_package(path: Path) -> str:
    """The package a /usr/share/doc/<package>/... path belongs to (its folder is named after it)."""
    if path.is_relative_to(DOC):
        return path.relative_to(DOC).parts[0]
    raise KeyError(f"{path} is no file of scripts/system_files.py: add it to PACKAGE_OF with its package")


def needs(*paths: Path) -> Any:
    """A pytest mark: skip (naming the packages) unless every one of ``paths`` is there."""
    import pytest

    reason = missing(paths)
    return pytest.mark.skipif(reason is not None, reason=reason or "")


def system_file(path: Path) -> Path:
    """``path``, or the running test is skipped naming the package that installs it."""
    reason = missing([path])
    if reason is not None:
        import pytest

        pytest.skip(reason)
    return path


def doc_folders(packages: Iterable[str], *, at_least: int) -> list[Path]:
    """The /usr/share/doc folders of those ``packages`` that are there; the test is skipped (naming them all)
    when fewer than ``at_least`` are."""
    wanted = list(packages)
    present = [DOC / name for name in wanted if (DOC / name).is_dir()]
    if len(present) < at_least:
        import pytest

        pytest.skip(f"needs the docs of {at_least} of these packages: apt-get install -y {' '.join(wanted)}")
    return present
