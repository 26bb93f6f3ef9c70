"""bench.scale's pieces that need no server: replicas of the corpus, engine names, ratios to milvus-lite."""

from __future__ import annotations

import numpy as np

from bench.scale_corpus import Corpus
from bench.scale_engines import originals, replicas, unavailable
from bench.scale_report import quality_difference, ratios


def corpus() -> Corpus:
    docs = [[{"source": f"scifact:{d}", "title": f"T{d}", "text": f"text {d} {c}", "token_count": 3,
              "heading_path": []} for c in range(d % 3 + 1)] for d in range(7)]  # fmt: skip
    rng = np.random.default_rng(0)
    vectors = [rng.standard_normal((len(rows), 8)).astype(np.float32) for rows in docs]
    return Corpus(docs, [v / np.linalg.norm(v, axis=1, keepdims=True) for v in vectors], "model")


def test_replicas_stop_at_the_target_with_new_sources_and_unit_vectors() -> None:
    used = [4]
    batches = list(replicas(corpus(), target=30, have=5, used=used))
    requests = [r for rs, _ in batches for r in rs]
    vectors = np.concatenate([v for _, v in batches])
    assert len(vectors) == sum(len(r.chunks) for r in requests) >= 25
    assert len(vectors) - max(len(r.chunks) for r in requests) < 25  # stopped at the document that reached it
    assert len({r.source for r in requests}) == len(requests) and requests[0].source == "scale:4:scifact:0"
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert used[-1] > 4


def test_originals_keep_the_corpus_sources() -> None:
    (requests, vectors), *_ = list(originals(corpus()))
    assert [r.source for r in requests] == [f"scifact:{d}" for d in range(7)] and len(vectors) == 13


def test_unknown_engine_is_named() -> None:
    assert "unknown engine 'faiss'" in (unavailable("faiss") or "")
    assert unavailable("milvus-lite") is None


def test_ratios_and_quality_difference_are_against_milvus_lite() -> None:
    entry = {"search": {"p50_ms": 100.0, "p95_ms": 200.0}, "build": {"rows_per_s": 50.0}, "open_s": 30.0}
    faster = {"search": {"p50_ms": 25.0, "p95_ms": 50.0}, "build": {"rows_per_s": 100.0}, "open_s": 3.0}
    got = ratios({"milvus-lite": {"sizes": {"1000": entry}}, "lance": {"sizes": {"1000": faster, "9": faster}}})
    assert got == {"lance": {"1000": {"p50_ms": 0.25, "p95_ms": 0.25, "open_s": 0.1, "ingest_rows_per_s": 2.0}}}
    scores = {"milvus-lite": {"scifact": {"ndcg@10": 0.7}}, "lance": {"scifact": {"ndcg@10": 0.69}}}
    assert quality_difference(scores) == {"lance": {"scifact": -0.01}}
