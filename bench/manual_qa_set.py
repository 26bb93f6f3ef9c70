"""The manual question set of bench.manual_qa: its manuals, their files, its questions and how an answer is matched.

A question (one JSON line of bench/sets/manual_qa/<manual>.jsonl) holds: ``manual`` (a name of bench/manuals.py's
set), ``document`` (the file: the PDF, or the HTML page), ``question`` (in the manual's language), ``answer`` (the
words or short quotes the answering section holds, each matched apart), ``section`` (the answering section's heading
path as get_document_outline gives it, top down) and ``page`` (the PDF page the answer is on; null for HTML).
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from .manual_html import HTML_MANUALS
from .manuals import MANUALS

SET = Path(__file__).resolve().parent / "sets" / "manual_qa"
# PDF and HTML, four languages, seven generators.
CHOSEN = ("nettle", "r-intro-pdf", "install-de", "biblatex-de", "amc-fr", "packaging-guide-es", "rust-book-html",
          "install-fr-html")  # fmt: skip
FIELDS = ("manual", "document", "question", "answer", "section", "page")


@dataclass(frozen=True)
class Question:
    id: str
    manual: str
    document: str
    question: str
    answer: tuple[str, ...]
    section: list[str]
    page: int | None

    @property
    def doc_key(self) -> str:
        return f"{self.manual}/{self.document}"


def manual_files(manual: str) -> list[Path]:
    """The files a manual of the set is made of (a PDF, or its HTML pages)."""
    for name, path, _which, _package in MANUALS:
        if name == manual:
            return [path]
    for name, _language, _generator, _package, pages in HTML_MANUALS:
        if name == manual:
            return pages()
    raise KeyError(f"{manual} is not in bench/manuals.py's set")


def load_questions(folder: Path = SET) -> list[Question]:
    questions = []
    for path in sorted(folder.glob("*.jsonl")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            row = json.loads(line)
            missing = [f for f in FIELDS if f not in row]
            if missing:
                raise ValueError(f"{path.name}:{number}: missing {missing}")
            answer = (row["answer"],) if isinstance(row["answer"], str) else tuple(row["answer"])
            questions.append(Question(f"{path.stem}:{number}", row["manual"], row["document"], row["question"],
                                      answer, list(row["section"]), row["page"]))  # fmt: skip
    return questions


_MARKUP = re.compile(r"[*_`\\#|>\[\]]+")
_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2212": "-", "\u2013": "-"})


def plain(text: str) -> str:
    """Text as matched: NFKC (ligatures apart), case folded, curly quotes and dashes straight, Markdown marks dropped,
    hyphenated line ends joined, spaces collapsed."""
    text = unicodedata.normalize("NFKC", text).casefold().replace("\u00ad", "").translate(_QUOTES)
    text = re.sub(r"(\w)-\s*\n\s*(\w)", r"\1\2", text)
    return " ".join(_MARKUP.sub(" ", text).split())


def holds(text: str, answer: tuple[str, ...]) -> bool:
    """Every word or quote of the answer is in the text."""
    where = plain(text)
    return all(plain(part) in where for part in answer)
