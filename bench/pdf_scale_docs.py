"""Long generated PDFs for tests and benches at scale: a report whose pages each hold one sentence of their own.

    python -m bench.pdf_scale_docs OUT.pdf [PAGES]

`report_pdf(pages)` writes an A5 report of running prose that flows across page breaks (a paragraph starts
on one page and ends on the next), with a section heading every few pages and now and then a small table.
Each page carries one unique sentence (a name, a four-digit count, a place) somewhere in the prose: near the
top, in the middle or near the bottom, so a chunk that spans a page break often holds it on its second page.
Lines are wrapped here, not by fpdf2, so where every sentence lands is known exactly, never guessed.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from fpdf import FPDF

MARGIN = 42.0
LINE = 14.0  # line height of body text, points
PARAGRAPH_GAP = 7.0  # extra space between paragraphs: what tells the native PDF reader that a paragraph ended
FILLER = (
    "The committee reviewed progress against the plan and noted that several milestones slipped by a few weeks.",
    "Most of the delay came from supplier lead times, which lengthened again during the autumn.",
    "Staff turnover stayed close to the long-run average, and vacancies were filled within two months.",
    "The board asked for a clearer view of how spending in each unit relates to the outcomes it reports.",
    "Several teams moved to a shared planning calendar, which reduced the number of conflicting deadlines.",
    "Budget holders were reminded that unspent funds do not carry over into the following year.",
    "A review of older contracts found terms that no longer reflect current prices or service levels.",
    "Feedback from partners was broadly positive, though some asked for earlier notice of changes.",
    "The finance office will publish a revised schedule of reporting dates before the next meeting.",
    "Work on the shared data platform continued, with the second release delivered on time.",
    "Training hours per employee rose slightly, mostly because of the new safety induction.",
    "The risk register was updated, and two items were closed after their mitigations took effect.",
    "Travel costs fell compared with the previous period as more meetings were held remotely.",
    "An external auditor will sample these figures during the annual review in the spring.",
    "Members agreed to revisit the targets once the full-year results are known.",
    "Maintenance backlogs were reduced, although older buildings still need significant repairs.",
)
NAMES = ("Okonkwo", "Haverford", "Lindqvist", "Moreau", "Tanabe", "Castellanos", "Novak", "Abernathy",
         "Petrossian", "Whitlock", "Delacroix", "Ivanova", "Mbeki", "Fairbanks", "Kowalczyk", "Oyelaran",
         "Quintero", "Sorensen", "Achterberg", "Nakamura", "Villanueva", "Grimaldi", "Eriksdottir",
         "Zeller")  # fmt: skip
PLACES = ("Velmora", "Ashcombe", "Drumlin", "Kestrel Point", "Marrowby", "Tollgate", "Brackwater", "Quillan",
          "Saltmarsh", "Fenwick", "Harrowgate", "Ostend Quay", "Pinecrest", "Rookwood", "Silverton", "Wexmoor",
          "Larchmont", "Cobble Hill", "Thornbury", "Glenmoor", "Redcliffe", "Ambleside", "Dunmore",
          "Yarrowby")  # fmt: skip
# Each template its own subject matter, so two pages' sentences rarely say nearly the same thing.
TEMPLATES = (
    ("Inspector {name} counted {count} {thing} in the {place} depot.",
     ("amber lanterns", "copper valves", "oak barrels", "signal flares", "brass compasses", "iron anchors")),
    ("The {place} observatory logged {count} {thing} during the winter survey led by {name}.",
     ("meteor trails", "aurora displays", "comet sightings", "solar flares", "lunar halos", "fireballs")),
    ("Dr {name} tested {count} samples of {thing} drawn from the {place} basin.",
     ("river silt", "peat moss", "glacial clay", "well water", "limestone dust", "salt crust")),
    ("Volunteers planted {count} {thing} saplings along the {place} towpath under {name}'s supervision.",
     ("rowan", "hornbeam", "wild cherry", "silver birch", "hazel", "field maple")),
    ("Beekeepers near {place} harvested {count} jars of {thing} honey with help from {name}.",
     ("heather", "clover", "lavender", "linden", "borage", "acacia")),
    ("Mechanic {name} rebuilt {count} {thing} at the {place} tram yard before the spring timetable.",
     ("brake drums", "pantographs", "wheel bearings", "door motors", "axle boxes", "bogie frames")),
    ("The {place} theatre sold {count} tickets for {name}'s revival of {thing}.",
     ("The Tempest", "Uncle Vanya", "Hedda Gabler", "The Seagull", "Peer Gynt", "Medea")),
    ("Archivist {name} digitised {count} {thing} from the {place} parish chest.",
     ("baptism ledgers", "tithe maps", "wedding banns", "vestry minutes", "burial registers", "land deeds")),
)  # fmt: skip
SECTIONS = ("Operations", "Finance", "Staffing", "Facilities", "Partnerships", "Risk", "Procurement", "Outlook")


def page_sentences(pages: int, rng: random.Random) -> dict[int, str]:
    """One sentence per page, unique by its count and, most often, by its subject, name and place too."""
    counts = rng.sample(range(1000, 10000), pages)
    sentences = {}
    for page, count in zip(range(1, pages + 1), counts, strict=True):
        template, things = TEMPLATES[page % len(TEMPLATES)]  # neighbouring pages never share a subject
        sentence = template.format(name=rng.choice(NAMES), place=rng.choice(PLACES), thing=rng.choice(things),
                                   count=count)  # fmt: skip
        sentences[page] = sentence
    return sentences


class _Report:
    """Writes lines top to bottom, page by page, and puts each page's sentence at its planned height."""

    def __init__(self, pages: int, rng: random.Random) -> None:
        self.pdf = FPDF(format=(420, 595), unit="pt")  # A5
        self.pdf.set_auto_page_break(False)
        self.pdf.set_creation_date(datetime(2026, 1, 1, tzinfo=UTC))  # deterministic bytes
        self.pdf.set_margins(MARGIN, MARGIN, MARGIN)
        self.pages, self.rng = pages, rng
        self.bottom = self.pdf.h - MARGIN
        self.width = self.pdf.w - 2 * MARGIN
        self.sentences = page_sentences(pages, rng)
        self.placed: dict[int, int] = {}  # planned page -> page the sentence's last line is on
        self.targets: dict[int, float] = {}
        self.full = False
        self._page()

    def _page(self) -> None:
        if self.pdf.page_no() == self.pages:
            self.full = True
            return
        self.pdf.add_page()
        self.pdf.set_font("helvetica", size=10)
        # Near the top, in the middle or near the bottom: room is left below for the longest sentence.
        span = self.bottom - MARGIN - 9 * LINE
        self.targets[self.pdf.page_no()] = MARGIN + LINE + span * self.rng.choice((0.0, 0.05, 0.5, 0.9, 1.0))

    def _line(self, words: list[str]) -> None:
        if self.pdf.get_y() + LINE > self.bottom:
            self._page()
            if self.full:
                return
        self.pdf.cell(self.width, LINE, " ".join(words), new_x="LMARGIN", new_y="NEXT")

    def _due(self) -> str | None:
        page = self.pdf.page_no()
        if page in self.placed or self.pdf.get_y() < self.targets[page]:
            return None
        return self.sentences[page]

    def paragraph(self, filler: Iterator[str]) -> None:
        line: list[str] = []
        for _ in range(self.rng.randint(3, 6)):
            own = self._due()
            page = self.pdf.page_no()
            for word in (own or next(filler)).split():
                if line and self.pdf.get_string_width(" ".join([*line, word])) > self.width:
                    self._line(line)
                    line = []
                line.append(word)
            if own is not None:
                self._line(line)  # the sentence's last words go out now, so its page is known
                line = []
                self.placed[page] = self.pdf.page_no()
        if line:
            self._line(line)
        self.pdf.ln(PARAGRAPH_GAP)

    def heading(self, number: int) -> None:
        if self.pdf.get_y() + 4 * LINE > self.bottom:
            return  # a heading alone at the foot of a page: leave it for the next paragraph boundary
        self.pdf.set_font("helvetica", "B", size=13)
        self.pdf.cell(self.width, 20, f"{number}. {SECTIONS[number % len(SECTIONS)]}", new_x="LMARGIN", new_y="NEXT")
        self.pdf.set_font("helvetica", size=10)
        self.pdf.ln(4)

    def table(self, number: int) -> None:
        rows: list[tuple[str, ...]] = [("Unit", "Budget", "Spent", "Forecast")]
        rows += [(f"Unit {number}-{i}", *(str(self.rng.randint(100, 999)) for _ in range(3))) for i in range(1, 4)]
        if self.pdf.get_y() + 5 * 18 + 12 > self.bottom:
            return
        with self.pdf.table(borders_layout="ALL", first_row_as_headings=True, line_height=18) as table:
            for row in rows:
                cells = table.row()
                for cell in row:
                    cells.cell(cell)
        self.pdf.ln(PARAGRAPH_GAP)


def report_pdf(pages: int, *, seed: int = 0) -> tuple[bytes, dict[int, str]]:
    """A ``pages``-page A5 report and, for each page number (from 1), the one sentence only that page holds."""
    if pages < 1:
        raise ValueError(f"pages must be at least 1, not {pages}")
    rng = random.Random(seed)
    report = _Report(pages, rng)
    filler = iter(lambda: rng.choice(FILLER), None)
    section = 1
    report.heading(section)
    while not report.full:
        report.paragraph(filler)
        here = report.pdf.page_no()
        if here in report.placed and rng.random() < 0.12:
            section += 1
            report.heading(section)
        elif here in report.placed and rng.random() < 0.05:
            report.table(section)
    wrong = {page: where for page, where in report.placed.items() if where != page}
    if len(report.placed) != pages or wrong:
        raise RuntimeError(f"sentences misplaced (planned page -> page): {wrong}; {pages - len(report.placed)} lost")
    return bytes(report.pdf.output()), report.sentences


if __name__ == "__main__":
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "report.pdf")
    data, _ = report_pdf(int(sys.argv[2]) if len(sys.argv) > 2 else 200)
    out.write_bytes(data)
    print(out, len(data), "bytes")
