"""What a folder sync looks at: the walk, its include/exclude globs and ignore files, links, and which files
can be read (ingest/folder_sync.py decides what to write).

- Globs are checked before anything runs: a malformed one ("[unclosed", an empty one, one that climbs out
  with "..") is refused with what is wrong; they match the folder-relative path or the file name, ignoring
  case ("*.MD" takes "a.md": a case slip must not drop a folder's files), and "dir/" means all under dir.
- Ignore files (ingest/ignores.py) hide what git would hide; hidden entries (".git", ".obsidian") are skipped.
- A file is read by the converter (EXTENSIONS: PDF, Office and OpenDocument, EPUB, RTF, e-mail, HTML and MHTML,
  Markdown, CSV, LaTeX, AsciiDoc, text, reStructuredText, Org, images; gzipped too: "manual.pdf.gz"), or as plain
  text when its type is text-like (TeX styles, source code, configuration, "README", "copyright": by its
  extension, else by its first 8 KiB being UTF-8 without NUL bytes); any other file is `Skipped`, counted by
  extension in the answer, never dropped without a word.
- A symbolic link is judged by its target: one that leads to a file of this folder is that file (one
  document, keyed by the real path); one into another folder synced into the same collection is that
  folder's document (left to its sync); one elsewhere under the allowed roots is this folder's document under
  the link's own path; one out of the roots, broken or looping is refused. Linked folders are not followed.
"""

from __future__ import annotations

import codecs
import os
import stat
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from ingestion_contracts.docling import EXTENSIONS

from ..sources.file_names import escaped
from ..sources.paths import inside_any
from .globs import check_patterns, matches_filters, pattern_hits
from .ignores import Ignores, is_ignore_file

__all__ = ["Entry", "Refusal", "Skipped", "SyncOptions", "Tally", "Walk", "check_patterns", "matches_filters"]

SNIFF_BYTES = 8192
NO_EXTENSION = "no extension"


def _extensions(names: str) -> frozenset[str]:
    return frozenset("." + name for name in names.split())


# Read as plain text without looking inside (the converter does not know them).
TEXT_EXTENSIONS = _extensions(
    "rst rest adoc asciidoc asc org tex latex ltx sty cls bib texi texinfo pod rdoc textile "
    "wiki csv tsv json jsonl ndjson yaml yml toml ini cfg conf config properties xml xsd xsl "
    "py pyi pyx ipynb js mjs cjs ts tsx jsx java kt kts scala groovy gradle go rs c h cc "
    "cpp cxx hpp hh hxx cs fs swift m mm rb php pl pm lua r jl hs ml mli ex exs erl hrl "
    "clj el lisp scm rkt dart vb ps1 bat cmd sh bash zsh fish ksh awk sed sql graphql proto "
    "css scss sass less vue svelte mk make cmake dockerfile diff patch vim tf hcl nix srt vtt "
    "log 1 2 3 4 5 6 7 8 9 man"
)
# Not ingested, skipped without reading them: binary formats, and keys and certificates (secrets).
SKIPPED_EXTENSIONS = _extensions(
    "gz tgz bz2 xz lz lzma zst z zip tar 7z rar jar war whl egg deb rpm apk dmg iso img "
    "bin exe dll so a o obj lib dylib pyc pyo class wasm gif bmp ico webp svg svgz heic psd "
    "eps ps dvi mp3 wav flac ogg m4a aac mp4 m4v mkv webm avi mov wmv ttf otf woff woff2 "
    "eot sqlite db doc xls ppt odg ott ots otp mobi pdb gpg sig p12 pfx der crt "
    "key pem cer kdbx lock"
)


@dataclass(frozen=True)
class SyncOptions:
    folder: str
    collection: str
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    recursive: bool = True  # False: the top level only; documents of sub-folders are out of view (kept)
    prune: bool = True
    dry_run: bool = False
    key_prefix: str | None = None  # None: the folder's real path; "": folder-relative keys (the notes vault)
    recheck: bool = False  # every file goes to the pipeline, which still skips an unchanged hash (`full`)
    # Only these folder-relative paths (files or folders) changed: a watched folder's batch is synced in time
    # proportional to the batch, not to the folder. Empty: the whole folder.
    paths: tuple[str, ...] = ()
    # The most documents a sync removes; None: the bound (ingest/folder_sync.py: over 25% and over 10 removes none).
    max_removals: int | None = None
    ignore_files: bool = True  # .gitignore / .ingestionignore honoured
    # Real paths of the other folders synced into the same collection: a link into one is that folder's document.
    elsewhere: tuple[str, ...] = ()


@dataclass(frozen=True)
class Entry:
    # Folder-relative, forward slashes (a link to a file of the folder: that file's), escaped (ingest/file_names.py)
    # like every name the walk yields: it goes into keys, answers and records.
    rel: str
    path: Path  # the file to read (a link's target)
    size: int
    mtime_ns: int
    text: bool = False  # a text-like type the converter does not know: read as plain text


@dataclass(frozen=True)
class Refusal:
    rel: str
    reason: str
    folder: bool = False  # a folder that could not be listed: the documents under it are kept


@dataclass(frozen=True)
class Skipped:
    rel: str
    extension: str  # lower case with the dot, or NO_EXTENSION


# -- what a file is -----------------------------------------------------------------------------------------
def extension_of(name: str) -> str:
    """The extension that decides how a file is read: ".pdf"; a gzipped document of a type the converter reads keeps
    both (".pdf.gz"); other .gz files are ".gz"."""
    path = PurePosixPath(name.lower())
    if path.suffix == ".gz" and PurePosixPath(path.stem).suffix in EXTENSIONS:
        return PurePosixPath(path.stem).suffix + ".gz"
    return path.suffix or NO_EXTENSION


def looks_like_text(path: Path) -> bool:
    """UTF-8 without NUL bytes in its first 8 KiB (a cut multi-byte character at the end is fine)."""
    try:
        with path.open("rb") as handle:
            head = handle.read(SNIFF_BYTES)
    except OSError:
        return False
    if not head or b"\x00" in head:
        return False
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
    except UnicodeDecodeError:
        return False
    return True


def reading(name: str, path: Path, indexed: bool) -> str | None:
    """ "convert" (the converter knows the type), "text" (read as plain text), None (cannot be ingested)."""
    extension = extension_of(name)
    if extension.removesuffix(".gz") in EXTENSIONS:
        return "convert"
    if extension in TEXT_EXTENSIONS or indexed:  # an indexed file was found to be text before: not read again
        return "text"
    if extension in SKIPPED_EXTENSIONS:
        return None
    return "text" if looks_like_text(path) else None


# -- the walk ------------------------------------------------------------------------------------------------
@dataclass
class Tally:
    """What a walk passed over without yielding it, so that every file of a folder is accounted for."""

    ignored: Counter[str] = field(default_factory=Counter)  # ignore file -> files and folders it hid (a folder once)
    hidden: int = 0  # entries whose name starts with "." (.git, .obsidian), never looked into
    excluded: int = 0  # files the include/exclude globs left out
    owned: list[str] = field(default_factory=list)  # sub-folders synced on their own into the collection: theirs
    include_hits: Counter[str] = field(default_factory=Counter)  # include glob -> files it matched
    exclude_hits: Counter[str] = field(default_factory=Counter)

    def unmatched(self, options: SyncOptions) -> list[str]:
        """The globs that matched no file at all, as "include 'x'" / "exclude 'y'"."""
        return [f"include '{p}'" for p in options.include if not self.include_hits[p]] + [
            f"exclude '{p}'" for p in options.exclude if not self.exclude_hits[p]
        ]


@dataclass
class Walk:
    """One sync's view of the folder: its options, ignore files, and which keys are indexed already."""

    root: Path
    roots: list[Path]
    options: SyncOptions
    indexed: Callable[[str], bool] = lambda rel: False
    ignores: Ignores = field(init=False)
    elsewhere: list[Path] = field(init=False)
    tally: Tally = field(init=False, default_factory=Tally)  # of the last walk (in_scope starts a new one)

    def __post_init__(self) -> None:
        self.ignores = Ignores(self.root, self.options.ignore_files)
        self.elsewhere = [Path(f) for f in self.options.elsewhere if Path(f) != self.root]
        # Folders inside this one that are synced on their own into the same collection own their documents.
        self.nested = {f for f in self.elsewhere if f.is_relative_to(self.root)}

    def all(self, start: Path | None = None) -> Iterator[Entry | Refusal | Skipped]:
        """Every candidate under the folder (or its sub-folder `start`), streamed, A to Z per folder."""
        first = start or self.root
        stack: list[tuple[Path, str]] = [(first, self.rel(first))]
        while stack:
            folder, folder_rel = stack.pop()
            try:
                with os.scandir(folder) as it:
                    entries = sorted(it, key=lambda e: e.name)
            except OSError as exc:
                yield Refusal(escaped(folder_rel) or ".", f"cannot list folder: {exc.strerror or exc}", True)
                continue
            for entry in entries:
                if entry.name.startswith("."):
                    self.tally.hidden += 1
                    continue
                rel = f"{folder_rel}/{entry.name}" if folder_rel else entry.name
                yield from self.one(Path(entry.path), rel, stack, entry)

    def in_scope(self) -> Iterator[Entry | Refusal | Skipped]:
        """The whole folder, or only the changed paths (options.paths): a folder among them is walked, a file
        looked at, a path that is gone yields nothing (the prune drops its documents). A changed ignore file
        stands for its folder. Hidden and ignored paths, and without recursion sub-folders, are out of scope."""
        self.tally = Tally()
        scope = scope_paths(self.options.paths)
        if scope is None:
            yield from self.all()
            return
        for rel in scope:
            parts = PurePosixPath(rel).parts
            if not self.options.recursive and len(parts) > 1:
                continue
            path = self.root.joinpath(*parts)
            is_dir = path.is_dir() and not path.is_symlink()
            if self.ignores.path_ignored(rel, is_dir) or any(path.is_relative_to(f) for f in self.nested):
                continue
            if is_dir:
                if self.options.recursive:
                    yield from self.all(start=path)
            elif path.exists() or path.is_symlink():
                yield from self.one(path, rel, [])

    def one(
        self, path: Path, rel: str, stack: list[tuple[Path, str]], entry: os.DirEntry[str] | None = None
    ) -> Iterator[Entry | Refusal | Skipped]:
        """One path of the folder (`entry`: as the folder listing gave it, which saves a system call or two)."""
        target, key_rel = path, rel
        link = entry.is_symlink() if entry is not None else path.is_symlink()
        if link:
            found = self._link(path, rel)
            if found is None or isinstance(found, Refusal):
                if found is not None and not self._passed_over(rel, False):
                    # a broken link named like a file that is skipped anyway (NEWS.gz) is skipped, not a failure
                    skipped = extension_of(path.name) in SKIPPED_EXTENSIONS
                    yield Skipped(escaped(rel), extension_of(path.name)) if skipped else found
                return
            target, key_rel = found
        try:
            st = entry.stat() if entry is not None else path.stat()  # (a link's target: links were judged above)
        except OSError as exc:
            yield Refusal(escaped(rel), f"cannot stat: {exc.strerror or exc}")
            return
        if stat.S_ISDIR(st.st_mode):
            if path in self.nested:
                self.tally.owned.append(escaped(rel))
            elif self.options.recursive and not link and not self._passed_over(rel, True):
                stack.append((path, rel))
            return
        if self._passed_over(rel, False):
            return
        if not stat.S_ISREG(st.st_mode):
            yield Refusal(escaped(rel), "not a regular file (fifo, socket or device)")
            return
        how = reading(target.name, target, self.indexed(escaped(key_rel)))
        if how is None:
            yield Skipped(escaped(rel), extension_of(target.name))
            return
        if not os.access(path, os.R_OK):
            yield Refusal(escaped(rel), "file is not readable (permission denied)")
            return
        yield Entry(escaped(key_rel), target, st.st_size, st.st_mtime_ns, text=how == "text")

    def _passed_over(self, rel: str, is_dir: bool) -> bool:
        """Whether an ignore file hides this path or (a file) the globs leave it out; counted in the tally."""
        if (source := self.ignores.why(rel, is_dir)) is not None:
            self.tally.ignored[source] += 1
            return True
        if is_dir:
            return False
        include, exclude = self.options.include, self.options.exclude
        included, excluded = pattern_hits(rel, include), pattern_hits(rel, exclude)
        self.tally.include_hits.update(included)
        self.tally.exclude_hits.update(excluded)
        if (include and not included) or excluded:
            self.tally.excluded += 1
            return True
        return False

    def _link(self, path: Path, rel: str) -> tuple[Path, str] | Refusal | None:
        """A link's target file and the relative key it is indexed under; None: not this folder's to index."""
        try:
            real = path.resolve(strict=True)
        except (OSError, RuntimeError):
            return Refusal(escaped(rel), "broken or looping symbolic link")
        if not inside_any(real, self.roots):
            return Refusal(escaped(rel), "symbolic link that leads outside the allowed folders")
        if real.is_dir():
            return None  # linked folders are not followed: no loops, no double counting
        if real.is_relative_to(self.root):
            return real, self.rel(real)  # the same document as the file it names
        if inside_any(real, self.elsewhere):
            return None  # another synced folder's document: its sync keeps it
        return real, rel

    def rel(self, path: Path) -> str:
        return PurePosixPath(*path.relative_to(self.root).parts).as_posix() if path != self.root else ""


def scope_paths(paths: tuple[str, ...]) -> list[str] | None:
    """The changed paths a scoped sync looks at (None: the whole folder, as when none are given): a changed
    ignore file stands for its folder (the top one's for the whole folder), a path under another one in the
    list is dropped with it, unsafe and hidden paths are dropped."""
    if not paths:
        return None
    wanted: set[str] = set()
    for rel in paths:
        parts = PurePosixPath(rel).parts
        if not parts or rel.startswith("/") or ".." in parts:
            continue
        if is_ignore_file(parts[-1]):
            parts = parts[:-1]
            if not parts:
                return None
        if any(p.startswith(".") for p in parts):
            continue
        wanted.add("/".join(parts))
    return sorted(r for r in wanted if not any(r.startswith(o + "/") for o in wanted))


def scope_labels(paths: tuple[str, ...]) -> list[str] | None:
    """`scope_paths` as the names keys and records hold them (escaped)."""
    scope = scope_paths(paths)
    return None if scope is None else [escaped(rel) for rel in scope]
