"""The embedding rate of the gateway's GPU path (EMBEDDING_ENGINE=auto runs torch on a GPU) for its model's
architecture, all-MiniLM-L6-v2 (BERT, 6 layers, 384 wide), on a CUDA machine (docs/embeddings.md).

The weights are random: the model file (91 MB) is more than travels to the device machine here, and the compute
does not depend on the weights' values. Texts: SciFact passages (title + text) tokenized by the model's
tokenizer.json, cut at 256 tokens, in length-sorted batches as the gateway sends them; fp32 and fp16 autocast.

    python bench/experiments/gpu_embed_rate.py FOLDER   # FOLDER holds corpus.jsonl, tokenizer.json and config.json
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any


def passages(folder: Path, count: int) -> list[str]:
    texts = []
    with (folder / "corpus.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            try:
                doc = json.loads(line)
            except ValueError:  # a cut last line
                break
            texts.append(f"{doc.get('title', '')}\n{doc['text']}")
    return texts[:count]


def main() -> None:
    import torch
    from tokenizers import Tokenizer
    from transformers import BertConfig, BertModel

    folder = Path(sys.argv[1])
    texts = passages(folder, 1000)
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.enable_truncation(256)
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
    config = BertConfig.from_json_file(str(folder / "config.json"))
    out: dict[str, Any] = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "texts": len(texts)}

    def embed(model: Any, batch: list[str], dtype: Any) -> Any:
        encoded = tokenizer.encode_batch(batch)
        ids = torch.tensor([e.ids for e in encoded], device="cuda")
        mask = torch.tensor([e.attention_mask for e in encoded], device="cuda")
        with torch.inference_mode(), torch.autocast("cuda", dtype=dtype, enabled=dtype != torch.float32):
            hidden = model(input_ids=ids, attention_mask=mask).last_hidden_state
            weights = mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * weights).sum(1) / weights.sum(1)
            return torch.nn.functional.normalize(pooled.float(), dim=-1).cpu()

    runs: dict[str, Any] = {}
    for name, dtype in (("fp32", torch.float32), ("fp16", torch.float16)):
        model: Any = BertModel(config)
        model = model.cuda().eval()
        for size in (64, 256):
            order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
            batches = [[texts[i] for i in order[k : k + size]] for k in range(0, len(texts), size)]
            for batch in batches[:2]:  # warm-up
                embed(model, batch, dtype)
            torch.cuda.synchronize()
            rates = []
            for _ in range(3):
                began = time.perf_counter()
                for batch in batches:
                    embed(model, batch, dtype)
                torch.cuda.synchronize()
                rates.append(len(texts) / (time.perf_counter() - began))
            runs[f"{name} batch {size}"] = {"texts_per_s": [round(x, 1) for x in rates],
                                            "median": round(statistics.median(rates), 1)}  # fmt: skip
            print(name, size, runs[f"{name} batch {size}"], flush=True)
    out["runs"] = runs
    (Path(os.environ.get("OUT", ".")) / "gpu_rate.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
