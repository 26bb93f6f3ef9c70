"""The torch-free start: the cached ONNX graph, the model's ``tokenizer.json`` run by the tokenizers library and
mean pooling in numpy, without importing torch or sentence-transformers (about 0.4 GB and several seconds less at
start; docs/embeddings.md "A torch-free start").

It serves a model only where a full load has shown that it gives the same vectors: light_check.py compares it
with the sentence-transformers path on probe texts and then writes a manifest (``light.json``) beside the ONNX
file. The manifest says what this path needs (sequence length, graph inputs, padding, dimension) and what it was
verified with (the tokenizer file's digest, the tokenizers and ONNX Runtime versions); when any of these no longer
holds, or the manifest is missing or unreadable, the gateway takes the full path, which writes it anew.
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .int8 import INT8_BATCH, Vectors, ensure_int8, identity, packaged_int8
from .onnx_export import onnx_file, stale_reason
from .onnx_runtime import OnnxEncoder, Session, open_session

log = logging.getLogger("vector_gateway.light_embedder")

MANIFEST_NAME = "light.json"
PACKAGED_DIR = "onnx"  # a model folder that carries its export keeps it here (packaged_export)
# The graph inputs this path can build, and the attribute of a tokenizers Encoding that holds each.
ENCODING_FIELDS = {"input_ids": "ids", "attention_mask": "attention_mask", "token_type_ids": "type_ids"}
Side = Literal["left", "right"]


class Unverified(Exception):
    """The manifest does not vouch for the torch-free path (any more); the message says why."""


class Padding(BaseModel):
    """Arguments of tokenizers' ``enable_padding``: what the model's Hugging Face tokenizer pads with."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    direction: Side
    pad_id: int
    pad_type_id: int
    pad_token: str


class Manifest(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    format: Literal[1] = 1  # bump when the fields or their meaning change: older manifests are then rewritten
    max_seq_length: int = Field(gt=0)
    truncation_side: Side
    padding: Padding
    inputs: tuple[str, ...]
    dimension: int = Field(gt=0)
    normalize: Literal[True] = True  # L2, after the masked mean (the only pooling this path runs)
    tokenizer_file: str = Field(description="relative to the model folder")
    tokenizer_sha256: str
    versions: dict[str, str] = Field(description="the tokenizers and onnxruntime versions it was verified with")

    @field_validator("inputs")
    @classmethod
    def _inputs_this_path_builds(cls, inputs: tuple[str, ...]) -> tuple[str, ...]:
        if unknown := set(inputs) - set(ENCODING_FIELDS):
            raise ValueError(f"the graph takes {sorted(unknown)}, which this path does not build")
        if "attention_mask" not in inputs:
            raise ValueError("mean pooling needs the attention mask among the graph's inputs")
        return inputs


def packaged_export(model_dir: Path) -> Path | None:
    """The ONNX export a model folder carries itself (``onnx/model.onnx`` with its manifest beside it, as the
    ingestion-mcp-minilm distribution does), or None: the export is then looked up in the cache."""
    path = model_dir / PACKAGED_DIR / "model.onnx"
    return path if path.is_file() and manifest_path(path).is_file() else None


def manifest_path(onnx_path: Path) -> Path:
    return onnx_path.with_name(MANIFEST_NAME)


def current_versions() -> dict[str, str]:
    import onnxruntime
    import tokenizers

    return {"onnxruntime": onnxruntime.__version__, "tokenizers": tokenizers.__version__}


def file_digest(path: Path) -> str:
    with path.open("rb") as stream:
        return hashlib.file_digest(stream, "sha256").hexdigest()


def load_manifest(onnx_path: Path, model_dir: Path) -> Manifest | None:
    """The manifest beside ``onnx_path`` if it still holds; None when there is none; Unverified when it is unusable."""
    path = manifest_path(onnx_path)
    if not path.is_file():
        return None
    try:
        manifest = Manifest.model_validate_json(path.read_bytes())
    except ValidationError as exc:
        first = exc.errors()[0]["msg"]
        raise Unverified(f"{path.name} is unreadable ({exc.error_count()} errors, first: {first})") from None
    if manifest.versions != (running := current_versions()):
        raise Unverified(f"{path.name} was verified with {manifest.versions}, this process runs {running}")
    tokenizer = model_dir / manifest.tokenizer_file
    if not tokenizer.is_file() or file_digest(tokenizer) != manifest.tokenizer_sha256:
        raise Unverified(f"{manifest.tokenizer_file} is missing or changed since {path.name} was written")
    if not onnx_path.is_file():
        raise Unverified(f"{onnx_path.name} is missing beside {path.name}")
    return manifest


class FileTokenizer:
    """The model's ``tokenizer.json`` on the tokenizers library, truncating and padding as the manifest says (as the
    Hugging Face tokenizer does when sentence-transformers calls it). Configured once, never changed: thread-safe."""

    def __init__(self, path: Path, manifest: Manifest) -> None:
        from tokenizers import Tokenizer

        self._tokenizer = Tokenizer.from_file(str(path))
        # The file may carry its own truncation and padding (the bundled one: 128 tokens); the model's win.
        self._tokenizer.enable_truncation(
            manifest.max_seq_length, strategy="longest_first", direction=manifest.truncation_side
        )
        self._tokenizer.enable_padding(**manifest.padding.model_dump())
        self._inputs = manifest.inputs

    def features(self, texts: list[str]) -> dict[str, np.ndarray]:
        encodings = self._tokenizer.encode_batch(texts)
        return {name: np.array([getattr(one, ENCODING_FIELDS[name]) for one in encodings], dtype=np.int64)
                for name in self._inputs}  # fmt: skip

    def lengths(self, texts: list[str]) -> np.ndarray:
        return self.features(texts)["attention_mask"].sum(axis=1)


class LightEmbedder(OnnxEncoder):
    """An embedder with OnnxEmbedder's interface and vectors, built from the ONNX file and the manifest alone."""

    path = "torch-free"

    def __init__(
        self, model_name: str, tokenizer: FileTokenizer, session: Session, manifest: Manifest, *, batch_size: int = 64
    ) -> None:
        self._tokenizer = tokenizer
        super().__init__(model_name, session, list(manifest.inputs), batch_size=batch_size)
        self.session_settings["fast_path"] = {"tokenize": True, "mean_pooling": True}  # what the check compared
        if self.dimension != manifest.dimension:
            raise Unverified(f"the graph gives {self.dimension} dimensions, the manifest says {manifest.dimension}")

    def _features(self, texts: list[str]) -> tuple[Any, dict[str, np.ndarray]]:
        feeds = self._tokenizer.features(texts)
        return feeds, feeds

    def _token_lengths(self, texts: list[str]) -> np.ndarray:
        return self._tokenizer.lengths(texts)


def open_light(
    name: str, model_dir: Path, cache_dir: Path | None, *, batch_size: int, threads: int, vectors: Vectors = "fp32"
) -> LightEmbedder | None:
    """The torch-free embedder when a manifest that still holds lies beside the cached ONNX file; None, with one
    log line saying why, when the full path must load the model (and then write the manifest). An int8 scheme
    (``vectors``) runs that variant of the file (int8.py; the manifest, checked on fp32, says how to feed and pool
    it)."""
    try:
        onnx_path = packaged_export(model_dir) or onnx_file(model_dir, cache_dir)
        # A packaged export was checked where it was built (its package pins what the manifest names); a cached one
        # is made again when another torch is installed here.
        if onnx_path.parent != model_dir / PACKAGED_DIR and (stale := stale_reason(onnx_path)) and onnx_path.is_file():
            raise Unverified(stale)
        manifest = load_manifest(onnx_path, model_dir)
        if manifest is None:
            log.info("embedding model %s has no %s yet: loading it with sentence-transformers", name, MANIFEST_NAME)
            return None
        tokenizer = FileTokenizer(model_dir / manifest.tokenizer_file, manifest)
        graph = onnx_path
        quantized = vectors != "fp32"
        if quantized:  # shipped beside a packaged export (no onnx needed), else made once in the cache
            cache = onnx_file(model_dir, cache_dir).parent
            graph = packaged_int8(onnx_path, vectors) or ensure_int8(onnx_path, cache, vectors)
        session = open_session(graph, threads, lanes=quantized)
        batch_size = INT8_BATCH if quantized else batch_size
        embedder = LightEmbedder(identity(name, vectors), tokenizer, session, manifest, batch_size=batch_size)
        embedder.precision = "int8" if quantized else "fp32"
    except Exception as exc:  # noqa: BLE001 - whatever is wrong with the cache, the full path still loads the model
        reason = str(exc).splitlines()[0] if str(exc) else ""
        log.warning("embedding model %s cannot start torch-free (%s: %s); loading it with sentence-transformers, "
                    "which checks it and rewrites %s", name, type(exc).__name__, reason, MANIFEST_NAME)  # fmt: skip
        return None
    log.info("embedding model %s starts torch-free from %s", name, onnx_path.parent.name)
    return embedder
