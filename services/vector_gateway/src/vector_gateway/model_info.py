"""Which model the gateway embeds with and its dimension, read from the model folder without loading it.

A client that only needs to know (`ingestion-index status` on an empty index, a health view) should not
pay for loading the weights: sentence-transformers describes its pipeline in `modules.json`, and the
last module that sets a width (Pooling's `word_embedding_dimension`, a Dense layer's `out_features`)
gives the dimension of the vectors.
"""

from __future__ import annotations

import json
from pathlib import Path

from ingestion_contracts.gateway import EmbeddingModelInfo

from .embedder import resolve_model
from .settings import GatewaySettings


def describe(settings: GatewaySettings) -> EmbeddingModelInfo:
    name, folder = resolve_model(settings.embedding_model)
    return EmbeddingModelInfo(model=name, dimension=folder_dimension(folder))


def folder_dimension(folder: Path) -> int | None:
    """The output width a sentence-transformers folder declares; None when it does not say."""
    try:
        modules = json.loads((folder / "modules.json").read_text())
    except (OSError, ValueError):
        return None
    dimension = None
    for module in modules if isinstance(modules, list) else []:
        config = folder / str(module.get("path", "")) / "config.json"
        kind = str(module.get("type", ""))
        if not (kind.endswith(".Pooling") or kind.endswith(".Dense")) or not config.is_file():
            continue
        try:
            values = json.loads(config.read_text())
        except ValueError:
            continue
        width = values.get("out_features") if kind.endswith(".Dense") else values.get("word_embedding_dimension")
        dimension = int(width) if isinstance(width, int) else dimension
    return dimension
