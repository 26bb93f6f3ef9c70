"""The commands the documentation gives for running Redis keep what the broker acknowledged."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_every_documented_redis_keeps_an_append_only_file(checks):
    """A `redis-server` (or `docker run ... redis`) in a README or docs/ code block runs with
    `--appendonly yes` and an `--appendfsync`, unless its comment says it is a throwaway."""
    documents = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    problems = [
        problem
        for path in documents
        for problem in checks.distributed.doc_redis_violations(path.read_text(), str(path.relative_to(REPO)))
    ]
    assert problems == []
