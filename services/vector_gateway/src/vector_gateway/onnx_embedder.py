"""The sentence-transformers model with its transformer run by ONNX Runtime: the same vectors, faster on a CPU
(docs/embeddings.md, bench/results).

Only the transformer's forward pass moves to ONNX Runtime. The model's own ``preprocess`` (its tokenizer, its
truncation at ``max_seq_length``, its default prompt) builds the inputs, and the model's own modules after the
transformer (pooling, dense layers, normalisation) turn the token embeddings into the sentence vector, so any
sentence-transformers text model gets what ``encode()`` gives, not a re-implementation of it.

Two shortcuts skip sentence-transformers' generic machinery where it provably changes nothing (``FastPath``):
the tokenizer is called directly when it gives ``preprocess``'s very tensors on probe texts, and mean pooling
runs in numpy when the modules after the transformer are a plain mean ``Pooling`` (and ``Normalize``). They save
about a millisecond per query (bench/results); any other model takes the generic path.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .onnx_export import OUTPUT_NAME, input_names

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

# Texts that exercise case, accents, digits, punctuation, an empty string, truncation and padding.
_PROBES = ["Hello World", "UPPER and lower, Ünïcödé café (CO2) 12.5% -- naïve?", "", "token " * 600, "a b"]


def available_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


@dataclass(frozen=True)
class FastPath:
    """Which of sentence-transformers' steps may be replaced by a direct call (see the module docstring)."""

    tokenize: bool
    mean_pooling: bool

    @classmethod
    def of(cls, model: SentenceTransformer, names: list[str], prompt: str | None) -> FastPath:
        return cls(tokenize=not prompt and _tokenizer_matches(model, names), mean_pooling=_plain_mean(model))


def _direct_features(model: SentenceTransformer, texts: list[str]) -> dict[str, np.ndarray]:
    return model.tokenizer(texts, padding=True, truncation="longest_first", max_length=model.max_seq_length,
                           return_tensors="np")  # fmt: skip


def _tokenizer_matches(model: SentenceTransformer, names: list[str]) -> bool:
    if not getattr(model, "tokenizer", None) or not model.max_seq_length:
        return False
    try:
        for texts in ([text] for text in _PROBES), [_PROBES]:
            for batch in texts:
                want, got = model.preprocess(batch), _direct_features(model, batch)
                if any(n not in got or not np.array_equal(want[n].cpu().numpy(), got[n]) for n in names):
                    return False
    except Exception:  # noqa: BLE001 - a tokenizer that cannot be called directly keeps the generic path
        return False
    return True


def _plain_mean(model: SentenceTransformer) -> bool:
    post = list(model)[1:]
    kinds = [type(module).__name__ for module in post]
    if kinds not in (["Pooling"], ["Pooling", "Normalize"]) or model.truncate_dim:
        return False
    return getattr(post[0], "pooling_mode", None) in ("mean", ("mean",), ["mean"])


def _session(onnx_path: Path, threads: int) -> tuple[Any, dict[str, object]]:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    # Idle worker threads sleep instead of spinning: the CPU they would burn is the CPU Milvus Lite, the
    # chunker and the event loop share in this process (bench/results: no loss in throughput).
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    settings = {"intra_op_threads": threads, "inter_op_threads": 1, "spinning": False,
                "graph_optimization": "all", "onnxruntime": ort.__version__}  # fmt: skip
    return ort.InferenceSession(str(onnx_path), options, providers=["CPUExecutionProvider"]), settings


class OnnxEmbedder:
    """Thread-safe: ONNX Runtime sessions run concurrently, preprocessing keeps no state between calls
    (test_onnx_embedder's concurrency test)."""

    engine = "onnx"

    def __init__(
        self, model_name: str, model: SentenceTransformer, onnx_path: Path, *, batch_size: int = 64, threads: int = 0
    ) -> None:
        self._model = model
        self._name = model_name
        self._batch_size = batch_size
        self._inputs = input_names(model)
        self._post = list(model)[1:]
        self.threads = threads or available_cpus()
        self._session, self.session_settings = _session(onnx_path, self.threads)
        name = model.default_prompt_name
        self._prompt = model.prompts.get(name) if name else None
        self.fast = FastPath.of(model, self._inputs, self._prompt)
        self.session_settings["fast_path"] = {"tokenize": self.fast.tokenize, "mean_pooling": self.fast.mean_pooling}
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
        lengths = self._token_lengths(texts)
        order = np.argsort(-lengths, kind="stable")
        vectors = np.empty((len(texts), self._dimension), dtype=np.float32)
        for group in length_groups(lengths[order].tolist(), self._batch_size):
            chosen = order[group]
            vectors[chosen] = self._encode([texts[i] for i in chosen])
        return vectors.tolist()

    def _token_lengths(self, texts: list[str]) -> np.ndarray:
        if len(texts) == 1:
            return np.ones(1, dtype=np.int64)
        if self.fast.tokenize:
            ids = self._model.tokenizer(texts, truncation="longest_first", max_length=self._model.max_seq_length)
            return np.array([len(one) for one in ids["input_ids"]])
        return self._model.preprocess(texts, prompt=self._prompt)["attention_mask"].sum(dim=1).numpy()

    def embed_query(self, text: str) -> list[float]:
        return self._encode([text])[0].tolist()

    def _encode(self, texts: list[str]) -> np.ndarray:
        if self.fast.tokenize:
            features: dict[str, Any] = _direct_features(self._model, texts)
            feeds = {name: features[name] for name in self._inputs}
        else:
            features = self._model.preprocess(texts, prompt=self._prompt)
            feeds = {name: features[name].numpy() for name in self._inputs}
        hidden = self._session.run([OUTPUT_NAME], feeds)[0]
        if self.fast.mean_pooling:
            return _mean_normalized(hidden, feeds["attention_mask"])
        return self._pool(features, hidden)

    def _pool(self, features: dict[str, Any], hidden: np.ndarray) -> np.ndarray:
        """The model's own modules after the transformer, in torch, then L2 normalisation."""
        import torch

        if not isinstance(features.get("attention_mask"), torch.Tensor):
            features = {name: torch.from_numpy(np.asarray(value)) for name, value in features.items()}
        features[OUTPUT_NAME] = torch.from_numpy(hidden)
        with torch.inference_mode():
            for module in self._post:  # the model's own pooling (and dense / normalize modules)
                features = module(features)
            vectors = torch.nn.functional.normalize(features["sentence_embedding"], p=2, dim=1)
        if self._model.truncate_dim:
            vectors = torch.nn.functional.normalize(vectors[:, : self._model.truncate_dim], p=2, dim=1)
        return vectors.numpy()


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


def _mean_normalized(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """sentence-transformers' mean Pooling (masked mean of the token embeddings), then L2 normalisation."""
    if hidden.shape[0] == 1:  # one text: no padding to mask
        pooled = hidden[0].mean(axis=0, keepdims=True)
    else:
        weights = mask.astype(hidden.dtype)
        pooled = np.einsum("bld,bl->bd", hidden, weights) / np.maximum(weights.sum(axis=1, keepdims=True), 1e-9)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    return pooled / np.maximum(norms, 1e-12)
