"""The `git` CLI, run without a shell in a sealed environment, against a URL that was vetted first."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from .errors import INVALID_REPO_URL, INVALID_URL, REPO_TOO_LARGE, REPOMIX_FAILED, TLS_ERROR, SourceError
from .netguard import vet_url
from .policy import MiB, SourcePolicy

_HTTPS_HINT = "Pass the repository's public https URL, e.g. https://github.com/owner/repo."
_SHORTHAND = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9_.-]+")
_TRANSPORT_PREFIX = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*::")
_REF = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._/+-]{0,254}")
_WATCH_INTERVAL_S = 0.25


@dataclass(frozen=True)
class RepoTarget:
    url: str  # what git is given
    display: str
    scheme: str
    resolve_pin: str | None = None  # curl's HOST:PORT:ADDRESS, so git connects to the vetted address


def check_repo_url(url: str, policy: SourcePolicy) -> str:
    """The URL's form alone (no network): refuse what can never be a repository before any job starts."""
    text = _normalise(url)
    scheme = urlsplit(text).scheme.lower()
    if scheme not in policy.repo_schemes:
        allowed = ", ".join(sorted(policy.repo_schemes))
        raise _invalid(f"Repository URL scheme {scheme!r} is not allowed (allowed: {allowed}).", _HTTPS_HINT)
    if scheme != "file" and not urlsplit(text).hostname:
        raise _invalid(f"{url!r} is not a repository URL.", _HTTPS_HINT)
    return text


async def validate_repo_url(url: str, policy: SourcePolicy) -> RepoTarget:
    """Only https (and http/file where the policy allows) URLs; no ssh, ext::, options or credentials."""
    text = check_repo_url(url, policy)
    scheme = urlsplit(text).scheme.lower()
    if scheme == "file":
        path = Path(unquote(urlsplit(text).path))
        if not path.is_dir():
            raise _invalid(f"No repository at {path}.", "Pass a file:// URL of an existing git repository folder.")
        return RepoTarget(url=path.resolve().as_uri(), display=text, scheme=scheme)
    parts = urlsplit(text)
    if (parts.hostname or "").lower() == "github.com" and re.search(r"^/[^/]+/[^/]+/(tree|blob)/", parts.path):
        raise _invalid(
            "That is a GitHub page URL, not a repository URL.",
            "Pass https://github.com/<owner>/<repo> and the branch or tag as `branch`.",
        )
    schemes = frozenset(policy.repo_schemes & {"http", "https"})
    try:
        target = await vet_url(text, policy, schemes)
    except SourceError as exc:
        if exc.code == INVALID_URL:
            raise _invalid(exc.message, _HTTPS_HINT) from exc
        raise
    if target.url.query or target.url.fragment:
        raise _invalid("Repository URLs take no query string or fragment.", _HTTPS_HINT)
    address = f"[{target.address}]" if ":" in target.address else target.address
    pin = f"{target.host}:{target.port}:{address}"
    return RepoTarget(url=str(target.url), display=str(target.url), scheme=scheme, resolve_pin=pin)


def _normalise(url: str) -> str:
    text = (url or "").strip()
    if not text:
        raise _invalid("The repository URL is empty.", _HTTPS_HINT)
    if text.startswith("-") or any(ord(ch) < 0x21 or ord(ch) == 0x7F for ch in text):
        raise _invalid("The repository URL starts with '-' or contains spaces/control characters.", _HTTPS_HINT)
    if _TRANSPORT_PREFIX.match(text):
        raise _invalid("Git remote-helper URLs such as ext:: are refused.", _HTTPS_HINT)
    if _SHORTHAND.fullmatch(text) and "." not in text.split("/", 1)[0]:
        return f"https://github.com/{text}"  # owner/repo shorthand
    if "://" not in text:
        if re.match(r"^[^/]*@[^/]*:|^[^/:]+:[^/]", text):
            raise _invalid("SSH (user@host:path) repository URLs are not supported.", _HTTPS_HINT)
        return f"https://{text}"
    return text


def validate_ref(ref: str | None) -> str | None:
    """A branch, tag or commit name git cannot mistake for an option or a revision expression."""
    if ref is None or ref == "":
        return None
    if not _REF.fullmatch(ref) or ".." in ref or "//" in ref or ref.endswith((".lock", "/", ".")):
        raise _invalid(
            f"Invalid branch/tag/commit {ref!r}.",
            "Pass a branch or tag name (e.g. main, v1.2.0) or a full 40-character commit sha; "
            "omit it for the default branch.",
        )
    return ref


def _invalid(message: str, suggestion: str) -> SourceError:
    return SourceError(INVALID_REPO_URL, message, suggestion)


class GitRunner:
    """git subprocesses for one clone: no shell, no prompts, no user/system config, pinned DNS, size watch."""

    def __init__(self, workdir: Path, target: RepoTarget, policy: SourcePolicy) -> None:
        self.worktree = workdir / "repo"
        self._target = target
        self._policy = policy
        home = workdir / "home"
        home.mkdir()
        allowed = sorted(policy.repo_schemes)
        self._env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(home),
            "LC_ALL": "C",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_ALLOW_PROTOCOL": ":".join(allowed),
            "GIT_PROTOCOL_FROM_USER": "0",
            "GIT_LFS_SKIP_SMUDGE": "1",
        }
        config = [
            "protocol.allow=never",
            *(f"protocol.{scheme}.allow=always" for scheme in allowed),
            "credential.helper=",
            "core.askPass=",
            "core.symlinks=false",  # a link in the repo becomes a small text file, never a path to follow
            "core.hooksPath=" + os.devnull,
            "core.fsmonitor=false",
            "http.followRedirects=false",  # a redirect would skip the address check
            "submodule.recurse=false",
            "advice.detachedHead=false",
            "init.defaultBranch=main",
        ]
        if target.resolve_pin:
            config.append(f"http.curloptResolve={target.resolve_pin}")
        self._prefix = ["git"] + [arg for item in config for arg in ("-c", item)]

    async def clone(self, ref: str | None) -> None:
        branch = ["--branch", ref] if ref else []
        args = ["clone", "--quiet", "--depth", "1", "--single-branch", "--no-tags", *branch]
        await self._run([*args, "--", self._target.url, str(self.worktree)], watch=True, ref=ref)

    async def fetch_commit(self, sha: str) -> None:
        await self._run(["init", "--quiet", "--", str(self.worktree)])
        await self._run(["remote", "add", "origin", self._target.url], cwd=self.worktree)
        await self._run(
            ["fetch", "--quiet", "--depth", "1", "--no-tags", "--", "origin", sha],
            cwd=self.worktree,
            watch=True,
            ref=sha,
        )
        await self._run(["checkout", "--quiet", "--detach", "FETCH_HEAD"], cwd=self.worktree, watch=True)

    async def head_commit(self) -> str:
        return (await self._run(["rev-parse", "HEAD"], cwd=self.worktree)).strip()

    async def _run(
        self, args: list[str], *, cwd: Path | None = None, watch: bool = False, ref: str | None = None
    ) -> str:
        process = await asyncio.create_subprocess_exec(
            *self._prefix,
            *args,
            cwd=cwd,
            env=self._env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,  # its own process group, so a kill also ends git-remote-https & co
        )
        communicate = asyncio.ensure_future(process.communicate())
        try:
            while not communicate.done():
                await asyncio.wait({communicate}, timeout=_WATCH_INTERVAL_S)
                if watch and not communicate.done():
                    await self._check_size()
            stdout, stderr = communicate.result()
        except BaseException:
            _kill_group(process)
            communicate.cancel()
            with contextlib.suppress(BaseException):
                await process.wait()
            raise
        if process.returncode != 0:
            raise _git_failure(stderr.decode("utf-8", "replace"), self._target.display, ref)
        return stdout.decode("utf-8", "replace")

    async def _check_size(self) -> None:
        size = await asyncio.to_thread(_tree_size, self.worktree)
        if size > self._policy.repo_max_clone_bytes:
            raise SourceError(
                REPO_TOO_LARGE,
                f"The repository download passed {self._policy.repo_max_clone_bytes / MiB:.0f} MiB and was stopped.",
                "Ingest a smaller repository, or fetch the documents you need with ingest_from_url.",
            )


def _tree_size(root: Path) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(dirpath, name)).st_size
    return total


def _kill_group(process: asyncio.subprocess.Process) -> None:
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)


def _git_failure(stderr: str, url: str, ref: str | None) -> SourceError:
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    detail = "".join(ch if ch.isprintable() else "?" for ch in (lines[-1] if lines else "no error output"))[:300]
    low = stderr.lower()
    if ref and (
        "remote branch" in low or "couldn't find remote ref" in low or "not our ref" in low or "unadvertised" in low
    ):
        return SourceError(
            REPOMIX_FAILED,
            f"Branch, tag or commit {ref!r} not found in {url}.",
            "Check the name (case matters); omit it for the default branch; a commit needs its full 40-character sha.",
        )
    if "certificate" in low or ("ssl" in low and "verif" in low):
        return SourceError(
            TLS_ERROR, f"git clone failed: TLS certificate problem ({detail}).", "Use a host with a valid certificate."
        )
    if any(
        s in low
        for s in (
            "repository not found",
            "could not read username",
            "terminal prompts disabled",
            "authentication",
            "does not appear to be a git repository",
            "error: 404",
            "returned error: 401",
            "returned error: 403",
        )
    ):
        return SourceError(
            REPOMIX_FAILED,
            f"git clone failed: repository {url} not found or not public ({detail}).",
            "Check the URL; only public repositories can be cloned (no credentials are sent).",
        )
    return SourceError(
        REPOMIX_FAILED,
        f"git clone failed: {detail}.",
        "Check the URL and branch, then retry; if it persists, the host may be down.",
    )
