"""bench.manual_qa's question set has the shape issue 52 (point 5) asks for, checked without the server: 150+
questions over 8+ manuals of the project's manual set (PDF and HTML, several languages), each with the heading path
of the section that answers it and the words that answer it."""

from __future__ import annotations

from collections import Counter

from bench.manual_html import HTML_MANUALS
from bench.manual_qa_set import CHOSEN, holds, load_questions
from bench.manuals import LANGUAGE, MANUALS

PDFS = {name for name, *_ in MANUALS}
HTML = {name: language for name, language, *_ in HTML_MANUALS}


def test_the_set_has_150_questions_over_8_manuals_of_the_manual_set() -> None:
    questions = load_questions()
    per_manual = Counter(q.manual for q in questions)
    assert len(questions) >= 150
    assert len(per_manual) >= 8 and set(per_manual) == set(CHOSEN)
    assert set(per_manual) <= PDFS | set(HTML), "every manual is one of bench/manuals.py's set"
    assert min(per_manual.values()) >= 15, per_manual
    assert set(per_manual) & PDFS and set(per_manual) & set(HTML), "PDF and HTML manuals both"
    languages = {HTML.get(m) or LANGUAGE.get(m, "en") for m in per_manual}
    assert len(languages) >= 3, languages


def test_every_question_has_its_section_answer_and_page() -> None:
    questions = load_questions()
    assert len({q.question for q in questions}) == len(questions), "no question twice"
    for q in questions:
        assert q.question.strip() and q.document.strip(), q.id
        assert q.section and all(title.strip() for title in q.section), q.id
        assert q.answer and all(part.strip() for part in q.answer), q.id
        assert q.question.casefold() != q.section[-1].casefold(), f"{q.id}: a question, not the heading"
        if q.manual in PDFS:
            assert isinstance(q.page, int) and q.page >= 1, f"{q.id}: a PDF's question names its page"


def test_an_answer_is_found_across_line_breaks_ligatures_and_markdown() -> None:
    assert holds("Nettle uses the \\_*mini-gmp*\\_ imple-\nmentation of the e\ufb00ect", ("mini-gmp implementation",
                                                                                        "effect"))  # fmt: skip
    assert not holds("the first 256 bytes", ("discard the first 512 bytes",))
