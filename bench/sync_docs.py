"""The folders bench.sync syncs: a mixed one (Markdown, text, small PDFs, DOCX) and a big one of small text files.

Every file holds one marker word of its own (``mark00421``) that nothing else holds, so a keyword search for
it finds that file's passage and only it; an edit swaps the marker for another (``edit00421r1``). Content is
drawn from a seeded generator: the same ``--files`` gives the same folder.
"""

from __future__ import annotations

import io
import random
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from docx import Document
from fpdf import FPDF

SENTENCES = (
    "The harbour office moved the ferry timetable to the spring schedule after the storm season ended.",
    "Drip irrigation with soil moisture sensors halved the water used on the vegetable beds.",
    "Each new employee receives a laptop, a badge and an introduction to the security policies.",
    "The billing database migration finished over the weekend without any customer impact.",
    "Barn owls hunt voles at night over the rough grassland beside the old railway line.",
    "The committee postponed the vote because several members were ill and could not attend.",
    "Sourdough starter needs flour and water every morning and a warm corner of the kitchen.",
    "Survey teams measured the glacier front every week from June until the end of September.",
    "Invoices above the approval limit go to the finance director before the end of the month.",
    "The library extended its opening hours on Thursdays for students preparing their exams.",
    "Solar panels on the depot roof now cover most of the electricity used by the workshop.",
    "A cracked pipe under the north car park flooded the storage room on Tuesday night.",
    "The cycling club repaints the route markers along the river path every second summer.",
    "Quarterly revenue grew in the northern region while costs stayed flat across departments.",
    "Beekeepers inspect the hive frames for queen cells every week during the swarming season.",
    "The new rota gives each nurse two consecutive days off after a run of night shifts.",
)
TOPICS = ("Harbour", "Garden", "Onboarding", "Billing", "Wildlife", "Committee", "Kitchen", "Glacier",
          "Finance", "Library", "Energy", "Facilities", "Cycling", "Revenue", "Beekeeping", "Rota")  # fmt: skip
PER_FOLDER = 100  # files per sub-folder: the walk recurses like it would in a real tree
FIXED = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Made:
    rel: str
    kind: str  # md | txt | pdf | docx
    marker: str


def marker(index: int, edit: int = 0) -> str:
    return f"edit{index:05d}r{edit}" if edit else f"mark{index:05d}"


def kind_of(index: int) -> str:
    """5 % PDF, 5 % DOCX, 20 % text, 70 % Markdown, interleaved so every sub-folder holds each kind."""
    slot = index % 20
    return "pdf" if slot == 0 else "docx" if slot == 10 else "txt" if slot % 5 == 1 else "md"


def paragraphs(index: int, word: str) -> tuple[str, list[str]]:
    rng = random.Random(index)
    title = f"{rng.choice(TOPICS)} note {index}"
    body = [" ".join(rng.sample(SENTENCES, 3)) for _ in range(rng.randint(2, 4))]
    body.insert(rng.randrange(len(body) + 1), f"Reference {word} is recorded for this note only.")
    return title, body


def render(kind: str, title: str, body: list[str]) -> bytes:
    if kind == "md":
        return (f"# {title}\n\n" + "".join(f"## Part {n}\n\n{p}\n\n" for n, p in enumerate(body, 1))).encode()
    if kind == "txt":
        return (f"{title}\n\n" + "\n\n".join(body) + "\n").encode()
    if kind == "pdf":
        pdf = FPDF(format="A4", unit="pt")
        pdf.set_creation_date(FIXED)  # deterministic bytes
        pdf.add_page()
        pdf.set_font("helvetica", "B", size=16)
        pdf.multi_cell(0, 22, title)
        pdf.set_font("helvetica", size=11)
        for paragraph in body:
            pdf.ln(6)
            pdf.multi_cell(0, 15, paragraph)
        return bytes(pdf.output())
    document = Document()
    document.core_properties.created = document.core_properties.modified = FIXED.replace(tzinfo=None)
    document.add_heading(title, level=1)
    for paragraph in body:
        document.add_paragraph(paragraph)
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def rel_of(index: int, kind: str, prefix: str = "note") -> str:
    return f"part{index // PER_FOLDER:03d}/{prefix}{index:05d}.{kind}"


def write(folder: Path, index: int, *, edit: int = 0, kind: str | None = None, prefix: str = "note") -> Made:
    """File ``index`` (``edit`` > 0: its ``edit``-th version, with a new marker) written under ``folder``."""
    kind = kind or kind_of(index)
    word = marker(index, edit)
    title, body = paragraphs(index, word)
    rel = rel_of(index, kind, prefix)
    path = folder / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(render(kind, title, body))
    return Made(rel, kind, word)


def mixed_folder(folder: Path, count: int) -> list[Made]:
    return [write(folder, index) for index in range(count)]


def small_text_folder(folder: Path, count: int) -> int:
    """``count`` small text files (one short passage each); answers the bytes written."""
    total = 0
    for index in range(count):
        rng = random.Random(index)
        text = f"Small note {index}. {rng.choice(SENTENCES)} Reference {marker(index)}.\n"
        path = folder / rel_of(index, "txt", "small")
        path.parent.mkdir(parents=True, exist_ok=True)
        total += path.write_bytes(text.encode())
    return total
