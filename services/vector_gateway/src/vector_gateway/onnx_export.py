"""The ONNX file of a sentence-transformers model, made offline from its own folder and cached.

The transformer module alone is exported (``torch.onnx.export``, opset 17, dynamic batch and sequence
axes, traced with the eager attention so that ONNX Runtime's transformer optimizer recognises it and fuses
each layer's attention, layer norms and GELU into single kernels); tokenizer, pooling and normalisation stay
the model's own (see onnx_embedder.py). Before it is kept, the graph must reproduce torch's token embeddings
(cosine >= 0.9999); a model that does not is refused, and the gateway embeds with torch. The file is kept
under a key made of the model files' content and the torch, ONNX Runtime and exporter versions, and written
atomically, so a changed model or exporter never reuses a stale graph and concurrent starts never read a
half-written one. Nothing is downloaded. Baking it ahead of a start (an image build, an install):
``python -m vector_gateway.onnx_bake`` (onnx_bake.py).
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import tempfile
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

log = logging.getLogger("vector_gateway.onnx_export")

EXPORTER_VERSION = "2"  # bump when the export below changes: every cached file is remade
OPSET = 17
OUTPUT_NAME = "token_embeddings"
EXPORT_INFO = "export.json"  # beside model.onnx: the torch version it was made with
_SKIPPED = {"README.md", ".gitattributes"}  # files that do not change the graph
FUSED_MODEL_TYPES = {"bert", "distilbert", "roberta", "xlm-roberta", "mpnet", "electra"}
MIN_COSINE = 0.9999


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "vector-gateway" / "onnx"


def model_key(model_dir: Path) -> str:
    """A digest of every file of the model folder (names and content), ONNX Runtime's version and the exporter's.

    torch's version is not part of it: an image without torch must find the file its build exported (issue 27).
    The export records the torch it was made with (``export.json``), and a process that has another torch
    installed makes it again (``stale_reason``)."""
    files = sorted(p for p in model_dir.rglob("*") if p.is_file() and p.name not in _SKIPPED)
    stamps = tuple((str(path.relative_to(model_dir)), path.stat().st_size, path.stat().st_mtime_ns) for path in files)
    return _digest(model_dir, stamps)


@functools.cache
def _digest(model_dir: Path, stamps: tuple[tuple[str, int, int], ...]) -> str:
    """model_key's digest, once per process for files of these names, sizes and times (a start asks for it twice:
    ~0.15 s of reading each time)."""
    import onnxruntime

    versions = f"exporter={EXPORTER_VERSION};opset={OPSET};ort={onnxruntime.__version__}"
    digest = hashlib.sha256(versions.encode())
    for name, _, _ in stamps:
        digest.update(name.encode() + b"\0")
        with (model_dir / name).open("rb") as stream:
            digest.update(hashlib.file_digest(stream, "sha256").digest())
    return digest.hexdigest()[:24]


def onnx_file(model_dir: Path, cache_dir: Path | None = None) -> Path:
    return (cache_dir or default_cache_dir()) / f"{model_dir.name}-{model_key(model_dir)}" / "model.onnx"


def installed_torch() -> str | None:
    """torch's version from its installed metadata (the same string as ``torch.__version__``, local suffix included,
    e.g. 2.13.0+cpu), read without importing it; None when torch is not installed."""
    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:
        return None


def export_info_path(onnx_path: Path) -> Path:
    return onnx_path.with_name(EXPORT_INFO)


def stale_reason(onnx_path: Path) -> str | None:
    """Why the export at ``onnx_path`` must be made again, or None while it holds: it is missing, or the torch
    installed here is not the one it was made with. Without torch (a torch-free image) a present export holds."""
    if not onnx_path.is_file():
        return "no ONNX export yet"
    torch = installed_torch()
    if torch is None:
        return None
    try:
        made_with = json.loads(export_info_path(onnx_path).read_text(encoding="utf-8")).get("torch")
    except (OSError, ValueError):
        return f"{EXPORT_INFO} is missing or unreadable"
    return None if made_with == torch else f"exported with torch {made_with}, torch {torch} is installed"


def input_names(model: SentenceTransformer) -> list[str]:
    """The tensors the model's own preprocessing feeds its transformer (BERT: ids, mask, token types)."""
    features = model.preprocess(["probe"])
    return [name for name, value in features.items() if hasattr(value, "shape")]


class _Transformer:
    """Wraps the Hugging Face model so the export sees positional inputs and one output tensor."""

    @staticmethod
    def build(model: SentenceTransformer, names: list[str]) -> Any:
        import torch

        auto_model = hf_model(model)

        class Module(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.auto_model = auto_model

            def forward(self, *tensors: torch.Tensor) -> torch.Tensor:
                return self.auto_model(**dict(zip(names, tensors, strict=True))).last_hidden_state

        return Module().eval()


def hf_model(model: SentenceTransformer) -> Any:
    """The Hugging Face model inside the first module (torch types modules' attributes as Tensor | Module)."""
    return model[0].auto_model


def export(model: SentenceTransformer, target: Path) -> Path:
    """Write the model's transformer as ONNX to ``target`` (atomically: a temporary file, then a rename)."""
    if type(model[0]).__name__ != "Transformer" or not hasattr(model[0], "auto_model"):
        raise ValueError(f"the first module is {type(model[0]).__name__}, not a Hugging Face text transformer")
    with written_atomically(target) as temporary:
        trace(model, temporary)
        fuse(model, temporary)
        verify(model, temporary)
    with written_atomically(export_info_path(target)) as temporary:
        Path(temporary).write_text(json.dumps({"torch": installed_torch()}) + "\n", encoding="utf-8")
    return target


@contextmanager
def written_atomically(target: Path) -> Iterator[str]:
    """A temporary path beside ``target`` to write, renamed onto it when the block succeeds and removed when not:
    a reader sees the old file or the whole new one, never a part (concurrent starts, a crash mid-write)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=".export-", suffix=target.suffix, dir=target.parent)
    os.close(handle)
    try:
        yield temporary
        os.replace(temporary, target)
    finally:
        Path(temporary).unlink(missing_ok=True)


def trace(model: SentenceTransformer, path: str) -> None:
    import torch

    names = input_names(model)
    sample = model.preprocess(["an example sentence to trace the graph with", "and a second one"])
    auto_model = hf_model(model)
    attention = auto_model.config._attn_implementation
    try:
        # The eager attention traces to the MatMul/Softmax pattern that fuse() turns into one Attention op.
        auto_model.set_attn_implementation("eager")
        # The tracer warns about Python branches on shapes it folds; the dynamic axes keep the graph general.
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                _Transformer.build(model, names),
                tuple(sample[name].cpu() for name in names),
                path,
                input_names=names,
                output_names=[OUTPUT_NAME],
                dynamic_axes={name: {0: "batch", 1: "sequence"} for name in [*names, OUTPUT_NAME]},
                opset_version=OPSET,
                dynamo=False,  # the TorchScript exporter: no onnxscript, and the shapes stay dynamic
            )
    finally:
        auto_model.set_attn_implementation(attention)


def fuse(model: SentenceTransformer, path: str) -> None:
    """ONNX Runtime's transformer optimizer (part of onnxruntime) on BERT-like graphs; others stay as traced."""
    from onnxruntime.transformers import optimizer

    config = hf_model(model).config
    heads, hidden = getattr(config, "num_attention_heads", 0), getattr(config, "hidden_size", 0)
    if config.model_type not in FUSED_MODEL_TYPES or not heads or not hidden:
        return
    previous = logging.root.manager.disable
    logging.disable(logging.INFO)  # the optimizer logs each fusion and the temporary path at INFO
    try:
        fused = optimizer.optimize_model(path, model_type="bert", num_heads=heads, hidden_size=hidden, opt_level=0)
        fused.save_model_to_file(path)
    finally:
        logging.disable(previous)


def verify(model: SentenceTransformer, path: str) -> None:
    """The graph gives torch's token embeddings on sentences of several lengths, padding included."""
    import onnxruntime
    import torch

    names = input_names(model)
    texts = ["short", "a somewhat longer sentence, with punctuation and numbers 1234", "word " * 300]
    features = model.preprocess(texts)
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    got = torch.from_numpy(session.run([OUTPUT_NAME], {n: features[n].cpu().numpy() for n in names})[0])
    with torch.no_grad():
        want = hf_model(model)(**{n: features[n].to(model.device) for n in names}).last_hidden_state.cpu()
    everything = torch.ones(tuple(got.shape[:2]), dtype=torch.bool)
    mask = features["attention_mask"].bool() if "attention_mask" in features else everything
    cosine = torch.nn.functional.cosine_similarity(got[mask], want[mask], dim=-1).min().item()
    if cosine < MIN_COSINE:
        raise ValueError(f"the ONNX graph's token embeddings differ from torch's (cosine {cosine:.5f})")


def ensure_onnx(model: SentenceTransformer, model_dir: Path, cache_dir: Path | None = None) -> Path:
    """The cached ONNX file of ``model`` (loaded from ``model_dir``), exported first when missing."""
    target = onnx_file(model_dir, cache_dir)
    reason = stale_reason(target)
    if reason is None:
        return target
    log.info("exporting the embedding model to ONNX (%s; cached under %s)", reason, target.parent.name)
    return export(model, target)
