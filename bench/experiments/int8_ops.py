"""Where an int8 graph's time goes, by operator type: ONNX Runtime's own profiler over SciFact passages, each text
alone on one thread (as the gateway's int8 lanes run them), for fp32 and each int8 scheme of vector_gateway/int8.py
(docs/embeddings.md, "int8pc"). The older scheme spends 38% of its time in the six FFN-output MatMuls it keeps in
fp32; the current one quantizes five of them.

    python -m bench.experiments.int8_ops [--texts 150]

Each scheme's file is made from the gateway's cached fp32 export into a temporary folder (the onnx package, as the
gateway makes it); figures go to bench/experiments/results/int8_ops.json.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from ..data import DATASETS, load
from ..results_io import write_json
from .int8_eval import cpu, passage

OUT = Path(__file__).resolve().parent / "results" / "int8_ops.json"
MAX_TOKENS = 200  # the chunker's window: what an ingest embeds


def profile(graph: Path, ids: list[list[int]]) -> dict[str, Any]:
    """Milliseconds per operator type over ``ids``, each run alone on one intra-op thread."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = 1, 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.enable_profiling = True
    with tempfile.TemporaryDirectory() as folder:
        options.profile_file_prefix = str(Path(folder) / "profile")
        session = ort.InferenceSession(str(graph), options, providers=["CPUExecutionProvider"])
        for one in ids:
            tokens = np.asarray([one], dtype=np.int64)
            feeds = {
                "input_ids": tokens,
                "attention_mask": np.ones_like(tokens),
                "token_type_ids": np.zeros_like(tokens),
            }
            session.run(None, {i.name: feeds[i.name] for i in session.get_inputs()})
        events = json.loads(Path(session.end_profiling()).read_text())
    spent: Counter[str] = Counter()
    for event in events:
        if event.get("cat") == "Node" and event["name"].endswith("_kernel_time"):
            spent[event["args"]["op_name"]] += event["dur"]
    total = sum(spent.values())
    return {"total_ms": round(total / 1000, 1),
            "share": {op: round(us / total, 4) for op, us in spent.most_common()}}  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=150, help="the first N SciFact passages (title + text)")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    from tokenizers import Tokenizer
    from vector_gateway.embedder import bundled_model_dir
    from vector_gateway.int8 import SCHEMES, ensure_int8
    from vector_gateway.onnx_export import onnx_file

    tokenizer = Tokenizer.from_file(str(bundled_model_dir() / "tokenizer.json"))
    tokenizer.enable_truncation(MAX_TOKENS)
    tokenizer.no_padding()
    texts = [passage(doc) for doc in load(DATASETS["scifact"]).docs[: args.texts]]
    ids = [encoding.ids for encoding in tokenizer.encode_batch(texts)]
    export = onnx_file(bundled_model_dir())
    result: dict[str, Any] = {"texts": len(ids), "tokens": sum(map(len, ids)), "cpu": cpu(), "graphs": {}}
    with tempfile.TemporaryDirectory() as folder:
        graphs = {"fp32": export} | {name: ensure_int8(export, Path(folder), s.name) for name, s in SCHEMES.items()}
        for name, graph in graphs.items():
            result["graphs"][name] = profile(graph, ids)
            print(name, json.dumps(result["graphs"][name]), flush=True)
    write_json(args.out, result, indent=1)


if __name__ == "__main__":
    main()
