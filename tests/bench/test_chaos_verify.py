"""The fault suite's judgement (bench/chaos_verify.py) on cases built by hand: what counts as lost,
duplicated, wrong version, stuck, and a job run twice at once."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from bench.chaos_verify import documents_summary, jobs_summary, ran_twice_at_once, worker_runs
from bench.chaos_workload import TAG, Submission, document_text, plan


def sub(key: str, version: int, order: int, status: str | None = "completed", acked: bool = True) -> Submission:
    s = Submission(key, version, "before", order, job_id=f"job_{key}_{version}" if acked else None)
    s.error = None if acked else "no answer in 120 s"
    s.final = {"status": status} if status else {}
    return s


def doc(key: str, versions: list[int], chunks: int = 3, readable: int | None = 3) -> dict[str, Any]:
    return {"key": key, "source": key, "chunk_count": chunks, "readable": readable, "versions": versions}


def store(*docs: dict[str, Any], rows: int | None = None) -> dict[str, Any]:
    total = sum(d["chunk_count"] for d in docs) if rows is None else rows
    return {"collection": {"chunk_count": total}, "documents": list(docs)}


def test_the_text_names_its_key_and_version_in_every_paragraph() -> None:
    text = document_text("doc-07", 2, paragraphs=5)
    paragraphs = text.split("\n\n")[1:]
    assert len(paragraphs) == 5
    assert all({(m.group(1), m.group(2)) for m in TAG.finditer(p)} == {("2", "doc-07")} for p in paragraphs)


def test_the_plan_sends_second_versions_after_the_first_ones() -> None:
    subs = plan(12, 3)
    assert len(subs) == 12 and len({s.key for s in subs}) == 9
    for second in (s for s in subs if s.version == 2):
        first = next(s for s in subs if s.key == second.key and s.version == 1)
        assert first.order < second.order and second.phase == "during"


def test_the_last_submitted_completed_version_must_be_stored() -> None:
    subs = [sub("a", 1, 0), sub("a", 2, 1), sub("b", 1, 2), sub("b", 2, 3, status="failed")]
    right = documents_summary(subs, store(doc("a", [2]), doc("b", [1])))
    assert (right["stored"], right["wrong_version"], right["lost"]) == (2, 0, 0)
    wrong = documents_summary(subs, store(doc("a", [1]), doc("b", [1])))
    assert wrong["keys"]["wrong_version"] == ["a"]
    mixed = documents_summary(subs, store(doc("a", [1, 2]), doc("b", [1])))
    assert mixed["keys"]["wrong_version"] == ["a"]


def test_a_later_unacknowledged_write_is_not_called_a_wrong_version() -> None:
    subs = [sub("a", 1, 0), sub("a", 2, 1, status=None, acked=False)]
    summary = documents_summary(subs, store(doc("a", [2])))
    assert (summary["wrong_version"], summary["unacked_write"]) == (0, 1)


def test_lost_duplicated_and_extra_rows() -> None:
    subs = [sub("a", 1, 0), sub("b", 1, 1), sub("c", 1, 2), sub("d", 1, 3, status="failed")]
    found = documents_summary(subs, store(doc("b", [1]), doc("b", [1]), doc("c", [1], readable=1), rows=14))
    assert found["keys"]["lost"] == ["a", "c"]  # absent, and listed with chunks that cannot be read
    assert found["keys"]["duplicated"] == ["b"]
    assert found["extra_rows"] == 5 and found["stored"] == 1
    assert "d" not in found["keys"]["lost"], "a job that failed promised nothing"


def test_jobs_still_running_or_without_a_record_are_stuck() -> None:
    subs = [sub("a", 1, 0), sub("b", 1, 1, status="running"), sub("c", 1, 2, status=None),
            sub("d", 1, 3, status="failed"), sub("e", 1, 4, status=None, acked=False)]  # fmt: skip
    subs[3].final["error_code"] = "WORKER_LOST"
    summary = jobs_summary(subs)
    assert (summary["acknowledged"], summary["ended"], summary["stuck"], summary["refused"]) == (4, 2, 2, 1)
    assert summary["failed_codes"] == {"WORKER_LOST": 1}


def test_overlapping_runs_of_one_job_are_found() -> None:
    runs = {"job_1": [("worker-0", 10.0, 30.0), ("worker-1", 29.5, 40.0)],  # a second run before the first ended
            "job_2": [("worker-0", 10.0, 20.0), ("worker-1", 21.0, 25.0)],  # a retry after the first died
            "job_3": [("worker-1", 5.0, 8.0)]}  # fmt: skip
    assert list(ran_twice_at_once(runs)) == ["job_1"]


def arq_line(at: str, message: str) -> str:
    return json.dumps({"ts": f"2026-11-24T10:00:{at}Z", "level": "info", "logger": "arq.worker", "msg": message})


def test_runs_are_read_from_the_workers_arq_lines(tmp_path: Path) -> None:
    logs = {
        "worker-0": [arq_line("01.000", "  0.01s → job_a:ingestion_job('job_a', 'ingest_text', {...})"),
                     arq_line("02.000", "  0.01s → job_b:ingestion_job('job_b', 'ingest_text', {...})"),
                     arq_line("05.000", "  4.00s ← job_a:ingestion_job ● 'completed'")],  # job_b: killed
        "worker-1": [arq_line("09.000", "  0.01s → job_b:ingestion_job('job_b', 'ingest_text', {...}) try=2"),
                     arq_line("12.000", "  3.00s ← job_b:ingestion_job ● 'completed'"),
                     arq_line("04.500", "  0.01s → job_a:ingestion_job('job_a', 'ingest_text', {...}) try=2"),
                     arq_line("04.600", "  0.10s ← job_a:ingestion_job ● 'ended before it ran'")],
    }  # fmt: skip
    workers = []
    for name, lines in logs.items():
        (tmp_path / f"{name}.log").write_text("\n".join(["not json", *lines]) + "\n")
        workers.append(SimpleNamespace(name=name, log_path=tmp_path / f"{name}.log"))
    base = 1795514400.0  # 2026-11-24T10:00:00Z
    lifetimes = {"worker-0": [(base, base + 7.0)], "worker-1": [(base, base + 60.0)]}
    topology = SimpleNamespace(workers=workers, ended_lifetimes=lambda: lifetimes)
    runs = worker_runs(topology)  # type: ignore[arg-type]  # a stand-in with the two things it reads
    assert runs["job_a"] == [("worker-0", base + 1.0, base + 5.0)], "a try that ran nothing is no run"
    assert sorted(runs["job_b"]) == [("worker-0", base + 2.0, base + 7.0), ("worker-1", base + 9.0, base + 12.0)]
    assert ran_twice_at_once(runs) == {}
