"""One lint over every profile's tools/list against each client's rules (scripts/client_lint.py): Gemini's schema
keywords, Claude Code's 2 KB descriptions and 25,000-token answers, OpenAI strict mode reported. The lint itself is
checked on schemas each client refuses, so a rule that stops biting shows here."""

from __future__ import annotations

import pytest
from ingestion_mcp.profiles import NAMES
from ingestion_mcp.toolkit.annotations import MAX_RESULT_KEY

from scripts import client_lint


@pytest.fixture(scope="module")
def reports() -> dict[str, client_lint.Report]:
    import asyncio

    return {report.profile: report for report in asyncio.run(client_lint.reports(list(NAMES)))}


@pytest.mark.parametrize("profile", NAMES)
def test_every_profile_keeps_the_rules_each_client_enforces(profile: str, reports) -> None:
    report = reports[profile]
    assert report.required.keys() == {"gemini", "claude-code"}
    assert report.ok, report.required


def test_every_tool_says_how_its_answer_stays_under_claude_codes_cap(reports) -> None:
    assert set(client_lint.RESULT_BOUNDS) == set(NAMES)
    for profile, report in reports.items():
        listed = set(report.strict_ready) | set(report.strict_not)
        assert set(client_lint.RESULT_BOUNDS[profile]) == listed, profile  # no stale or missing entry


def tool(name: str = "t", description: str = "Does a thing.", **schema_and_meta: object) -> dict[str, object]:
    meta = schema_and_meta.pop("_meta", None)
    schema = {"type": "object", "properties": {"x": {"type": "string"}}} | schema_and_meta
    return {"name": name, "description": description, "inputSchema": schema} | ({"_meta": meta} if meta else {})


@pytest.mark.parametrize(
    ("listed", "client", "found"),
    [
        (tool(properties={"n": {"type": "number", "exclusiveMinimum": 0}}), "gemini", "$.n: exclusiveMinimum"),
        (tool(properties={"n": {"$ref": "#/$defs/N"}}), "gemini", "$.n: $ref"),
        (tool(properties={"d": {"type": "string", "format": "uri"}}), "gemini", "$.d: format 'uri'"),
        (tool(properties={"m": {"type": "object", "additionalProperties": True}}), "gemini", "additionalProperties"),
        (tool(description="x" * 2049), "claude-code", "description of 2049 characters"),
        (tool(name="unknown"), "claude-code", "no result bound declared"),
        (tool(name="big"), "claude-code", "no _meta"),
    ],
)  # fmt: skip
def test_the_lint_catches_what_each_client_refuses(listed, client: str, found: str, monkeypatch) -> None:
    monkeypatch.setitem(client_lint.RESULT_BOUNDS, "probe", {"t": "bounded", "big": "meta"})
    report = client_lint.lint("probe", [listed], None)
    assert any(found in problem for problem in report.required[client]), report.required
    assert not report.ok


def test_a_declared_cap_and_short_text_pass(monkeypatch) -> None:
    monkeypatch.setitem(client_lint.RESULT_BOUNDS, "probe", {"big": "meta"})
    assert client_lint.lint("probe", [tool(name="big", _meta={MAX_RESULT_KEY: 500_000})], "x" * 2048).ok
    assert not client_lint.lint("probe", [tool(name="big")], "x" * 2049).ok  # instructions cut at 2 KB too


def test_openai_strict_is_reported_for_what_it_would_refuse() -> None:
    closed = tool(properties={"q": {"type": "string"}}, required=["q"], additionalProperties=False)
    bounded = tool(name="open", properties={"q": {"type": "string", "maxLength": 9}})
    report = client_lint.lint("probe", [closed, bounded], None)
    assert report.strict_ready == ["t"]
    expected = ["$: not closed (additionalProperties false)", "$: optional q", "$.q: maxLength"]
    assert report.strict_not["open"] == expected


@pytest.mark.parametrize(("size", "accepted"), [(0, False), (-1, False), (0.001, True), (1024, True), (1025, False)])
def test_docs_servers_file_size_keeps_its_meaning_without_exclusive_minimum(size: float, accepted: bool) -> None:
    """maxFileSizeMB lost `exclusiveMinimum` (Gemini refuses it) but not the rule: more than 0, at most 1024."""
    from ingestion_mcp.profiles.docs_server.models import FileOptions
    from pydantic import ValidationError

    try:
        FileOptions(maxFileSizeMB=size)
    except ValidationError as exc:
        assert not accepted and ("more than 0" in str(exc) or "1024" in str(exc)), exc
    else:
        assert accepted
