"""The fault suite's clients: ingest_text submissions around a fault, and probes of the read and job tools.

Every call is a real MCP client over streamable HTTP through the balancer (as a deployment's users call).
Each document's text carries its version in every paragraph (``rev<V>of<key>``), so what the store holds
can be read back and named. Submissions of one key run in order: the second is sent only after the first
was answered, so "the last submitted version" is defined.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import re
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

WORDS = ["harbour", "lantern", "orchard", "glacier", "turbine", "ledger", "canyon", "meadow", "quarry", "summit"]
WORDS += ["beacon", "archive", "falcon", "granite", "willow", "ember", "compass", "delta", "saffron", "tundra"]
TAG = re.compile(r"rev(\d+)of([a-z0-9-]+?)end")
# The 2026-07-28 revision is stateless: per-request round robin needs no session stickiness.
PROTOCOL = "2026-07-28"


def tag(key: str, version: int) -> str:
    return f"rev{version}of{key}end"


def document_text(key: str, version: int, paragraphs: int) -> str:
    """Distinct prose of ~600 characters a paragraph, each paragraph naming the key and version twice."""
    rng = random.Random(f"{key}/{version}")
    mark = tag(key, version)
    out = [f"# Report {key}"]
    for number in range(paragraphs):
        words = " ".join(rng.choice(WORDS) for _ in range(75))
        out.append(f"{mark} paragraph {number}: {words} {number} {mark}.")
    return "\n\n".join(out)


@dataclass
class Submission:
    key: str
    version: int
    phase: str  # "before" the fault or "during" it
    order: int  # position in the plan (submission order of one key's versions)
    started: float = 0.0
    answered: float = 0.0
    job_id: str | None = None
    result_status: str | None = None  # the ingest's status when the call answered with its result
    error: str | None = None
    final: dict[str, Any] = field(default_factory=dict)  # the job record at the end

    @property
    def acknowledged(self) -> bool:
        return self.error is None and (self.job_id is not None or self.result_status is not None)


def plan(jobs: int, twice: int) -> list[Submission]:
    """``jobs`` submissions: ``jobs - twice`` keys, ``twice`` of them submitted again with new content.

    The first half goes before the fault, the rest during it; each key's second version is in the second half."""
    keys = [f"doc-{i:02d}" for i in range(jobs - twice)]
    firsts = [Submission(key, 1, "", 0) for key in keys]
    seconds = [Submission(key, 2, "", 0) for key in keys[:twice]]
    half = jobs // 2
    ordered = firsts[:half] + _interleave(firsts[half:], seconds)
    for number, submission in enumerate(ordered):
        submission.order, submission.phase = number, "before" if number < half else "during"
    return ordered


def _interleave(a: list[Submission], b: list[Submission]) -> list[Submission]:
    out: list[Submission] = []
    for i in range(max(len(a), len(b))):
        out += a[i : i + 1] + b[i : i + 1]
    return out


@contextlib.asynccontextmanager
async def connect(url: str, headers: dict[str, str]) -> AsyncIterator[Any]:
    """One MCP client over streamable HTTP (its own connection pool)."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0, read=300.0)) as http,
        Client(streamable_http_client(url, http_client=http), mode=PROTOCOL) as client,
    ):
        yield client


async def call(client: Any, tool: str, timeout_s: float, **arguments: Any) -> tuple[dict[str, Any] | None, str | None]:
    """(structured answer, None), or (None, what went wrong): a tool error, a transport error, a timeout."""
    try:
        async with asyncio.timeout(timeout_s):
            response = await client.call_tool(tool, arguments)
    except TimeoutError:
        return None, f"no answer in {timeout_s:.0f} s"
    except Exception as exc:  # noqa: BLE001 - any failure of the call is what is measured
        return None, f"{type(exc).__name__}: {str(exc)[:160]}"
    answer = response.structured_content or {}
    if response.is_error:
        return None, str(answer.get("error") or answer.get("message") or response.content)[:240]
    return answer, None


async def submit(client: Any, sub: Submission, collection: str, paragraphs: int, timeout_s: float) -> None:
    text = document_text(sub.key, sub.version, paragraphs)
    sub.started = time.time()
    answer, sub.error = await call(client, "ingest_text", timeout_s, text=text, name=sub.key, collection=collection)
    sub.answered = time.time()
    if answer is not None and answer.get("success") is False:
        sub.error = str(answer.get("error") or answer)[:240]
    elif answer is not None:
        sub.job_id = answer.get("job_id")
        sub.result_status = None if sub.job_id else str(answer.get("status") or "completed")
        if not sub.job_id and not answer.get("status"):
            sub.error = f"neither a job id nor a result: {answer}"[:240]


@dataclass
class Probe:
    """Calls of one read tool: (started, seconds, error or None)."""

    tool: str
    calls: list[tuple[float, float, str | None]] = field(default_factory=list)

    def stats(self, start: float, end: float) -> dict[str, Any]:
        inside = [c for c in self.calls if start <= c[0] <= end]
        ok = sorted(c[1] for c in inside if c[2] is None)
        errors = sorted({c[2] for c in inside if c[2]})
        return {"calls": len(inside), "ok": len(ok),
                "ok_pct": round(100 * len(ok) / len(inside), 1) if inside else None,
                "p50_ms": _quantile(ok, 0.5), "p95_ms": _quantile(ok, 0.95),
                "max_ms": round(max(c[1] for c in inside) * 1000) if inside else None,
                "errors": errors[:4]}  # fmt: skip


def _quantile(ordered: list[float], q: float) -> float | None:
    if not ordered:
        return None
    return round(ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] * 1000, 1)


async def probe(client: Any, probe: Probe, every_s: float, stop: asyncio.Event, arguments: Any) -> None:
    """Call ``probe.tool`` every ``every_s`` (``arguments()`` gives each call's arguments) until ``stop``."""
    rng = random.Random(probe.tool)
    while not stop.is_set():
        started = time.time()
        args = arguments(rng)
        if args is not None:
            _, error = await call(client, probe.tool, 10.0, **args)
            probe.calls.append((started, time.time() - started, error))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), max(0.0, every_s - (time.time() - started)))
