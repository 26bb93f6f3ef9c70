"""What both ONNX Runtime embedders share, without torch: the session, batches of like token length, mean pooling.

Two embedders build on it. ``OnnxEmbedder`` (onnx_embedder.py) holds the sentence-transformers model and uses
its preprocessing and modules; ``LightEmbedder`` (light_embedder.py) needs neither torch nor sentence-transformers
and serves a model a full load has verified. They differ only in how texts become the graph's inputs and, for
the full one, how token embeddings become a sentence vector; everything else is here.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .onnx_export import OUTPUT_NAME


def available_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


@dataclass(frozen=True)
class Session:
    """An ONNX Runtime session of the transformer graph and the settings it runs with (reported by the embedder)."""

    ort: Any
    threads: int
    settings: dict[str, object]
    # Run options that give the CPU arena's free blocks back after a run. Document batches use them: the arena
    # otherwise keeps the largest batch's ~250 MB for good (341 chunks: RSS 465 vs 235 MB after, 0-10% fewer
    # texts/s within noise; a query's run allocates little and keeps the arena as it is). docs/embeddings.md.
    release: Any
    # Texts run at once, each on one thread (lanes), where a run holds one text (int8): ONNX Runtime sessions run
    # concurrently, and one text is too small a run to share between threads (2 cores, 602 SciFact passages: 72
    # texts/s in 2 lanes of 1 thread against 60 with 2 threads a run; docs/embeddings.md "Lanes").
    lanes: int = 1


def open_session(onnx_path: Path, threads: int, *, lanes: bool = False) -> Session:
    """A session with ``threads`` intra-op threads (0: the CPUs this process may use); ``lanes``: as many lanes of
    one thread instead, for callers that run one text at a time (int8)."""
    import onnxruntime as ort

    threads = threads or available_cpus()
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1 if lanes else threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    # Idle worker threads sleep instead of spinning: the CPU they would burn is the CPU Milvus Lite, the
    # chunker and the event loop share in this process (bench/results: no loss in throughput).
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    settings = {"intra_op_threads": 1 if lanes else threads, "lanes": threads if lanes else 1, "inter_op_threads": 1,
                "spinning": False, "graph_optimization": "all", "onnxruntime": ort.__version__}  # fmt: skip
    session = ort.InferenceSession(str(onnx_path), options, providers=["CPUExecutionProvider"])
    release = ort.RunOptions()
    release.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
    settings["arena_shrunk_after_documents"] = True
    return Session(session, threads, settings, release, lanes=threads if lanes else 1)


class OnnxEncoder:
    """Texts -> L2-normalised vectors with the transformer graph on ONNX Runtime.

    A subclass sets what its hooks need, then calls ``__init__`` (which embeds a probe for the dimension); its
    hooks say how texts become the graph's inputs (``_features``, ``_token_lengths``) and, where not by masked
    mean, how token embeddings become sentence vectors (``_pool``). Thread-safe: ONNX Runtime sessions run
    concurrently, and the hooks keep no state between calls (test_onnx_embedder's concurrency test).
    """

    engine = "onnx"
    path = ""  # which load made it (session_settings["path"]): "sentence-transformers" or "torch-free"
    precision = "fp32"  # or "int8" (int8.py): the graph it runs; the model name then says so too

    def __init__(self, model_name: str, session: Session, inputs: list[str], *, batch_size: int) -> None:
        self._name = model_name
        self.batch_size = batch_size
        self._inputs = inputs
        self.session = session
        self.threads = session.threads
        self.session_settings: dict[str, object] = {**session.settings, "path": self.path}
        self._lanes = ThreadPoolExecutor(session.lanes, "embed-lane") if session.lanes > 1 and batch_size == 1 else None
        self._dimension = int(self._encode(["dimension probe"]).shape[1])

    @property
    def dimension(self) -> int:
        return self._dimension

    @property
    def model_name(self) -> str:
        return self._name

    @property
    def device(self) -> str:
        return "cpu"

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        # Longest first, cut into batches of like token length: a batch pads (and attends over) little, whatever
        # the order the caller sends (the pipeline sends 32 chunks in document order: 1.37x the tokens unsorted).
        # One text a run (int8): nothing pads, so the texts need no counting (a second tokenisation of each).
        if self._lanes is not None and len(texts) > 1:  # one text a run, runs side by side (Session.lanes)
            return [vector.tolist() for vector in self._lanes.map(lambda text: self._encode([text])[0], texts)]
        sized = len(texts) > 1 and self.batch_size > 1
        lengths = self._token_lengths(texts) if sized else np.ones(len(texts), dtype=np.int64)
        order = np.argsort(-lengths, kind="stable")
        vectors = np.empty((len(texts), self._dimension), dtype=np.float32)
        for group in length_groups(lengths[order].tolist(), self.batch_size):
            chosen = order[group]
            vectors[chosen] = self._encode([texts[i] for i in chosen])
        return vectors.tolist()

    def embed_query(self, text: str) -> list[float]:
        return self._encode([text])[0].tolist()

    def _encode(self, texts: list[str]) -> np.ndarray:
        features, feeds = self._features(texts)
        release = self.session.release if len(texts) > 1 else None
        hidden = self.session.ort.run([OUTPUT_NAME], feeds, release)[0]
        return self._pool(features, feeds, hidden)

    def _features(self, texts: list[str]) -> tuple[Any, dict[str, np.ndarray]]:
        """(what ``_pool`` needs besides the feeds, the graph's inputs by name)."""
        raise NotImplementedError

    def _token_lengths(self, texts: list[str]) -> np.ndarray:
        raise NotImplementedError

    def _pool(self, features: Any, feeds: dict[str, np.ndarray], hidden: np.ndarray) -> np.ndarray:
        return mean_normalized(hidden, feeds["attention_mask"])


def length_groups(lengths: list[int], batch_size: int, *, slack: float = 0.1, min_gap: int = 8) -> list[slice]:
    """Consecutive runs of ``lengths`` (sorted longest first) to batch together: at most ``batch_size`` texts, each
    within ``slack`` of the run's longest (or ``min_gap`` tokens, so that short texts do not split into many runs)."""
    groups, start = [], 0
    for i in range(1, len(lengths) + 1):
        if (
            i == len(lengths)
            or i - start >= batch_size
            or lengths[start] - lengths[i] > max(min_gap, slack * lengths[start])
        ):
            groups.append(slice(start, i))
            start = i
    return groups


def mean_normalized(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """sentence-transformers' mean Pooling (masked mean of the token embeddings), then L2 normalisation."""
    if hidden.shape[0] == 1:  # one text: no padding to mask
        pooled = hidden[0].mean(axis=0, keepdims=True)
    else:
        weights = mask.astype(hidden.dtype)
        pooled = np.einsum("bld,bl->bd", hidden, weights) / np.maximum(weights.sum(axis=1, keepdims=True), 1e-9)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    return pooled / np.maximum(norms, 1e-12)
