"""The int8 variants bench.experiments.int8 measures, each made offline from the gateway's fp32 ONNX export.

Every variant starts from the same file the gateway runs (the fused graph of onnx_export.py: one Attention op per
layer for Q, K and V, then three MatMuls: the attention output projection, the FFN's first and second layers) and
quantizes some of its MatMul/Attention weights to int8 with ONNX Runtime's own tools; nothing is downloaded.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

LAYERS = 6
Calibration = Callable[[], Iterator[dict[str, np.ndarray]]]  # fresh batches of graph inputs per call


def node_names(model_path: Path) -> dict[str, list[str]]:
    """The quantizable nodes by role: "qkv" (Attention), "attn_out", "ffn_in", "ffn_out"; each list in layer order."""
    import onnx

    graph = onnx.load(str(model_path), load_external_data=False).graph
    roles: dict[str, list[str]] = {"qkv": [], "attn_out": [], "ffn_in": [], "ffn_out": []}
    for node in graph.node:
        if node.op_type == "Attention":
            roles["qkv"].append(node.name)
        elif node.op_type == "MatMul":
            role = next((r for key, r in ROLE_OF_PATH.items() if key in node.name), None)
            if role:
                roles[role].append(node.name)
    return roles


ROLE_OF_PATH = {"/attention/output/dense/": "attn_out", "/intermediate/dense/": "ffn_in", "/output/dense/": "ffn_out"}


@dataclass(frozen=True)
class Scheme:
    """One way to quantize: dynamic (activation ranges per batch) or static (ranges calibrated on corpus text)."""

    name: str
    about: str
    static: bool = False
    per_channel: bool = False
    reduce_range: bool = False  # 7-bit weights: no int16 saturation in AVX2's u8s8 kernel (vpmaddubsw)
    unsigned_weights: bool = False  # u8u8: ONNX Runtime's saturation-free kernel on CPUs without VNNI
    ops: tuple[str, ...] = ("MatMul", "Attention")
    keep_fp32: Callable[[dict[str, list[str]]], list[str]] = field(default=lambda roles: [])
    quant_format: str = "QDQ"  # static only
    method: str = "MinMax"  # static only: MinMax, Entropy or Percentile
    only: Callable[[dict[str, list[str]]], list[str]] | None = None  # quantize these nodes and no other
    smooth: float | None = None  # SmoothQuant's alpha for the FFN-output MatMuls (calibrated on corpus text)

    def build(self, fp32: Path, target: Path, calibration: Calibration | None = None) -> Path:
        roles = node_names(fp32)
        excluded = self.keep_fp32(roles)
        if self.only is not None:
            chosen = set(self.only(roles))
            excluded = [n for names in roles.values() for n in names if n not in chosen]
        target.parent.mkdir(parents=True, exist_ok=True)
        source = fp32
        if self.smooth is not None:
            if calibration is None:
                raise ValueError(f"{self.name} smooths: it needs calibration batches")
            source = smoothed(fp32, target.with_suffix(".smooth.onnx"), calibration, roles["ffn_out"], self.smooth)
        previous = logging.root.manager.disable
        logging.disable(logging.WARNING)  # the quantizer logs every node it skips
        try:
            if self.static:
                _static(self, source, target, excluded, calibration)
            else:
                _dynamic(self, source, target, excluded)
        finally:
            logging.disable(previous)
            if source != fp32:
                source.unlink(missing_ok=True)
        return target


def smoothed(fp32: Path, target: Path, calibration: Calibration, nodes: list[str], alpha: float) -> Path:
    """SmoothQuant (Xiao et al. 2023) on ``nodes``: X W = (X / s)(s W) per input channel, s = max|X|^a / max|W|^(1-a),
    with max|X| measured on corpus text. The GELU output that feeds the FFN-output MatMul has a few channels far
    above the rest; a per-tensor int8 range sized for them leaves the others a handful of levels. Dividing them
    down (one Mul before the MatMul) and folding s into the weights' rows evens the range out before quantizing."""
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(str(fp32))
    by_name = {node.name: node for node in model.graph.node}
    inputs = [by_name[name].input[0] for name in nodes]
    key = (str(fp32), tuple(inputs))
    if key not in _PEAKS:  # the same calibration for every smoothed scheme of a run
        _PEAKS[key] = _peaks(fp32, inputs, calibration)
    peaks = _PEAKS[key]
    weights = {init.name: init for init in model.graph.initializer}
    for name, x, peak in zip(nodes, inputs, peaks, strict=True):
        node = by_name[name]
        w = numpy_helper.to_array(weights[node.input[1]])  # (in, out)
        scale = np.clip(peak**alpha / np.maximum(np.abs(w).max(axis=1), 1e-8) ** (1 - alpha), 1e-2, 1e3)
        weights[node.input[1]].CopyFrom(numpy_helper.from_array((w * scale[:, None]).astype(np.float32), node.input[1]))
        inverse = f"{name}/smooth_inverse"
        model.graph.initializer.append(numpy_helper.from_array((1 / scale).astype(np.float32), inverse))
        index = list(model.graph.node).index(node)
        model.graph.node.insert(index, helper.make_node("Mul", [x, inverse], [f"{x}/smoothed"], name=f"{name}/smooth"))
        node.input[0] = f"{x}/smoothed"
    onnx.save(model, str(target))
    return target


_PEAKS: dict[tuple[str, tuple[str, ...]], list[np.ndarray]] = {}


def _peaks(fp32: Path, inputs: list[str], calibration: Calibration) -> list[np.ndarray]:
    """max |x| per channel of each tensor in ``inputs``, over the real (unpadded) tokens of the calibration text."""
    import onnx
    import onnxruntime as ort
    from onnx import helper

    probe = onnx.load(str(fp32))
    probe.graph.output.extend(helper.make_tensor_value_info(x, onnx.TensorProto.FLOAT, None) for x in inputs)
    session = ort.InferenceSession(probe.SerializeToString(), providers=["CPUExecutionProvider"])
    peaks = [np.zeros(0, dtype=np.float32) for _ in inputs]
    for feeds in calibration():
        mask = feeds["attention_mask"].astype(bool)
        for i, value in enumerate(session.run(inputs, feeds)):
            peak = np.abs(value[mask]).max(axis=0)
            peaks[i] = peak if not peaks[i].size else np.maximum(peaks[i], peak)
    return peaks


def _dynamic(scheme: Scheme, fp32: Path, target: Path, excluded: list[str]) -> None:
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic  # type: ignore[import-untyped]  # onnxruntime ships no type hints

    quantize_dynamic(
        str(fp32), str(target), op_types_to_quantize=list(scheme.ops), per_channel=scheme.per_channel,
        reduce_range=scheme.reduce_range, nodes_to_exclude=excluded,
        weight_type=QuantType.QUInt8 if scheme.unsigned_weights else QuantType.QInt8,
        # Our export leaves some value types unset; the quantizer needs a default to type its new tensors.
        extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
    )  # fmt: skip


class _Reader:
    """onnxruntime's CalibrationDataReader protocol over the batches ``calibration`` yields."""

    def __init__(self, calibration: Calibration) -> None:
        self._batches = calibration()

    def get_next(self) -> dict[str, Any] | None:
        return next(self._batches, None)


def _static(scheme: Scheme, fp32: Path, target: Path, excluded: list[str], calibration: Calibration | None) -> None:
    import onnx
    from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_static

    if calibration is None:
        raise ValueError(f"{scheme.name} is static: it needs calibration batches")
    quantize_static(
        str(fp32), str(target), _Reader(calibration), quant_format=QuantFormat[scheme.quant_format],
        op_types_to_quantize=["MatMul"], per_channel=scheme.per_channel, reduce_range=scheme.reduce_range,
        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8, nodes_to_exclude=excluded,
        calibrate_method=CalibrationMethod[scheme.method],
        extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT, "CalibMovingAverage": False},
    )  # fmt: skip


def _pick(*roles: str, layers: tuple[int, ...] = tuple(range(LAYERS))) -> Callable[[dict[str, list[str]]], list[str]]:
    return lambda found: [found[role][i] for role in roles for i in layers if i < len(found[role])]


def schemes(sensitive: list[str] | None = None) -> dict[str, Scheme]:
    """Every scheme tried; ``sensitive`` (from the per-node screen, most harmful first) names the nodes that the
    'keep the sensitive ones' schemes leave in fp32."""
    worst = sensitive or []
    out = [
        Scheme("dyn-all", "dynamic, per-tensor weights, every MatMul + Attention (the issue's 2.07x baseline)"),
        Scheme("dyn-all-perchannel", "dynamic, per-channel weights, every MatMul + Attention", per_channel=True),
        Scheme("dyn-all-reducerange", "dynamic, 7-bit weights (reduce_range), every MatMul + Attention",
               reduce_range=True),
        Scheme("dyn-keep-ffn-out", "dynamic; the six FFN-output MatMuls in fp32", keep_fp32=_pick("ffn_out")),
        Scheme("dyn-keep-first-last", "dynamic; layers 0 and 5 entirely in fp32",
               keep_fp32=_pick("qkv", "attn_out", "ffn_in", "ffn_out", layers=(0, 5))),
        Scheme("static-qdq-minmax", "static QDQ, MatMuls, per-tensor, MinMax calibration on corpus text",
               static=True),
        Scheme("static-qdq-percentile-pc", "static QDQ, MatMuls, per-channel weights, Percentile (99.999) calibration",
               static=True, per_channel=True, method="Percentile"),
    ]  # fmt: skip
    smooth = "FFN-output inputs smoothed (SmoothQuant alpha {:g}, calibrated on corpus text)"
    out += [
        Scheme("dyn-smooth-0.75-perchannel", "dynamic, per-channel weights, every MatMul + Attention; "
               + smooth.format(0.75), per_channel=True, smooth=0.75),
        Scheme("dyn-smooth-0.9-perchannel", "dynamic, per-channel weights, every MatMul + Attention; "
               + smooth.format(0.9), per_channel=True, smooth=0.9),
        Scheme("dyn-smooth-0.75-perchannel-reducerange", "as dyn-smooth-0.75-perchannel, 7-bit weights",
               per_channel=True, smooth=0.75, reduce_range=True),
        Scheme("dyn-smooth-0.75-perchannel-u8u8", "as dyn-smooth-0.75-perchannel, uint8 weights (u8u8 kernel)",
               per_channel=True, smooth=0.75, unsigned_weights=True),
    ]  # fmt: skip
    for k in (1, 2, 4):
        if len(worst) >= k:
            chosen = worst[:k]
            out.append(Scheme(f"dyn-keep-worst-{k}", f"dynamic; the {k} most sensitive nodes in fp32: {chosen}",
                              keep_fp32=_fixed(chosen)))  # fmt: skip
    if worst:
        out.append(Scheme("dyn-keep-worst-1-perchannel", f"dynamic, per-channel weights; {worst[0]} in fp32",
                          per_channel=True, keep_fp32=_fixed(worst[:1])))  # fmt: skip
    return {scheme.name: scheme for scheme in out}


def _fixed(names: list[str]) -> Callable[[dict[str, list[str]]], list[str]]:
    return lambda found: names


def single_node(name: str) -> Scheme:
    """Only ``name`` in int8 (the per-node sensitivity screen)."""
    return Scheme(f"only:{name}", "one node alone in int8", only=lambda found: [name])
