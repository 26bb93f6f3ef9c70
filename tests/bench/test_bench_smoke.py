"""The benchmark runs end to end on a small SciFact subset through the real services (no figure is held
to a target here: the point is that `make bench` works and reports every number)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bench import report, run, search_costs
from bench.data import BENCH_DIR, DEFAULT_DIR, load
from bench.pipeline import open_stack

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


@pytest.mark.skipif(not (DEFAULT_DIR / "corpus.jsonl").is_file(), reason="shared/bench/scifact is not beside the repo")
def test_quick_benchmark_reports_every_figure(tmp_path: Path) -> None:
    out, work = str(tmp_path / "out"), str(tmp_path / "work")
    engine = os.environ.get("VECTOR_GATEWAY_INDEX_ENGINE")
    run.main(["--quick", "--queries", "20", "--extra-docs", "60", "--throughput-docs", "20", "--dataset", "scifact",
              "--latency-queries", "10", "--out", out, "--work-dir", work])  # fmt: skip
    # The benchmark runs on Milvus Lite for itself only: the processes this test run starts later keep the default.
    assert os.environ.get("VECTOR_GATEWAY_INDEX_ENGINE") == engine
    result = json.loads((tmp_path / "out" / "latest.json").read_text())
    quality = result["quality"]
    assert quality["dataset"] == "scifact" and quality["relevance"] == "binary"
    expected = load().subset(20, 60)  # the 20 queries' relevant documents and 60 others
    assert quality["corpus"]["documents"] == len(expected.docs)
    assert quality["corpus"]["chunks"] >= quality["corpus"]["documents"]
    for mode in ("keyword", "semantic", "hybrid"):
        assert quality[mode]["queries"] == 20
        # On 20 queries among ~80 documents every mode finds most answers; a broken fold or id mapping gives ~0.
        assert quality[mode]["ndcg@10"] > 0.5, (mode, quality[mode])
    assert result["throughput"]["pipeline"]["chunks"] == result["throughput"]["raw_encode"]["chunks"]
    assert result["throughput"]["ratio"] > 0
    for path in ("raw", "gateway_api", "mcp"):
        assert result["latency"][path]["n"] == 10 and result["latency"][path]["p50_ms"] > 0
    stages = result["latency"]["gateway_stages_p50_ms"]
    assert stages["embedding"] > 0 and 0 < stages["search"] < result["latency"]["gateway_api"]["p50_ms"]
    # The per-call costs behind bench/TUNING.md's latency section run on the same work folder.
    costs = search_costs.measure(Path(work), queries=3)
    assert len(costs) == 11 and all(ms > 0 for ms in costs.values())
    assert "| hybrid |" in (tmp_path / "out" / "latest.md").read_text()
    assert (tmp_path / "out" / "latest.png").stat().st_size > 10_000


@pytest.mark.skipif(not (BENCH_DIR / "dbpedia-5k" / "corpus.jsonl").is_file(), reason="no shared/bench/dbpedia-5k")
async def test_dbpedia_is_named_graded_and_short_documents_are_skipped_not_fatal(tmp_path: Path) -> None:
    full = load(BENCH_DIR / "dbpedia-5k")
    short = [d for d in full.docs if len(d.text) < 50]
    data = full.subset(3, 30)
    data.docs += [d for d in short[:2] if d not in data.docs]
    args = run.parse_args(["--chunking", "default"])
    async with open_stack(tmp_path / "work") as stack:
        quality = await run.quality(stack, args, data, "dbpedia_5k")
    assert quality["dataset"] == "dbpedia-5k" and quality["relevance"].startswith("graded")
    skipped = {s["id"] for s in quality["corpus"]["skipped"]}
    assert {d.doc_id for d in short[:2]} <= skipped and quality["corpus"]["documents"] == len(data.docs) - len(skipped)
    assert quality["hybrid"]["queries"] == 3 and quality["semantic"]["ndcg@10"] > 0.3
    table = "\n".join(report.quality_table(quality, {}))
    assert "DBpedia-Entity" in table and "skipped" in table and "| hybrid |" in table
