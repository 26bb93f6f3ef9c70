"""Who is calling and what they may do: rights per collection, read from a small policy file.

The HTTP auth layer (access/auth.py) sets the caller for each request; stdio, the CLI, a queue worker and the
no-auth and static-token modes act as ``Caller.everything()`` (one token, every right). The guarded
backend (access/guarded_backend.py) asks ``current_caller()`` before every call that names a collection.

A policy maps a token's claims (its scopes in ``scope``/``scp``, or the groups in a claim the policy names)
to rights on collection-name glob patterns. ``admin`` implies ``write`` implies ``read``.
"""

from __future__ import annotations

import contextvars
import fnmatch
import logging
import tomllib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ..errors import ToolFailure

log = logging.getLogger("ingestion_mcp.access")

Right = Literal["read", "write", "admin"]
RANK: dict[str, int] = {"read": 1, "write": 2, "admin": 3}


@dataclass(frozen=True)
class Grant:
    """One right on the collections whose names match a glob pattern."""

    pattern: str
    right: Right

    def allows(self, right: Right, collection: str) -> bool:
        return RANK[self.right] >= RANK[right] and fnmatch.fnmatchcase(collection, self.pattern)


@dataclass(frozen=True)
class Caller:
    """The identity behind a request (the token's subject) and its rights."""

    subject: str | None
    grants: tuple[Grant, ...]
    # What the policy read from the token (its scopes and groups): a watch keeps them, to ask the policy as it is
    # now what its owner may do (ingest/watch.py). None where no policy applies (every right).
    claims: dict[str, list[str]] | None = field(default=None, compare=False, hash=False)

    @classmethod
    def everything(cls) -> Caller:
        """No auth, a static token, stdio, a worker: one caller with every right."""
        return cls(subject=None, grants=(Grant("*", "admin"),))

    def can(self, right: Right, collection: str) -> bool:
        return any(grant.allows(right, collection) for grant in self.grants)

    def everywhere(self, right: Right) -> bool:
        """Whether ``right`` holds on every collection (a grant on the pattern "*")."""
        return any(grant.pattern == "*" and RANK[grant.right] >= RANK[right] for grant in self.grants)

    @property
    def sees_all_jobs(self) -> bool:
        return self.everywhere("admin")

    def owns(self, owner: str | None) -> bool:
        """Whether a job submitted by ``owner`` is this caller's to see and cancel."""
        return self.sees_all_jobs or (self.subject is not None and owner == self.subject)

    def require(self, right: Right, collection: str) -> None:
        """Refuse (FORBIDDEN, naming the missing right) unless the caller holds ``right`` on ``collection``."""
        if not self.can(right, collection):
            raise ToolFailure(
                f"Not allowed: this needs the '{right}' right on collection '{collection}', which your token "
                "does not grant.",
                "Ask an administrator for the right, or use a collection you may write to.",
                code="FORBIDDEN",
                status=403,
                details={"missing_right": right, "collection": collection},
            )


_CALLER: contextvars.ContextVar[Caller | None] = contextvars.ContextVar("ingestion_caller", default=None)


def current_caller() -> Caller:
    """The caller of the request being served (every right where no auth layer set one)."""
    return _CALLER.get() or Caller.everything()


def on_behalf_of(subject: str | None) -> None:
    """A queued job's work, in this task: every right (its rights were checked when it was submitted), under
    its owner's name for the audit log."""
    _CALLER.set(Caller(subject=subject, grants=Caller.everything().grants))


@contextmanager
def acting_as(caller: Caller) -> Iterator[Caller]:
    token = _CALLER.set(caller)
    try:
        yield caller
    finally:
        _CALLER.reset(token)


# -- the policy file ------------------------------------------------------------------------------
class Allow(BaseModel):
    """A right on the collections matching any of the glob patterns."""

    model_config = ConfigDict(extra="forbid")

    right: Right
    collections: list[str] = Field(min_length=1)

    @field_validator("collections")
    @classmethod
    def _patterns(cls, patterns: list[str]) -> list[str]:
        for pattern in patterns:
            if not pattern.strip():
                raise ValueError("a collection pattern is empty")
        return patterns


class Rule(Allow):
    """Who (a scope or a group) gets which right on which collections."""

    scope: str | None = None
    group: str | None = None

    @model_validator(mode="after")
    def _one_subject(self) -> Rule:
        if (self.scope is None) == (self.group is None):
            raise ValueError("a rule names exactly one of 'scope' or 'group'")
        return self


class AccessPolicy(BaseModel):
    """The policy file: rules, and the claim that lists a token's groups (if any rule names a group)."""

    model_config = ConfigDict(extra="forbid")

    groups_claim: str = "groups"
    # Rights every valid token gets (e.g. read on "public-*"); none by default.
    default: list[Allow] = Field(default_factory=list)
    rules: list[Rule] = Field(default_factory=list)

    def caller(self, claims: Mapping[str, Any]) -> Caller:
        """The caller a verified token's claims make."""
        scopes, groups = set(token_scopes(claims)), set(_strings(claims.get(self.groups_claim)))
        matching = [rule for rule in self.rules if rule.scope in scopes or rule.group in groups]
        grants = [Grant(pattern, rule.right) for rule in [*self.default, *matching] for pattern in rule.collections]
        subject = claims.get("sub")
        kept = {"scope": sorted(scopes), self.groups_claim: sorted(groups)}
        return Caller(subject=str(subject) if subject is not None else None, grants=tuple(grants), claims=kept)

    @property
    def scopes(self) -> list[str]:
        return sorted({rule.scope for rule in self.rules if rule.scope})


def token_scopes(claims: Mapping[str, Any]) -> list[str]:
    """The scopes of a token: ``scope`` (space-separated, RFC 9068) or ``scp`` (a list, or a string)."""
    return [*_strings(claims.get("scope")), *_strings(claims.get("scp"))]


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return value.split()
    if isinstance(value, list):
        return [str(item) for item in value]
    return []


class LivePolicy:
    """The policy file as it is now: read again when it changes (its mtime and size), so that an administrator's
    edit applies to the next request and to running watches without a restart. A file that becomes unreadable or
    invalid keeps the last good policy (and says so in the log)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.policy = load_policy(path)
        self._seen = self._stamp()

    def _stamp(self) -> tuple[int, int] | None:
        try:
            st = self.path.stat()
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size)

    def current(self) -> AccessPolicy:
        stamp = self._stamp()
        if stamp is not None and stamp != self._seen:
            self._seen = stamp
            try:
                self.policy = load_policy(self.path)
                log.info("access policy reloaded from %s", self.path)
            except PolicyError as exc:
                log.warning("access policy not reloaded, the last good one stays: %s", exc)
        return self.policy


class PolicyError(ValueError):
    """The policy file cannot be read or is not valid; the message names the file and the field."""


def load_policy(path: Path) -> AccessPolicy:
    """Read and validate a TOML policy file; an error names the file, the field and the problem."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise PolicyError(f"cannot read access policy {path}: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:  # its message carries the line and column
        raise PolicyError(f"access policy {path} is not valid TOML: {exc}") from None
    try:
        return AccessPolicy.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{_field(error['loc'])}: {error['msg']}" for error in exc.errors(include_url=False))
        raise PolicyError(f"access policy {path} is invalid: {problems}") from None


def _field(loc: tuple[int | str, ...]) -> str:
    """('rules', 1, 'right') -> "rules #2 (its 2nd [[rules]] table), field 'right'"."""
    if len(loc) >= 2 and isinstance(loc[1], int):
        table = f"{loc[0]} #{loc[1] + 1} (the {_ordinal(loc[1] + 1)} [[{loc[0]}]] table)"
        return table + "".join(f", field '{part}'" for part in loc[2:])
    return ".".join(str(part) for part in loc) or "policy"


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"
