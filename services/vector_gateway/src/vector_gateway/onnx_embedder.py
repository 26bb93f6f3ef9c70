"""The sentence-transformers model with its transformer run by ONNX Runtime: the same vectors, faster on a CPU
(docs/embeddings.md, bench/results).

Only the transformer's forward pass moves to ONNX Runtime. The model's own ``preprocess`` (its tokenizer, its
truncation at ``max_seq_length``, its default prompt) builds the inputs, and the model's own modules after the
transformer (pooling, dense layers, normalisation) turn the token embeddings into the sentence vector, so any
sentence-transformers text model gets what ``encode()`` gives, not a re-implementation of it.

Two shortcuts skip sentence-transformers' generic machinery where it provably changes nothing (``FastPath``):
the tokenizer is called directly when it gives ``preprocess``'s very tensors on probe texts, and mean pooling
runs in numpy when the modules after the transformer are a plain mean ``Pooling`` (and ``Normalize``). They save
about a millisecond per query (bench/results); any other model takes the generic path. A model that takes both
may start without torch next time (light_embedder.py, light_check.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .onnx_export import OUTPUT_NAME, input_names
from .onnx_runtime import OnnxEncoder, open_session

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

# Texts that exercise case, accents, digits, punctuation, an empty string, truncation and padding.
PROBES = ["Hello World", "UPPER and lower, Ünïcödé café (CO2) 12.5% -- naïve?", "", "token " * 600, "a b"]
PROBE_BATCHES = [[text] for text in PROBES] + [PROBES]  # each alone, then all together (padded)


@dataclass(frozen=True)
class FastPath:
    """Which of sentence-transformers' steps may be replaced by a direct call (see the module docstring)."""

    tokenize: bool
    mean_pooling: bool

    @classmethod
    def of(cls, model: SentenceTransformer, names: list[str], prompt: str | None) -> FastPath:
        return cls(tokenize=not prompt and _tokenizer_matches(model, names), mean_pooling=_plain_mean(model))


def direct_features(model: SentenceTransformer, texts: list[str]) -> dict[str, np.ndarray]:
    """The graph's inputs from the model's tokenizer called directly (``FastPath.tokenize``)."""
    return model.tokenizer(texts, padding=True, truncation="longest_first", max_length=model.max_seq_length,
                           return_tensors="np")  # fmt: skip


def _tokenizer_matches(model: SentenceTransformer, names: list[str]) -> bool:
    if not getattr(model, "tokenizer", None) or not model.max_seq_length:
        return False
    try:
        for batch in PROBE_BATCHES:
            want, got = model.preprocess(batch), direct_features(model, batch)
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


class OnnxEmbedder(OnnxEncoder):
    """The sentence-transformers model with its transformer on ONNX Runtime (the load that imports torch)."""

    path = "sentence-transformers"

    def __init__(
        self,
        model_name: str,
        model: SentenceTransformer,
        onnx_path: Path,
        *,
        batch_size: int = 64,
        threads: int = 0,
        lanes: bool = False,
    ) -> None:
        self._model = model
        self._post = list(model)[1:]
        inputs = input_names(model)
        name = model.default_prompt_name
        self._prompt = model.prompts.get(name) if name else None
        self.fast = FastPath.of(model, inputs, self._prompt)
        super().__init__(model_name, open_session(onnx_path, threads, lanes=lanes), inputs, batch_size=batch_size)
        self.session_settings["fast_path"] = {"tokenize": self.fast.tokenize, "mean_pooling": self.fast.mean_pooling}

    def _token_lengths(self, texts: list[str]) -> np.ndarray:
        if self.fast.tokenize:
            ids = self._model.tokenizer(texts, truncation="longest_first", max_length=self._model.max_seq_length)
            return np.array([len(one) for one in ids["input_ids"]])
        return self._model.preprocess(texts, prompt=self._prompt)["attention_mask"].sum(dim=1).numpy()

    def _features(self, texts: list[str]) -> tuple[Any, dict[str, np.ndarray]]:
        if self.fast.tokenize:
            features: dict[str, Any] = direct_features(self._model, texts)
            return features, {name: features[name] for name in self._inputs}
        features = self._model.preprocess(texts, prompt=self._prompt)
        return features, {name: features[name].numpy() for name in self._inputs}

    def _pool(self, features: Any, feeds: dict[str, np.ndarray], hidden: np.ndarray) -> np.ndarray:
        """Masked mean in numpy (``FastPath``), or the model's own modules after the transformer, in torch."""
        if self.fast.mean_pooling:
            return super()._pool(features, feeds, hidden)
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
