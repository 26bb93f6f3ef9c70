"""Sections at ATX headings: nesting, code fences, CRLF, things that only look like headings."""

from __future__ import annotations

from chunker_service.markdown import MAX_TITLE_CHARS, split_sections


def _paths(text: str) -> list[tuple[str, tuple[str, ...]]]:
    return [(text[s.start : s.end], s.heading_path) for s in split_sections(text)]


def test_nested_headings_give_the_path_from_the_top() -> None:
    text = "# Guide\nintro\n## Install\n### Linux\napt\n### Mac\nbrew\n## Use\nrun\n# Other\n"
    paths = [p for _, p in _paths(text)]
    assert paths == [
        ("Guide",),
        ("Guide", "Install"),
        ("Guide", "Install", "Linux"),
        ("Guide", "Install", "Mac"),
        ("Guide", "Use"),
        ("Other",),
    ]


def test_sections_tile_the_text_and_keep_their_heading_line() -> None:
    text = "preface\n\n# A\nbody a\n## B\nbody b\n"
    sections = split_sections(text)
    assert [text[s.start : s.end] for s in sections] == ["preface\n\n", "# A\nbody a\n", "## B\nbody b\n"]
    assert sections[0].heading_path == ()
    assert sections[-1].end == len(text)


def test_heading_inside_a_code_fence_is_code() -> None:
    text = "# Real\n```python\n# comment, not a heading\n~~~\n```\nafter\n## Next\n"
    assert [p for _, p in _paths(text)] == [("Real",), ("Real", "Next")]


def test_tilde_fence_closes_only_with_tildes_as_long_as_the_opening() -> None:
    text = "# A\n~~~~\n# no\n~~~\n# still code\n~~~~~\n# B\n"
    assert [p for _, p in _paths(text)] == [("A",), ("B",)]


def test_unclosed_fence_runs_to_the_end() -> None:
    text = "# A\n```\n# code\n"
    assert [p for _, p in _paths(text)] == [("A",)]


def test_inline_triple_backticks_do_not_open_a_fence() -> None:
    text = "# A\n```inline``` text\n# B\n"
    assert [p for _, p in _paths(text)] == [("A",), ("B",)]


def test_things_that_are_not_headings() -> None:
    text = "#hashtag\n    # indented code\n####### seven\n> # quoted\ntext\n"
    assert [p for _, p in _paths(text)] == [()]


def test_closing_hashes_and_spacing_are_not_part_of_the_title() -> None:
    text = "  ## Title with # inside ##  \n#\tTab\n### ###\n"
    paths = [p for _, p in _paths(text)]
    assert paths == [("Title with # inside",), ("Tab",), ("Tab",)]  # an empty heading adds no name


def test_crlf_line_endings() -> None:
    text = "# One\r\nbody\r\n## Two\r\nmore\r\n"
    assert _paths(text) == [("# One\r\nbody\r\n", ("One",)), ("## Two\r\nmore\r\n", ("One", "Two"))]


def test_long_titles_are_shortened_in_the_path() -> None:
    text = "# " + "t" * 10_000 + "\nbody\n"
    (title,) = split_sections(text)[0].heading_path
    assert len(title) == MAX_TITLE_CHARS and title.endswith("…")


def test_plain_text_mode_is_one_section() -> None:
    text = "# not a section\nbody\n## also not\n"
    (section,) = split_sections(text, markdown=False)
    assert (section.start, section.end, section.heading_path) == (0, len(text), ())


def test_each_heading_keeps_its_level_beside_its_title() -> None:
    """Issue 30, point 2: `#` then `###` is levels 1 and 3, not depths 1 and 2; an empty heading is neither."""
    text = "# A\n\nx\n\n### C\n\ny\n\n##\n\nz\n\n## D\n\nw"
    assert [(s.heading_path, s.heading_levels) for s in split_sections(text)] == [
        (("A",), (1,)), (("A", "C"), (1, 3)), (("A",), (1,)), (("A", "D"), (1, 2))
    ]  # fmt: skip
