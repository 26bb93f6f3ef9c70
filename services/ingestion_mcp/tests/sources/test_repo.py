"""clone_repo against a real local git repository (file:// opened by the policy, as only tests do)."""

from __future__ import annotations

import http.server
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from ingestion_mcp.sources import SourceError, SourcePolicy, clone_repo, netguard


@dataclass(frozen=True)
class GitFixture:
    path: Path
    url: str
    first_commit: str
    head_commit: str


def git(cwd: Path, *args: str) -> str:
    env = {"GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1", "PATH": "/usr/bin:/bin", "HOME": str(cwd)}
    ident = ["-c", "user.name=Test", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main"]
    return subprocess.run(["git", *ident, *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


@pytest.fixture(scope="session")
def repo(tmp_path_factory: pytest.TempPathFactory) -> GitFixture:
    root = tmp_path_factory.mktemp("origin")
    files = {
        "README.md": "# Project\n\nVersion one.\n",
        "docs/guide/setup.md": "# Setup\n\nRun ```make``` first.\n",
        "src/app.py": "def main():\n    return 42\n",
        "src/ui.js": "export const x = 1;\n",
        "src/fence.py": 's = """\n```\nnot the end\n```\n"""\n',
        "node_modules/dep/index.js": "module.exports = 1;\n",
        "vendor/lib.py": "VENDORED = True\n",
        "notes.txt": "big " * 5000,
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / "data.json").write_bytes(b'{"a": 1}\x00\x01binary')
    (root / "secret.md").symlink_to("/etc/passwd")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "one")
    first = git(root, "rev-parse", "HEAD").strip()
    git(root, "tag", "v1")
    git(root, "checkout", "-q", "-b", "feature")
    (root / "FEATURE.md").write_text("# Feature branch\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "feature")
    git(root, "checkout", "-q", "main")
    (root / "README.md").write_text("# Project\n\nVersion two.\n")
    git(root, "commit", "-q", "-am", "two")
    return GitFixture(root, root.as_uri(), first, git(root, "rev-parse", "HEAD").strip())


@pytest.fixture
def repo_policy() -> SourcePolicy:
    return SourcePolicy.build(repo_schemes=["https", "file"], repo_max_file_bytes=8 * 1024, repo_timeout_s=60)


@pytest.fixture
def clean_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The clone's temp folder goes here, so a test can see that it was removed."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    return scratch


async def test_default_branch(repo: GitFixture, repo_policy: SourcePolicy, clean_tmp: Path) -> None:
    snapshot = await clone_repo(repo.url, policy=repo_policy)
    paths = [doc.path for doc in snapshot.documents]
    assert paths == ["README.md", "docs/guide/setup.md", "secret.md", "src/app.py", "src/fence.py", "src/ui.js"]
    assert snapshot.commit == repo.head_commit
    docs = {doc.path: doc for doc in snapshot.documents}
    assert docs["README.md"].markdown == "# README.md\n\n# Project\n\nVersion two.\n"
    assert docs["src/app.py"].markdown == "# src/app.py\n\n```python\n1: def main():\n2:     return 42\n```\n"
    assert (docs["src/app.py"].language, docs["src/app.py"].line_count) == ("python", 2)
    assert "root:" not in docs["secret.md"].markdown  # a symlink is checked out as its target text, never followed
    skipped = {item.path: item.reason for item in snapshot.skipped}
    assert skipped["data.json"].startswith("binary") and skipped["notes.txt"].startswith("larger than")
    assert list(clean_tmp.iterdir()) == []


async def test_fence_cannot_be_closed_by_the_content(repo: GitFixture, repo_policy: SourcePolicy) -> None:
    snapshot = await clone_repo(repo.url, policy=repo_policy, include=["src/fence.py"], show_line_numbers=False)
    (doc,) = snapshot.documents
    assert doc.markdown.startswith('# src/fence.py\n\n````python\ns = """\n```\n')
    assert doc.markdown.endswith("\n````\n")


@pytest.mark.parametrize(
    ("ref", "readme"), [("v1", "Version one."), ("main", "Version two."), ("feature", "Version one.")]
)
async def test_branch_and_tag(repo: GitFixture, repo_policy: SourcePolicy, ref: str, readme: str) -> None:
    snapshot = await clone_repo(repo.url, ref, policy=repo_policy, include=["*.md"])
    docs = {doc.path: doc.markdown for doc in snapshot.documents}
    assert readme in docs["README.md"]
    assert ("FEATURE.md" in docs) == (ref == "feature")


async def test_commit_sha(repo: GitFixture, repo_policy: SourcePolicy) -> None:
    snapshot = await clone_repo(repo.url, repo.first_commit, policy=repo_policy, include=["README.md"])
    assert snapshot.commit == repo.first_commit
    assert "Version one." in snapshot.documents[0].markdown


async def test_include_exclude_and_line_numbers(repo: GitFixture, repo_policy: SourcePolicy) -> None:
    snapshot = await clone_repo(
        repo.url, policy=repo_policy, include=["src/**", "docs/**/*.md"], exclude=["**/*.js"], show_line_numbers=False
    )
    assert [doc.path for doc in snapshot.documents] == ["docs/guide/setup.md", "src/app.py", "src/fence.py"]
    assert "1: " not in snapshot.documents[1].markdown


async def test_vendored_folders_are_skipped_even_when_included(repo: GitFixture, repo_policy: SourcePolicy) -> None:
    with pytest.raises(SourceError) as caught:
        await clone_repo(repo.url, policy=repo_policy, include=["node_modules/**", "vendor/**"])
    assert caught.value.code == "REPOMIX_FAILED"
    assert "No text files" in caught.value.message


async def test_too_many_files(repo: GitFixture, repo_policy: SourcePolicy, clean_tmp: Path) -> None:
    with pytest.raises(SourceError) as caught:
        await clone_repo(repo.url, policy=repo_policy, max_files=2)
    assert caught.value.code == "REPO_TOO_LARGE"
    assert "has 8 files" in caught.value.message and "maxFiles=2" in caught.value.message
    assert "includePatterns" in caught.value.suggestion
    assert list(clean_tmp.iterdir()) == []


async def test_total_size_limit(repo: GitFixture, repo_policy: SourcePolicy) -> None:
    with pytest.raises(SourceError) as caught:
        await clone_repo(repo.url, policy=repo_policy, max_total_bytes=40)
    assert caught.value.code == "REPO_TOO_LARGE"


async def test_missing_branch(repo: GitFixture, repo_policy: SourcePolicy, clean_tmp: Path) -> None:
    with pytest.raises(SourceError) as caught:
        await clone_repo(repo.url, "no-such-branch", policy=repo_policy)
    assert caught.value.code == "REPOMIX_FAILED"
    assert "'no-such-branch' not found" in caught.value.message
    assert list(clean_tmp.iterdir()) == []


async def test_progress_reports_each_step(repo: GitFixture, repo_policy: SourcePolicy) -> None:
    seen: list[tuple[float, str]] = []

    async def progress(fraction: float, step: str) -> None:
        seen.append((fraction, step))

    await clone_repo(repo.url, policy=repo_policy, progress_cb=progress)
    fractions = [fraction for fraction, _ in seen]
    assert fractions == sorted(fractions) and fractions[0] == 0.0 and fractions[-1] == 1.0
    assert [step for _, step in seen if step != "rendering"] == ["cloning", "selecting", "done"]


@pytest.mark.parametrize(
    ("url", "code"),
    [
        ("ext::sh -c touch% /tmp/pwned", "INVALID_REPO_URL"),
        ("ext::sh", "INVALID_REPO_URL"),
        ("--upload-pack=touch /tmp/pwned", "INVALID_REPO_URL"),
        ("-uhttps://example.com/r", "INVALID_REPO_URL"),
        ("ssh://git@github.com/owner/repo.git", "INVALID_REPO_URL"),
        ("git@github.com:owner/repo.git", "INVALID_REPO_URL"),
        ("git://github.com/owner/repo.git", "INVALID_REPO_URL"),
        ("http://github.com/owner/repo", "INVALID_REPO_URL"),
        ("https://github.com/owner/repo/tree/main", "INVALID_REPO_URL"),
        ("https://127.0.0.1/repo.git", "URL_BLOCKED"),
        ("https://169.254.169.254/repo.git", "URL_BLOCKED"),
        ("https://user:token@github.com/owner/repo", "URL_BLOCKED"),
    ],
)
async def test_hostile_repo_urls(url: str, code: str) -> None:
    with pytest.raises(SourceError) as caught:
        await clone_repo(url, policy=SourcePolicy())
    assert caught.value.code == code


async def test_file_urls_need_the_policy(repo: GitFixture) -> None:
    with pytest.raises(SourceError) as caught:
        await clone_repo(repo.url, policy=SourcePolicy())
    assert caught.value.code == "INVALID_REPO_URL" and "'file' is not allowed" in caught.value.message


@pytest.mark.parametrize("ref", ["--upload-pack=touch /tmp/x", "-b", "a..b", "HEAD@{1}", "main~1", "x y", "ref\n"])
async def test_hostile_refs(repo: GitFixture, repo_policy: SourcePolicy, ref: str) -> None:
    with pytest.raises(SourceError) as caught:
        await clone_repo(repo.url, ref, policy=repo_policy)
    assert caught.value.code == "INVALID_REPO_URL"


class GitHttpBackend(http.server.BaseHTTPRequestHandler):
    """Smart HTTP: hands each request to `git http-backend` (CGI), as a real git host does."""

    project_root = ""

    def do_GET(self) -> None:
        self._cgi(b"")

    def do_POST(self) -> None:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            body = b""
            while size := int(self.rfile.readline().strip() or b"0", 16):
                body += self.rfile.read(size)
                self.rfile.readline()
            self.rfile.readline()
        else:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self._cgi(body)

    def _cgi(self, body: bytes) -> None:
        path, _, query = self.path.partition("?")
        env = {
            "PATH": "/usr/bin:/bin",
            "GIT_PROJECT_ROOT": self.project_root,
            "GIT_HTTP_EXPORT_ALL": "1",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": "/dev/null",
            "REQUEST_METHOD": self.command,
            "PATH_INFO": path,
            "QUERY_STRING": query,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
            "REMOTE_ADDR": "127.0.0.1",
        }
        out = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True, check=False).stdout
        head, _, payload = out.partition(b"\r\n\r\n")
        status = 200
        headers = []
        for line in head.decode().split("\r\n"):
            name, _, value = line.partition(": ")
            if name.lower() == "status":
                status = int(value.split()[0])
            elif name:
                headers.append((name, value))
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="session")
def git_http(repo: GitFixture) -> Iterator[int]:
    handler = type("Handler", (GitHttpBackend,), {"project_root": str(repo.path.parent)})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()


async def test_clone_over_smart_http_connects_to_the_vetted_address(
    repo: GitFixture, git_http: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No DNS offline: the resolver answer for git.example.test is injected. git can only reach the server
    because the vetted address is pinned for it (curl's resolve option); the system resolver knows no .test."""

    async def fake_resolver(host: str, port: int) -> list[str]:
        assert host == "git.example.test"
        return ["127.0.0.1"]

    monkeypatch.setattr(netguard, "resolve_host", fake_resolver)
    policy = SourcePolicy.build(repo_schemes=["http"], allowed_hosts=["127.0.0.0/8"], repo_timeout_s=60)
    url = f"http://git.example.test:{git_http}/{repo.path.name}"
    snapshot = await clone_repo(url, "v1", policy=policy, include=["*.md"])
    assert "Version one." in {doc.path: doc.markdown for doc in snapshot.documents}["README.md"]
    by_sha = await clone_repo(url, repo.head_commit, policy=policy, include=["README.md"])
    assert "Version two." in by_sha.documents[0].markdown
    with pytest.raises(SourceError) as caught:
        await clone_repo(url, policy=SourcePolicy.build(repo_schemes=["http"]))
    assert caught.value.code == "URL_BLOCKED"
