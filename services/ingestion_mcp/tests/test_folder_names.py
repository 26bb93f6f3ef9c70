"""Any name a file system holds, in a synced folder (issue 48, point 1): bytes that are not UTF-8, newlines, NFC and
NFD twins, very long names and paths, bidirectional overrides, backslashes. Each file is ingested or listed as failed
with its reason (names escaped), the rest syncs, the dry run says exactly what the real run does, every key leads
back to its own file, and a watch lives on through a name its library cannot decode."""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from ingestion_mcp.sources.file_names import escaped, file_of, unescaped

pytestmark = pytest.mark.timeout(600)


def put(folder: Path, name: bytes | str, text: str | bytes) -> Path:
    """A file by its raw name (bytes: any name the file system holds)."""
    path = os.path.join(os.fsencode(folder), os.fsencode(name))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as handle:
        handle.write(text.encode() if isinstance(text, str) else text)
    return Path(os.fsdecode(path))


@given(st.lists(st.integers(1, 255).filter(lambda b: b != ord("/")), min_size=1, max_size=40))
def test_every_name_escapes_to_printable_text_and_back(raw: list[int]) -> None:
    name = os.fsdecode(bytes(raw))
    shown = escaped(name)
    shown.encode("utf-8")  # storable in JSON, HTTP, MCP: no lone surrogate left
    assert not any(unicodedata.category(ch) in ("Cc", "Cs", "Zl", "Zp") for ch in shown)  # one line, no control
    assert unescaped(shown) == name and os.fsencode(unescaped(shown)) == bytes(raw)


def test_ordinary_names_are_their_own_keys_and_odd_ones_read_as_escapes() -> None:
    for name in ("notes/café.md", unicodedata.normalize("NFD", "café.md"), "日本語.txt", "a b (1).md", "100%.md"):
        assert escaped(name) == name
    assert escaped(os.fsdecode(b"bad\xffname.md")) == "bad\\xffname.md"
    assert escaped("new\nline.md") == "new\\u000aline.md"
    assert escaped("\u202egnp.md") == "\\u202egnp.md"  # would read "dm.png" backwards
    assert escaped("back\\slash.md") == "back\\\\slash.md"  # so that no name can forge another's escape
    assert escaped("bad\\xffname.md") != escaped(os.fsdecode(b"bad\xffname.md"))
    with pytest.raises(ValueError):
        unescaped("a\\qb")


async def synced(client: Any, call_tool: Any, folder: Path, collection: str, **options: Any) -> dict[str, Any]:
    out = await call_tool(client, "sync_folder", folder=str(folder), collection=collection, **options)
    assert out["success"] is True and "job_id" not in out, out
    return out


def hostile_tree(folder: Path, texts: Iterator[str]) -> dict[str, str]:
    """The tree, and for the files that must fail, the words their reason must hold."""
    for name in (b"bad\xffname.md", b"new\nline.md", "café.md", unicodedata.normalize("NFD", "café.md"),
                 "L" * 252 + ".md", "back\\slash.md", "\u202egnp.md", b"tab\there \xe9t\xe9.txt"):  # fmt: skip
        put(folder, name, next(texts))
    deep = "/".join(["d" * 240] * 9)  # a path past the 2,048 characters a key holds
    put(folder, f"{deep}/deep.md", next(texts))
    put(folder, "empty.md", "")
    put(folder, "latin1.txt", "Caf\xe9 cr\xe8me, na\xefve r\xe9sum\xe9: written in Latin-1.".encode("latin-1"))
    put(folder, b"punct\xfe.md", "!!! --- ??? *** ...")
    os.mkfifo(folder / "pipe.md")
    return {
        "d" * 240 + "/": "a document's key holds at most 2,048",
        "empty.md": "File is empty: empty.md",
        "latin1.txt": "latin1.txt is not UTF-8",
        "punct\\xfe.md": "no letters or digits",
        "pipe.md": "not a regular file",
    }


async def test_a_hostile_tree_syncs_and_its_dry_run_says_exactly_what_the_real_run_does(
    connect, call_tool, docs_dir: Path, prose: Callable[[str, int], list[str]]
) -> None:
    """Issue 48: one name that is not UTF-8 failed the whole sync ("keys.1: Input should be a valid string") after
    a dry run had promised "2 added, 0 failed"; newline names were refused."""
    folder = docs_dir / "hostile"
    texts = prose("GPL-3", 10)
    failing = hostile_tree(folder, iter(texts))
    async with connect() as client:
        dry = await synced(client, call_tool, folder, "hostile_names", dry_run=True)
        real = await synced(client, call_tool, folder, "hostile_names")
        assert real["counts"] == dry["counts"] == {"added": 8, "replaced": 0, "unchanged": 0, "removed": 0,
                                                   "failed": 5}, (dry, real)  # fmt: skip
        assert sorted(real["failed"]) == sorted(dry["failed"])
        for start, words in failing.items():
            (line,) = [f for f in real["failed"] if f.startswith(start)]
            assert words in line, line
        listed = await call_tool(client, "list_documents", collection="hostile_names", limit=50)
        keys = [d["key"] for d in listed["documents"]]
        assert len(keys) == 8 and len(set(keys)) == 8  # the NFC and NFD twins are two documents
        for key in keys:  # every key leads back to its own file, and only it
            assert os.path.samefile(file_of(key), folder.resolve() / Path(unescaped(key)).name), key
        assert {Path(k).name for k in keys} >= {"bad\\xffname.md", "new\\u000aline.md", "\\u202egnp.md"}
        for paragraph, name in zip(texts, ("bad\\xffname.md", "new\\u000aline.md"), strict=False):
            found = await call_tool(client, "search", query=paragraph[:120], collection="hostile_names")
            assert found["results"][0]["source"] == name, found["results"][0]  # shown readably
        again = await synced(client, call_tool, folder, "hostile_names")
        assert again["counts"] == {"added": 0, "replaced": 0, "unchanged": 8, "removed": 0, "failed": 5}, again
        os.unlink(os.fsencode(folder) + b"/bad\xffname.md")
        gone = await synced(client, call_tool, folder, "hostile_names")
        assert [Path(r).name for r in gone["removed"]] == ["bad\\xffname.md"], gone
