"""Which files of a checked-out repository become documents, and how each is rendered as Markdown."""

from __future__ import annotations

import functools
import os
import posixpath
import re
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

# The docs-server defaults plus common source and documentation files.
DEFAULT_INCLUDE: tuple[str, ...] = (
    *("*.txt", "*.md", "*.json", "*.rst", "*.yaml", "*.yml"),
    *("*.markdown", "*.mdx", "*.adoc", "*.toml", "*.ini", "*.cfg"),
    *("*.py", "*.pyi", "*.js", "*.mjs", "*.cjs", "*.ts", "*.tsx", "*.jsx", "*.go", "*.rs", "*.java", "*.kt"),
    *("*.scala", "*.c", "*.h", "*.cc", "*.cpp", "*.hpp", "*.cs", "*.rb", "*.php", "*.swift", "*.m", "*.r"),
    *("*.sh", "*.bash", "*.ps1", "*.sql", "*.graphql", "*.proto", "*.html", "*.css", "*.scss", "*.vue"),
    *("*.svelte", "*.lua", "*.pl", "*.ex", "*.exs", "*.erl", "*.hs", "*.clj", "*.dart", "*.tf", "*.xml"),
    *("Dockerfile", "Makefile", "README", "LICENSE", "CHANGELOG", "CONTRIBUTING"),
)
DEFAULT_EXCLUDE: tuple[str, ...] = (
    "**/node_modules/**",
    "**/.git/**",
    "*.min.js",
    "*.min.css",
    "*.map",
    "package-lock.json",
    "yarn.lock",
    "pnpm-lock.yaml",
    "poetry.lock",
    "Cargo.lock",
)
# Vendored, generated and tool folders: never descended into, whatever the patterns say.
SKIPPED_DIRS = frozenset(
    {".git", "node_modules", "vendor", "dist", "build", "__pycache__", ".venv", "venv", "third_party", ".tox"}
)
MARKDOWN_EXTENSIONS = frozenset({".md", ".markdown", ".mdx"})
LANGUAGES = {
    ".py": "python", ".pyi": "python", ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript",
    ".ts": "typescript", ".tsx": "tsx", ".jsx": "jsx", ".go": "go", ".rs": "rust", ".java": "java",
    ".kt": "kotlin", ".scala": "scala", ".c": "c", ".h": "c", ".cc": "cpp", ".cpp": "cpp", ".hpp": "cpp",
    ".cs": "csharp", ".rb": "ruby", ".php": "php", ".swift": "swift", ".m": "objectivec", ".r": "r",
    ".sh": "bash", ".bash": "bash", ".ps1": "powershell", ".sql": "sql", ".graphql": "graphql",
    ".proto": "protobuf", ".html": "html", ".css": "css", ".scss": "scss", ".vue": "vue", ".svelte": "svelte",
    ".lua": "lua", ".pl": "perl", ".ex": "elixir", ".exs": "elixir", ".erl": "erlang", ".hs": "haskell",
    ".clj": "clojure", ".dart": "dart", ".tf": "hcl", ".xml": "xml", ".json": "json", ".yaml": "yaml",
    ".yml": "yaml", ".toml": "toml", ".ini": "ini", ".cfg": "ini", ".rst": "rst", ".adoc": "asciidoc",
    ".md": "markdown", ".markdown": "markdown", ".mdx": "markdown", ".txt": "text",
}  # fmt: skip
_NAMED_LANGUAGES = {"dockerfile": "dockerfile", "makefile": "makefile"}


@dataclass(frozen=True)
class RepoDocument:
    """One file of the repository as a Markdown document whose heading names the file."""

    path: str  # relative, with forward slashes
    markdown: str
    language: str
    line_count: int
    size_bytes: int


@dataclass(frozen=True)
class SkippedFile:
    path: str
    reason: str


@functools.lru_cache(maxsize=256)
def glob_regex(pattern: str) -> re.Pattern[str]:
    """`**` spans folders, `*`/`?` stay within one; a pattern without '/' matches the base name anywhere."""
    pattern = pattern.strip().lstrip("/")
    if pattern.startswith("./"):
        pattern = pattern[2:]
    if "/" not in pattern:
        pattern = f"**/{pattern}"
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and "]" in pattern[i + 2 :]:
            end = pattern.index("]", i + 2)
            body = pattern[i + 1 : end].replace("\\", "\\\\")
            out.append(f"[^{body[1:]}]" if body.startswith("!") else f"[{body}]")
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def matches_any(path: str, patterns: Sequence[str]) -> bool:
    return any(glob_regex(pattern).match(path) for pattern in patterns)


def candidate_files(root: Path, include: Sequence[str], exclude: Sequence[str]) -> Iterator[tuple[str, Path]]:
    """Regular files (never symlinks) under `root` matching include and not exclude, sorted by path."""
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_DIRS)
        base = Path(dirpath)
        for name in sorted(filenames):
            full = base / name
            rel = full.relative_to(root).as_posix()
            if not matches_any(rel, include) or matches_any(rel, exclude):
                continue
            if stat.S_ISREG(os.lstat(full).st_mode):
                yield rel, full


def language_for(path: str) -> str:
    name = posixpath.basename(path).lower()
    ext = posixpath.splitext(name)[1]
    return LANGUAGES.get(ext) or _NAMED_LANGUAGES.get(name, "text")


def read_text_file(full: Path, max_bytes: int) -> tuple[str | None, str]:
    """(text, "") or (None, why it was skipped): too large, binary (NUL byte) or not UTF-8."""
    size = os.lstat(full).st_size
    if size > max_bytes:
        return None, f"larger than {max_bytes} bytes ({size} bytes)"
    with open(full, "rb") as handle:
        data = handle.read(max_bytes + 1)
    if b"\x00" in data:
        return None, "binary (contains NUL bytes)"
    try:
        return data.decode("utf-8-sig"), ""
    except UnicodeDecodeError:
        return None, "binary or not UTF-8 text"


def render(path: str, text: str, *, line_numbers: bool) -> RepoDocument:
    """`# <path>` then the content: Markdown files as Markdown, code in a fence that the content cannot close."""
    language = language_for(path)
    lines = text.splitlines()
    if posixpath.splitext(path.lower())[1] in MARKDOWN_EXTENSIONS:
        body = text.strip("\n")
    else:
        if line_numbers:
            width = len(str(len(lines)))
            lines = [f"{n:>{width}}: {line}" for n, line in enumerate(lines, 1)]
        longest = max((len(run) for run in re.findall(r"`{3,}", text)), default=2)
        fence = "`" * (longest + 1)
        body = f"{fence}{'' if language == 'text' else language}\n" + "\n".join(lines) + f"\n{fence}"
    markdown = f"# {path}\n\n{body}\n"
    return RepoDocument(path, markdown, language, len(text.splitlines()), len(text.encode()))
