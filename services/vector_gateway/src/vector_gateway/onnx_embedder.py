"""The sentence-transformers model with its transformer run by ONNX Runtime: the same vectors, about twice as fast
on a CPU (docs/embeddings.md, bench/results).

Only the transformer's forward pass moves to ONNX Runtime. The model's own ``preprocess`` (its tokenizer, its
truncation at ``max_seq_length``, its default prompt) builds the inputs, and the model's own modules after the
transformer (pooling, dense layers, normalisation) turn the token embeddings into the sentence vector, so any
sentence-transformers text model gets what ``encode()`` gives, not a re-implementation of it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .onnx_export import OUTPUT_NAME, input_names

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer


def available_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


class OnnxEmbedder:
    """Thread-safe: ONNX Runtime sessions run concurrently, preprocessing keeps no state between calls
    (test_onnx_embedder's concurrency test)."""

    engine = "onnx"

    def __init__(
        self, model_name: str, model: SentenceTransformer, onnx_path: Path, *, batch_size: int = 64, threads: int = 0
    ) -> None:
        import onnxruntime as ort

        self._model = model
        self._name = model_name
        self._batch_size = batch_size
        self._inputs = input_names(model)
        self._post = list(model)[1:]
        self.threads = threads or available_cpus()
        options = ort.SessionOptions()
        options.intra_op_num_threads = self.threads
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        # Idle worker threads sleep instead of spinning: the CPU they would burn is the CPU Milvus Lite, the
        # chunker and the event loop share in this process (bench/results: no loss in throughput).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session_settings = {"intra_op_threads": self.threads, "inter_op_threads": 1, "spinning": False,
                                 "graph_optimization": "all", "onnxruntime": ort.__version__}  # fmt: skip
        self._session = ort.InferenceSession(str(onnx_path), options, providers=["CPUExecutionProvider"])
        name = model.default_prompt_name
        self._prompt = model.prompts.get(name) if name else None
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
        # Longest first, as encode() batches: texts of like length pad little.
        order = np.argsort([-len(text) for text in texts], kind="stable")
        vectors = np.empty((len(texts), self._dimension), dtype=np.float32)
        for first in range(0, len(texts), self._batch_size):
            chosen = order[first : first + self._batch_size]
            vectors[chosen] = self._encode([texts[i] for i in chosen])
        return vectors.tolist()

    def embed_query(self, text: str) -> list[float]:
        return self._encode([text])[0].tolist()

    def _encode(self, texts: list[str]) -> np.ndarray:
        import torch

        features = self._model.preprocess(texts, prompt=self._prompt)
        feeds = {name: features[name].numpy() for name in self._inputs}
        hidden = self._session.run([OUTPUT_NAME], feeds)[0]
        features[OUTPUT_NAME] = torch.from_numpy(hidden)
        with torch.inference_mode():
            for module in self._post:  # the model's own pooling (and dense / normalize modules)
                features = module(features)
            vectors = torch.nn.functional.normalize(features["sentence_embedding"], p=2, dim=1)
        if self._model.truncate_dim:
            vectors = torch.nn.functional.normalize(vectors[:, : self._model.truncate_dim], p=2, dim=1)
        return vectors.numpy()
