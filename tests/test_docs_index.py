"""The README is a front door (at most 300 lines) that points at the docs index; the index names every page of
docs/; every relative link of the README, the docs and the bench index leads to a file that is there."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LINK = re.compile(r"\]\(([^)\s]+)\)")
README_LINES = 300


def pages() -> list[Path]:
    """Ours: docs/specs holds other teams' contracts, copied unchanged (their links lead into their repositories)."""
    docs = [page for page in (REPO / "docs").rglob("*.md") if page.parent.name != "specs"]
    return sorted([REPO / "README.md", REPO / "bench" / "README.md", REPO / "docs" / "specs" / "README.md", *docs])


def test_the_readme_is_a_front_door() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= README_LINES, "move the detail into docs/ (docs/README.md lists the pages)"
    for needed in ("](docs/README.md)", "](docs/profiles.md#rooms-of-the-mcp-package)", "](docs/benchmarks.md"):
        assert needed in readme, needed


def test_the_docs_index_names_every_page() -> None:
    index = (REPO / "docs" / "README.md").read_text(encoding="utf-8")
    linked = {(REPO / "docs" / target.split("#")[0]).resolve() for target in LINK.findall(index)}
    unlisted = [
        str(page.relative_to(REPO))
        for page in (REPO / "docs").rglob("*.md")
        if page.name != "README.md" and page.parent.name != "specs" and page.resolve() not in linked
    ]
    assert unlisted == [], "add each page to docs/README.md with a line on what it holds"


def test_every_relative_link_leads_to_a_file() -> None:
    broken = [
        f"{page.relative_to(REPO)}: {target}"
        for page in pages()
        for target in LINK.findall(page.read_text(encoding="utf-8"))
        if not re.match(r"[a-z]+:", target)
        and not target.startswith("#")
        and not (page.parent / target.split("#")[0]).exists()
    ]
    assert broken == []
