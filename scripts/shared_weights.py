"""The model distribution's two graphs, the fp32 export and its int8 variant, with one weights file between them.

The int8 variant (vector_gateway/int8.py's current scheme, int8pc) keeps 50 of the fp32 export's 90 MB as they are:
the word embeddings, the first layer's FFN-output MatMul the scheme leaves in fp32, the layer norms and biases. Stored
once, in ``model.weights``, and referenced by both graphs as ONNX external data (a file name, an offset, a length), the
wheel is 88 MiB instead of ~130: PyPI refuses a file over 100 MiB unless the project's limit is raised, and the
install is 50 MB smaller. ONNX
Runtime reads external data beside the graph by itself: the gateway opens either graph as before.

scripts/build_dist.py calls ``share_weights`` on the staged files, then ``same_outputs`` on each graph against its
original: the rewritten graphs must give the very same numbers (they hold the same tensors), or the build stops.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

WEIGHTS = "model.weights"
ALIGN = 4096  # each tensor on a page boundary, where ONNX Runtime may map it rather than copy it
SMALL = 1024  # bytes: a tensor below this stays inside its graph (biases and scales: not worth a reference)


def _raw(tensor: Any) -> bytes:
    from onnx import numpy_helper

    return bytes(tensor.raw_data) if tensor.raw_data else numpy_helper.to_array(tensor).tobytes()


def _refer(tensor: Any, offset: int, length: int) -> None:
    """Make ``tensor`` point at [offset, offset + length) of the weights file instead of holding its bytes."""
    import onnx

    for field in ("raw_data", "float_data", "int32_data", "int64_data", "double_data"):
        tensor.ClearField(field)
    tensor.data_location = onnx.TensorProto.EXTERNAL
    del tensor.external_data[:]
    for key, value in (("location", WEIGHTS), ("offset", str(offset)), ("length", str(length))):
        entry = tensor.external_data.add()
        entry.key, entry.value = key, value


def share_weights(fp32_path: Path, int8_path: Path) -> Path:
    """Rewrite both graphs in place so that their tensors of the same name and bytes live once, in ``model.weights``
    beside them (every other tensor of the fp32 graph too); returns the weights file."""
    import onnx

    fp32, int8 = onnx.load(str(fp32_path)), onnx.load(str(int8_path))
    placed: dict[str, tuple[int, int, bytes]] = {}
    weights = fp32_path.with_name(WEIGHTS)
    with weights.open("wb") as out:
        for tensor in fp32.graph.initializer:
            data = _raw(tensor)
            if len(data) < SMALL:
                continue
            offset = out.tell() + (-out.tell() % ALIGN)
            out.seek(offset)
            out.write(data)
            placed[tensor.name] = (offset, len(data), data)
            _refer(tensor, offset, len(data))
    for tensor in int8.graph.initializer:
        hit = placed.get(tensor.name)
        if hit is not None and _raw(tensor) == hit[2]:
            _refer(tensor, hit[0], hit[1])
    onnx.save(fp32, str(fp32_path))
    onnx.save(int8, str(int8_path))
    return weights


def _outputs(path: Path, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    names = {i.name for i in session.get_inputs()}
    return list(session.run(None, {k: v for k, v in feeds.items() if k in names}))


def same_outputs(original: Path, rewritten: Path) -> bool:
    """Whether the two graphs give identical outputs on a batch of token ids (one padded)."""
    rng = np.random.default_rng(7)
    ids = rng.integers(1000, 29000, size=(2, 24), dtype=np.int64)
    mask = np.ones_like(ids)
    mask[1, 16:] = 0
    feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
    before, after = _outputs(original, feeds), _outputs(rewritten, feeds)
    return len(before) == len(after) and all(np.array_equal(a, b) for a, b in zip(before, after, strict=True))
