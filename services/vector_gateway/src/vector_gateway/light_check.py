"""The check that lets a model start without torch next time (light_embedder.py), run after a full load.

A model qualifies when its full load on ONNX Runtime takes both of onnx_embedder's shortcuts (the tokenizer called
directly, numpy mean pooling). Then the tokenizers library on the model's ``tokenizer.json``, configured from the
Hugging Face tokenizer, must give the direct call's very inputs on the probe texts (each alone and all together,
padded), and the torch-free embedder the full one's vectors (max abs difference below ``MAX_DIFF``); only then is
the manifest written, atomically, beside the ONNX file.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .light_embedder import (
    FileTokenizer,
    LightEmbedder,
    Manifest,
    Padding,
    Unverified,
    current_versions,
    file_digest,
    load_manifest,
    manifest_path,
)
from .onnx_embedder import PROBE_BATCHES, PROBES, OnnxEmbedder, direct_features
from .onnx_export import input_names, written_atomically

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

log = logging.getLogger("vector_gateway.light_check")

MAX_DIFF = 1e-6
_MORE_TEXTS = ["A second sentence, of another length, to batch with the probes.", "ÉTÉ à Zürich: 3 °C"]


def record_light_path(full: OnnxEmbedder, model: SentenceTransformer, model_dir: Path, onnx_path: Path) -> Path | None:
    """The manifest beside ``onnx_path``: kept while it holds, else checked and written anew. None (with a log
    line) when the torch-free path does not give this model's vectors: it then loads with sentence-transformers."""
    target = manifest_path(onnx_path)
    try:
        if load_manifest(onnx_path, model_dir) is not None:
            return target
    except Unverified:
        pass  # load_manifest's caller logged why; checked and rewritten below
    try:
        manifest = verified_manifest(full, model, model_dir)
    except Exception as exc:  # noqa: BLE001 - never lose the loaded ONNX engine over this check
        reason = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        log.info(
            "embedding model %s cannot start torch-free (%s); it loads with torch each time", full.model_name, reason
        )
        return None
    with written_atomically(target) as temporary:
        Path(temporary).write_text(manifest.model_dump_json(indent=2) + "\n", encoding="utf-8")
    log.info("embedding model %s checked for a torch-free start (%s written)", full.model_name, target.name)
    return target


def verified_manifest(full: OnnxEmbedder, model: SentenceTransformer, model_dir: Path) -> Manifest:
    """The manifest of ``model`` once the torch-free path is shown to give its inputs and vectors; else Unverified."""
    if not (full.fast.tokenize and full.fast.mean_pooling):
        raise Unverified(f"it needs sentence-transformers' own preprocessing or pooling ({full.fast})")
    manifest = describe(model, model_dir, full.dimension)
    tokenizer = FileTokenizer(model_dir / manifest.tokenizer_file, manifest)
    for batch in PROBE_BATCHES:
        want, got = direct_features(model, batch), tokenizer.features(batch)
        if any(want[name].shape != got[name].shape or not np.array_equal(want[name], got[name])
               for name in manifest.inputs):  # fmt: skip
            raise Unverified(f"the tokenizers library on {manifest.tokenizer_file} gives other inputs than the model")
    light = LightEmbedder(full.model_name, tokenizer, full.session, manifest, batch_size=full.batch_size)
    texts = PROBES + _MORE_TEXTS
    pairs = [(full.embed_documents(texts), light.embed_documents(texts))]
    pairs += [([full.embed_query(text)], [light.embed_query(text)]) for text in texts]
    diff = max(float(np.abs(np.asarray(a) - np.asarray(b)).max()) for a, b in pairs)
    if diff >= MAX_DIFF:
        raise Unverified(f"its vectors differ from the full path's by up to {diff:.2e}")
    return manifest


def describe(model: SentenceTransformer, model_dir: Path, dimension: int) -> Manifest:
    """What the torch-free path needs to know of ``model``, from its Hugging Face tokenizer and its own settings."""
    hf = model.tokenizer
    if not model.max_seq_length:
        raise Unverified("the model sets no max_seq_length")
    tokenizer = (Path(hf.name_or_path) / "tokenizer.json").resolve()
    if not tokenizer.is_file():
        raise Unverified(f"the model's tokenizer has no tokenizer.json in {hf.name_or_path}")
    padding = Padding(
        direction=hf.padding_side, pad_id=hf.pad_token_id, pad_type_id=hf.pad_token_type_id, pad_token=hf.pad_token
    )
    return Manifest(
        max_seq_length=model.max_seq_length,
        truncation_side=hf.truncation_side,
        padding=padding,
        inputs=tuple(input_names(model)),
        dimension=dimension,
        tokenizer_file=tokenizer.relative_to(model_dir.resolve()).as_posix(),
        tokenizer_sha256=file_digest(tokenizer),
        versions=current_versions(),
    )
