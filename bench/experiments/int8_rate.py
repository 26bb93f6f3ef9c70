"""The gateway's own embedder, fp32 against its int8 schemes, each as the gateway runs it (fp32 in batches, int8
each text alone, in lanes): sequences/s over SciFact passages with the corpus' mixed lengths, all interleaved in
every round, in one process (docs/embeddings.md "The gateway's rate" and "int8pc"). The int8 schemes: the current
one (int8pc, what a new index gets) and the older one (int8, loaded as for an index that holds it). Run it on a
quiet machine
(python -m bench.quiet -- python -m bench.experiments.int8_rate); it writes
bench/experiments/results/int8_rate.json.

    python -m bench.experiments.int8_rate [--texts 400] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from ..data import DATASETS, load
from ..results_io import write_json
from .int8_eval import cpu, passage

OUT = Path(__file__).resolve().parent / "results" / "int8_rate.json"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=400, help="the first N SciFact passages (title + text)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    from vector_gateway.embedder import create_embedder
    from vector_gateway.int8 import CURRENT, identity
    from vector_gateway.settings import BUNDLED_MODEL_NAME, GatewaySettings

    texts = [passage(doc) for doc in load(DATASETS["scifact"]).docs[: args.texts]]
    older = [identity(BUNDLED_MODEL_NAME, "int8")]  # an index of the older scheme's vectors: the gateway runs that
    embedders = {
        "fp32": create_embedder(GatewaySettings(embedding_precision="fp32")),
        "int8": create_embedder(GatewaySettings(embedding_precision="int8"), stored=older),
        CURRENT: create_embedder(GatewaySettings(embedding_precision="int8")),
    }
    for embedder in embedders.values():
        embedder.embed_documents(texts[:16])  # warm-up
    rates: dict[str, list[float]] = {p: [] for p in embedders}
    for round_ in range(args.rounds):
        for precision, embedder in embedders.items():
            began = time.perf_counter()
            embedder.embed_documents(texts)
            rates[precision].append(round(len(texts) / (time.perf_counter() - began), 2))
            print(f"round {round_ + 1} {precision}: {rates[precision][-1]} seq/s", flush=True)
    median = {p: statistics.median(r) for p, r in rates.items()}
    result = {"texts": len(texts), "rounds": args.rounds, "cpu": cpu(), "seq_per_s": rates,
              "median_seq_per_s": median, "int8_over_fp32": round(median["int8"] / median["fp32"], 3),
              f"{CURRENT}_over_fp32": round(median[CURRENT] / median["fp32"], 3),
              f"{CURRENT}_over_int8": round(median[CURRENT] / median["int8"], 3),
              "models": {p: e.model_name for p, e in embedders.items()}}  # fmt: skip
    write_json(args.out, result, indent=1)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
