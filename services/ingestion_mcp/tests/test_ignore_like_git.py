"""Ignore files exactly as git reads them (issue 48, point 2): the walk's verdicts against `git check-ignore` on 500
random trees (nested ignore files, negations, `**`, folder-only and anchored patterns, brackets, escapes, trailing
spaces), the whitelist idioms through a real MCP client, and every answer saying how many files each ignore file
hid. Before, the matcher (pathspec) answered "ignored" for a folder `!*/` re-includes and never entered `foo/`
for `foo/**` + `!foo/bar.md`: 4 files git keeps were not indexed, and nothing said so."""

from __future__ import annotations

import random
import subprocess
from pathlib import Path
from typing import Any

import pytest
from ingestion_mcp.ingest.walk import SyncOptions, Walk

pytestmark = pytest.mark.timeout(300)
NAMES = ["a", "b", "foo", "bar", "x.md", "y.txt", "bar.md", "c.md", "d1", "ab.md", "b.txt", "!bang", "#hash",
         "sp ace.md", "q?.md", "[x].md", "Ab.MD", "a*b"]  # fmt: skip
FOLDERS = ["foo", "bar", "a", "sub", "d1", "deep", "build", "x.md"]
IDIOMS = ["*", "!*/", "!*.md", "foo/**", "!foo/bar.md", "/a", "a/", "**/b", "a/**/c.md", "*.txt", "!x.txt", "\\!bang",
          "\\#hash", "[ab].md", "?.md", "d*/", "x.md   ", "sp\\ ace.md", "#comment", "", "build/", "!build/", "/foo",
          "foo", "bar/**/", "!bar/**/", "**/", "sub/", "[x].md", "\\[x].md", "q\\?.md", "!", "\\", "[!a]*.md",
          "**", "deep", "!deep/**", "*/c.md", "/*.md", "!/x.md", "a/b", "x.md/", "[[:upper:]]*", "[a-c]*",
          "a\\*b"]  # fmt: skip
PIECES = ["a", "b", "foo", "bar", "*", "**", "?", "*.md", "x.md", "[ab]*", "[!a]*", "[^b].md", "[[:alpha:]]*",
          "[a-c].md", "\\*", "d?", "*a*", "sub", "deep", "[]ab]", "q\\?.md"]  # fmt: skip


def pattern(rng: random.Random) -> str:
    if rng.random() < 0.5:
        return rng.choice(IDIOMS)
    line = "/".join(rng.choice(PIECES) for _ in range(rng.randint(1, 3)))
    line = ("/" if rng.random() < 0.2 else "") + line + ("/" if rng.random() < 0.25 else "")
    return ("!" if rng.random() < 0.3 else "") + line + ("  " if rng.random() < 0.05 else "")


def random_tree(root: Path, rng: random.Random) -> list[str]:
    files: list[str] = []

    def fill(folder: Path, rel: str, depth: int) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        for name in rng.sample(NAMES, rng.randint(1, 5)):
            if not (folder / name).exists():
                (folder / name).write_text("x")
                files.append(rel + name)
        if rng.random() < 0.6:
            (folder / ".gitignore").write_text("\n".join(pattern(rng) for _ in range(rng.randint(1, 6))) + "\n")
        for sub in rng.sample(FOLDERS, rng.randint(0, 3)) if depth < 3 else []:
            if not (folder / sub).exists():
                fill(folder / sub, f"{rel}{sub}/", depth + 1)

    fill(root, "", 0)
    return files


def git_keeps(root: Path, files: list[str]) -> set[str]:
    """The files `git check-ignore` does not call ignored (a negated match is a keep)."""
    answer = subprocess.run(
        ["git", "check-ignore", "--stdin", "-z", "-v", "-n", "--no-index"], cwd=root, input="\0".join(files) + "\0",
        capture_output=True, text=True, check=False,
    ).stdout.split("\0")  # fmt: skip
    verdicts = [answer[i : i + 4] for i in range(0, len(answer) - 1, 4)]
    return {path for source, _, line, path in verdicts if not source or line.startswith("!")}


def test_the_walk_ignores_what_git_check_ignore_ignores_on_500_random_trees(tmp_path: Path) -> None:
    """Each tree is a folder of one repository with no ignore file above it: git reads its ignore files exactly as
    if it were the repository's root ("/a" is anchored to the file's own folder), and one check-ignore answers all."""
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    trees = {seed: random_tree(repo / f"t{seed}", random.Random(seed)) for seed in range(500)}
    kept = git_keeps(repo, [f"t{seed}/{rel}" for seed, files in trees.items() for rel in files])
    differ = []
    for seed in trees:
        root = repo / f"t{seed}"
        ours = {e.rel for e in Walk(root, [root], SyncOptions(str(root), "c")).all()}
        theirs = {rel for rel in trees[seed] if f"t{seed}/{rel}" in kept}
        if ours != theirs:
            differ.append((seed, sorted(ours - theirs), sorted(theirs - ours)))
    assert differ == [], differ[:3]  # (seed, kept only by us, kept only by git)


def test_a_git_repository_s_kept_files_are_the_walk_s(tmp_path: Path) -> None:
    """The same on git's own walk (`git ls-files --others --exclude-standard`), on the issue's two idioms."""
    idioms = ((["*", "!*/", "!*.md"], ["a.md", "b.txt", "foo/bar.md", "foo/x.txt", "sub/deep/c.md"]),
              (["foo/**", "!foo/bar.md"], ["foo/bar.md", "foo/x.txt", "foo/sub/bar.md", "top.md"]))  # fmt: skip
    for lines, files in idioms:
        repo = tmp_path / str(len(lines))
        for rel in files:
            (repo / rel).parent.mkdir(parents=True, exist_ok=True)
            (repo / rel).write_text("x")
        (repo / ".gitignore").write_text("\n".join(lines) + "\n")
        subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
        listed = subprocess.run(["git", "ls-files", "-o", "--exclude-standard"], cwd=repo, capture_output=True,
                                text=True, check=True).stdout.split()  # fmt: skip
        ours = sorted(e.rel for e in Walk(repo, [repo], SyncOptions(str(repo), "c")).all())
        assert ours == sorted(p for p in listed if not p.startswith(".")), lines


async def test_the_idioms_sync_what_git_keeps_and_the_answers_count_what_each_ignore_file_hid(
    connect: Any, call_tool: Any, docs_dir: Path, prose: Any
) -> None:
    folder = docs_dir / "whitelist"
    texts = iter(prose("GPL-2", 12))
    for rel in ("a.md", "b.txt", "foo/bar.md", "foo/x.txt", "sub/deep/c.md", "sub/deep/d.txt", "docs/keep.md",
                "docs/drop.md", "docs/deep/drop.md"):  # fmt: skip
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(next(texts))
    (folder / ".gitignore").write_text("*\n!*/\n!*.md\n")
    (folder / "docs" / ".gitignore").write_text("**\n!keep.md\n!*/\n")
    async with connect() as client:
        done = await call_tool(client, "sync_folder", folder=str(folder), collection="whitelist")
        assert done["counts"]["added"] == 4 and done["counts"]["ignored"] == 5, done
        assert "5 ignored by ignore files (.gitignore 3, docs/.gitignore 2" in done["message"], done["message"]
        listed = await call_tool(client, "list_documents", collection="whitelist", limit=20)
        assert sorted(d["source"] for d in listed["documents"]) == ["a.md", "docs/keep.md", "foo/bar.md",
                                                                    "sub/deep/c.md"]  # fmt: skip
        shown = await call_tool(client, "get_collections", collection="whitelist")
        assert "5 files and folders hidden by ignore files (whitelist/.gitignore 3, whitelist/docs/.gitignore 2)" in (
            shown["message"]), shown["message"]  # fmt: skip
