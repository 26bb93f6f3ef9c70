"""The audit sink (INGESTION_MCP_AUDIT_LOG): a file or off, at INFO whatever the application's log level."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from ingestion_mcp.access import audit
from ingestion_mcp.settings import McpSettings
from pydantic import ValidationError


@pytest.fixture
def restored() -> Iterator[None]:
    """The audit logger as the other tests expect it (propagating to the root, no sink of its own)."""
    logger = logging.getLogger("ingestion_mcp.audit")
    handlers, level, propagate = list(logger.handlers), logger.level, logger.propagate
    root_level = logging.getLogger().level
    logging.getLogger().setLevel(logging.WARNING)  # the server's default log level
    yield
    for handler in [h for h in logger.handlers if h not in handlers]:
        logger.removeHandler(handler)
        handler.close()
    logger.setLevel(level)
    logger.propagate = propagate
    logging.getLogger().setLevel(root_level)


def test_a_file_sink_gets_one_json_line_per_record_with_its_fields(tmp_path: Path, restored: None) -> None:
    path = tmp_path / "audit.log"
    audit.configure(str(path))
    audit.record("delete_document", "team-a-docs", "doc-1", "forbidden")
    (line,) = [json.loads(text) for text in path.read_text().splitlines()]
    assert line["logger"] == "ingestion_mcp.audit" and line["level"] == "info"
    assert {k: line[k] for k in ("action", "collection", "document", "result")} == {
        "action": "delete_document", "collection": "team-a-docs", "document": "doc-1", "result": "forbidden",
    }  # fmt: skip
    assert {"subject", "tool", "request_id"} <= line.keys() and not line["msg"].startswith("{")

    audit.configure("off")  # replaces the file sink
    audit.record("delete_document", "team-a-docs", "doc-2", "ok")
    assert len(path.read_text().splitlines()) == 1


def test_the_sink_setting_defaults_to_stderr_and_refuses_a_folder_that_is_not_there(tmp_path: Path) -> None:
    assert McpSettings().audit_log == "stderr"
    assert McpSettings(audit_log=str(tmp_path / "audit.log")).audit_log.endswith("audit.log")
    with pytest.raises(ValidationError, match="audit log"):
        McpSettings(audit_log=str(tmp_path / "no-such-folder" / "audit.log"))


async def test_a_job_cancel_is_audited_like_a_write_refusals_included(tmp_path: Path, restored: None) -> None:
    """cancel_job (and the console's cancel: both AppState.cancel_job) leaves one audit record per attempt: another
    caller's cancel is refused (the job answers as unknown to them) and recorded as forbidden, an unknown job as
    failed, the owner's cancel as ok, a second cancel of the ended job as ended:cancelled."""
    import asyncio

    from ingestion_mcp.access.policy import Caller, Grant, acting_as
    from ingestion_mcp.state import AppState

    lines: list[dict[str, object]] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(dict(record.fields))  # type: ignore[attr-defined]  # audit records carry their fields

    logger = logging.getLogger("ingestion_mcp.audit")
    handler = Collect()
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)  # as audit.configure sets it

    class EmptyLibrary:  # the job kind below calls no service; submitting looks up the collection names only
        async def collection_names(self) -> list[str]:
            return []

    state = AppState.create(McpSettings(data_dir=tmp_path), backend=EmptyLibrary())  # type: ignore[arg-type]  # see above

    async def wait_forever(state: AppState, params: dict[str, object], progress: object) -> None:
        await asyncio.Event().wait()

    state.kinds.add("test_wait", wait_forever)
    alice, bob = (Caller(name, (Grant(f"{name}-*", "write"),)) for name in ("alice", "bob"))
    try:
        with acting_as(alice):
            job = await state.submit_job("test_wait", {"collection": "alice-notes"}, "waits")
        with acting_as(bob):
            assert await state.cancel_job(job.id) is None  # another's job: unknown to bob, nothing cancelled
        assert getattr(await state.jobs.get(job.id), "status", None) == "running"
        with acting_as(alice):
            assert await state.cancel_job("job_nothing") is None
            assert getattr(await state.cancel_job(job.id), "status", None) == "cancelled"
            assert getattr(await state.cancel_job(job.id), "status", None) == "cancelled"  # again: it has ended
    finally:
        logger.removeHandler(handler)
        await state.jobs.aclose()
    # An accepted job leaves no record of its own: its writes do, one per write (issue 50).
    assert not [line for line in lines if str(line["action"]).startswith("submit_")], lines
    cancels = [(line["subject"], line["document"], line["result"]) for line in lines if line["action"] == "cancel_job"]
    assert cancels == [
        ("bob", job.id, "forbidden"),
        ("alice", "job_nothing", "failed:JOB_NOT_FOUND"),
        ("alice", job.id, "ok"),
        ("alice", job.id, "ended:cancelled"),
    ], lines


def test_the_stderr_sink_reads_as_the_application_log_and_never_says_none(
    restored: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """Text for a person (INGESTION_MCP_JSON_LOGS=false, or a terminal), JSON for machines; a record without a
    subject (stdio, a shared token) names no "None" (issue 50)."""
    audit.configure("stderr", json_logs=False)
    audit.record("delete_document", "team-a-docs", "doc-1", "ok")
    (text,) = capsys.readouterr().err.splitlines()
    assert text.endswith("INFO ingestion_mcp.audit: audit: delete_document on team-a-docs: ok (-)"), text
    audit.configure("stderr", json_logs=True)
    audit.record("delete_document", "team-a-docs", "doc-1", "ok")
    (line,) = [json.loads(text) for text in capsys.readouterr().err.splitlines()]
    assert line["subject"] is None and "None" not in line["msg"] and line["logger"] == "ingestion_mcp.audit"
