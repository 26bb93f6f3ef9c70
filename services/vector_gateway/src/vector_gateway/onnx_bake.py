"""Bake the embedding model's ONNX file and the manifest of its torch-free start, ahead of a start.

    python -m vector_gateway.onnx_bake [--model FOLDER] [--cache-dir DIR]   # image build, install

The export (onnx_export.py) and the check that the file alone reproduces the model (light_check.py) are
below this command: it puts them together, as the embedder does at a start (embedder.onnx_embedder), so
neither of them imports the other or the embedder back.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .embedder import load_sentence_transformer, resolve_model
from .light_check import record_light_path
from .onnx_embedder import OnnxEmbedder
from .onnx_export import default_cache_dir, ensure_onnx


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="vector_gateway.onnx_bake", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--model", default="", help="a model folder; default: the bundled all-MiniLM-L6-v2")
    parser.add_argument("--cache-dir", type=Path, default=None, help=f"default: {default_cache_dir()}")
    args = parser.parse_args(argv)
    name, model_dir = resolve_model(args.model)
    model = load_sentence_transformer(model_dir, "cpu")
    path = ensure_onnx(model, model_dir, args.cache_dir)
    print(path)
    # The manifest of the torch-free start, so that a baked image or a fresh install starts without torch.
    manifest = record_light_path(OnnxEmbedder(name, model, path), model, model_dir, path)
    if manifest is None:
        print("no torch-free start for this model (see the log); the gateway loads it with torch", file=sys.stderr)


if __name__ == "__main__":
    main()
