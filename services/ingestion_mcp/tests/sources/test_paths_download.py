"""Local path confinement (resolve_allowed) and fetch_file's save step (save_download)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from ingestion_mcp.sources import SourceError, resolve_allowed, sanitize_filename, save_download


@pytest.fixture
def roots(tmp_path: Path) -> tuple[Path, Path, Path]:
    docs, more, outside = tmp_path / "docs", tmp_path / "more", tmp_path / "outside"
    for folder in (docs, more, outside):
        folder.mkdir()
    (docs / "sub").mkdir()
    (docs / "sub" / "a.md").write_text("# A")
    (more / "b.txt").write_text("b")
    (outside / "secret.txt").write_text("secret")
    return docs, more, outside


def test_files_under_any_root_resolve(roots: tuple[Path, Path, Path]) -> None:
    docs, more, _ = roots
    assert resolve_allowed(docs / "sub" / "a.md", [docs, more]) == (docs / "sub" / "a.md").resolve()
    assert resolve_allowed(str(more / "b.txt"), [docs, more]) == (more / "b.txt").resolve()
    assert resolve_allowed("sub/a.md", [docs, more]) == (docs / "sub" / "a.md").resolve()  # relative: first root


@pytest.mark.parametrize(
    "attack",
    [
        "../outside/secret.txt",
        "sub/../../outside/secret.txt",
        "{outside}/secret.txt",
        "/etc/passwd",
        "{docs}/../outside/secret.txt",
    ],
)
def test_escapes_are_refused_with_the_allowed_roots_named(roots: tuple[Path, Path, Path], attack: str) -> None:
    docs, more, outside = roots
    with pytest.raises(SourceError) as caught:
        resolve_allowed(attack.format(outside=outside, docs=docs), [docs, more])
    assert caught.value.code == "INVALID_PATH"
    assert str(docs.resolve()) in caught.value.message and str(more.resolve()) in caught.value.message


def test_symlink_escaping_the_root_is_refused(roots: tuple[Path, Path, Path]) -> None:
    docs, _, outside = roots
    (docs / "innocent.txt").symlink_to(outside / "secret.txt")
    (docs / "linkdir").symlink_to(outside, target_is_directory=True)
    for path in (docs / "innocent.txt", docs / "linkdir" / "secret.txt"):
        with pytest.raises(SourceError) as caught:
            resolve_allowed(path, [docs])
        assert caught.value.code == "INVALID_PATH"
        assert "link that leads outside" in caught.value.message
        assert str(outside) not in caught.value.message  # an error never shows where the link leads


def test_symlink_inside_the_root_is_fine(roots: tuple[Path, Path, Path]) -> None:
    docs, _, _ = roots
    (docs / "alias.md").symlink_to(docs / "sub" / "a.md")
    assert resolve_allowed(docs / "alias.md", [docs]) == (docs / "sub" / "a.md").resolve()


@pytest.mark.parametrize("bad", ["a\x00.md", "", "sub/\x1b[31m.md"])
def test_nul_and_control_characters_are_refused(roots: tuple[Path, Path, Path], bad: str) -> None:
    with pytest.raises(SourceError) as caught:
        resolve_allowed(bad, [roots[0]])
    assert caught.value.code == "INVALID_PATH"


def test_missing_file_and_directories(roots: tuple[Path, Path, Path]) -> None:
    docs = roots[0]
    with pytest.raises(SourceError) as caught:
        resolve_allowed(docs / "nope.pdf", [docs])
    assert caught.value.message == f"File not found: {docs / 'nope.pdf'}."
    assert caught.value.suggestion == "Verify the file exists and the path is absolute."
    with pytest.raises(SourceError, match="not a regular file"):
        resolve_allowed(docs / "sub", [docs])


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("report.pdf", "report.pdf"),
        ("../../etc/passwd", "passwd"),
        ("..\\..\\windows\\system32\\evil.dll", "evil.dll"),
        ("/abs/path/doc.md", "doc.md"),
        (".bashrc", "bashrc"),
        ("a\x00b.pdf", "a_b.pdf"),
        ("line\nbreak.txt", "line_break.txt"),
        ("what?.md", "what_.md"),
        ("name..pdf", "name.pdf"),
        ("CON.txt", "_CON.txt"),
        ("Q3 report (final).pdf", "Q3 report (final).pdf"),
        ("résumé.pdf", "résumé.pdf"),
    ],
)
def test_sanitize_filename(given: str, expected: str) -> None:
    assert sanitize_filename(given) == expected


@pytest.mark.parametrize("hopeless", ["..", ".", "/", "", "???", "\x00\x01"])
def test_unusable_names_are_refused(hopeless: str) -> None:
    with pytest.raises(SourceError) as caught:
        sanitize_filename(hopeless)
    assert caught.value.code == "INVALID_PATH"


def test_long_names_are_bounded_and_keep_the_extension() -> None:
    name = sanitize_filename("é" * 300 + ".pdf")
    assert name.endswith(".pdf") and len(name.encode()) <= 200


def test_save_download_writes_inside_the_folder(tmp_path: Path) -> None:
    folder = tmp_path / "fetched" / "new"
    path = save_download(b"%PDF-1.4 data", folder, "../../escape.pdf", roots=[tmp_path])
    assert path == (folder / "escape.pdf").resolve()
    assert path.read_bytes() == b"%PDF-1.4 data"
    assert [p.name for p in folder.iterdir()] == ["escape.pdf"]  # no temp file left behind


def test_overwrite_flag(tmp_path: Path) -> None:
    save_download(b"one", tmp_path, "a.txt")
    with pytest.raises(SourceError) as caught:
        save_download(b"two", tmp_path, "a.txt", overwrite=False)
    assert caught.value.code == "INVALID_PATH" and "overwrite" in caught.value.suggestion
    assert (tmp_path / "a.txt").read_bytes() == b"one"
    save_download(b"three", tmp_path, "a.txt", overwrite=True)
    assert (tmp_path / "a.txt").read_bytes() == b"three"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt"]


def test_folder_outside_the_roots_is_refused(tmp_path: Path) -> None:
    root, elsewhere = tmp_path / "root", tmp_path / "elsewhere"
    root.mkdir()
    elsewhere.mkdir()
    (root / "escape").symlink_to(elsewhere, target_is_directory=True)
    for folder in (elsewhere, root / "escape", root / "escape" / "deeper"):
        with pytest.raises(SourceError) as caught:
            save_download(b"x", folder, "a.txt", roots=[root])
        assert caught.value.code == "INVALID_PATH"
    assert list(elsewhere.iterdir()) == []


def test_symlinked_target_name_is_not_written_through(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    folder = tmp_path / "dl"
    folder.mkdir()
    os.symlink(victim, folder / "a.txt")
    with pytest.raises(SourceError):
        save_download(b"evil", folder, "a.txt")
    assert victim.read_text() == "keep me"
