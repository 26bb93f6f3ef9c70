"""Once a full load has verified the model, the gateway's embedder starts without importing torch or
sentence-transformers and gives the full path's vectors; a damaged or stale manifest falls back to the full
path, with one log line, and is written anew."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from vector_gateway import embedder as embedder_module
from vector_gateway import onnx_bake, onnx_export
from vector_gateway.embedder import create_embedder, surely_onnx_on_cpu
from vector_gateway.light_embedder import MANIFEST_NAME
from vector_gateway.settings import GatewaySettings

# An accented text, an empty one, and one past the model's 256 tokens (cut where sentence-transformers cuts it).
LONG = " ".join(f"word{i}" for i in range(400))
TEXTS = ["Hello World", "Ünïcödé café, naïve façade — déjà vu (CO2) 12.5%", "", LONG, "a short query"]

# A fresh process: what it imported, which load it took, and its vectors.
START = """
import json, sys
from vector_gateway.embedder import create_embedder
from vector_gateway.settings import GatewaySettings
texts = json.loads(sys.argv[2])
embedder = create_embedder(GatewaySettings(milvus_uri="unused.db", embedding_cache_dir=sys.argv[1],
                                           embedding_precision="fp32"))
print(json.dumps({
    "imported": sorted(name for name in ("torch", "sentence_transformers") if name in sys.modules),
    "path": embedder.session_settings.get("path"), "dimension": embedder.dimension,
    "documents": embedder.embed_documents(texts), "queries": [embedder.embed_query(text) for text in texts],
}))
"""


def start(cache: Path) -> dict:
    done = subprocess.run([sys.executable, "-c", START, str(cache), json.dumps(TEXTS)], capture_output=True,
                          text=True, timeout=600, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def settings(**fields: object) -> GatewaySettings:
    return GatewaySettings(milvus_uri="unused.db", embedding_precision="fp32", **fields)


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("onnx-cache")


@pytest.fixture(scope="module")
def first_start(cache: Path) -> dict:
    """The first start on an empty cache: the full load, which exports the graph and writes the manifest."""
    return start(cache)


@pytest.fixture
def manifest(first_start: dict, cache: Path) -> Path:
    (path,) = cache.glob(f"*/{MANIFEST_NAME}")
    return path


@pytest.mark.timeout(900)
def test_the_second_start_imports_neither_torch_nor_sentence_transformers(first_start, cache) -> None:
    assert first_start["imported"] == ["sentence_transformers", "torch"]
    second = start(cache)
    assert (second["imported"], second["path"], second["dimension"]) == ([], "torch-free", 384)
    for kind in ("documents", "queries"):
        diff = np.abs(np.asarray(second[kind]) - np.asarray(first_start[kind])).max()
        assert diff < 1e-6, (kind, diff)


def _field(name: str, value: object) -> Callable[[str], str]:
    return lambda text: json.dumps(json.loads(text) | {name: value})


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda text: text[: len(text) // 2], id="cut-short"),
        pytest.param(lambda _: "not json", id="not-json"),
        pytest.param(_field("tokenizer_sha256", "0" * 64), id="other-tokenizer"),
        pytest.param(_field("versions", {"onnxruntime": "1.32.0", "tokenizers": "0.0.1"}), id="other-versions"),
        pytest.param(_field("format", 2), id="newer-format"),
    ],
)
def test_a_damaged_or_stale_manifest_falls_back_and_is_rewritten(manifest, cache, damage, caplog) -> None:
    good = json.loads(manifest.read_text())
    manifest.write_text(damage(manifest.read_text()))
    with caplog.at_level(logging.INFO):
        fallback = create_embedder(settings(embedding_cache_dir=cache))
    assert (fallback.engine, fallback.session_settings["path"]) == ("onnx", "sentence-transformers")
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "cannot start torch-free" in warnings[0].getMessage(), warnings
    assert json.loads(manifest.read_text()) == good  # checked and written anew
    assert create_embedder(settings(embedding_cache_dir=cache)).session_settings["path"] == "torch-free"


def test_the_bake_command_leaves_the_manifest(manifest, cache, capsys) -> None:
    good = manifest.read_text()
    manifest.unlink()
    onnx_bake.main(["--cache-dir", str(cache)])
    assert capsys.readouterr().out.strip() == str(manifest.with_name("model.onnx"))
    assert manifest.read_text() == good


@pytest.mark.parametrize(
    ("engine", "device", "gpu_possible", "expected"),
    [
        ("auto", "auto", False, True),
        ("auto", "auto", True, False),  # only torch can tell: the full path asks it
        ("auto", "cpu", True, True),
        ("onnx", "auto", True, True),
        ("torch", "cpu", False, False),
        ("auto", "cuda", False, False),
    ],
)
def test_the_torch_free_start_is_tried_only_where_the_engine_is_onnx_on_the_cpu(
    monkeypatch, engine, device, gpu_possible, expected
) -> None:
    monkeypatch.setattr(embedder_module, "gpu_possible", lambda: gpu_possible)
    assert surely_onnx_on_cpu(settings(embedding_engine=engine, embedding_device=device)) is expected


def test_a_gpu_is_ruled_out_by_a_cpu_build_of_torch_or_no_driver(monkeypatch, tmp_path) -> None:
    monkeypatch.setattr(embedder_module, "GPU_DEVICE_FILES", (str(tmp_path / "nvidiactl"),))
    monkeypatch.setattr(embedder_module.sys, "platform", "linux")
    versions = {"torch": "2.13.0+cpu"}
    monkeypatch.setattr(embedder_module.metadata, "version", lambda name: versions[name])
    assert not embedder_module.gpu_possible()
    versions["torch"] = "2.13.0"  # PyPI's build for Linux: CUDA, usable once a driver is there
    assert not embedder_module.gpu_possible()
    (tmp_path / "nvidiactl").touch()
    assert embedder_module.gpu_possible()


# A process where torch is not installed (the gateway image): imports of torch fail and its metadata is missing.
NO_TORCH = """
import importlib.abc, importlib.metadata as md, sys
class NoTorch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name in ("torch", "sentence_transformers") or name.startswith(("torch.", "sentence_transformers.")):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, NoTorch())
real_version = md.version
def version(name):
    if name == "torch":
        raise md.PackageNotFoundError(name)
    return real_version(name)
md.version = version
"""


def test_an_image_without_torch_starts_from_the_export_its_build_baked(first_start, cache) -> None:
    """The gateway image bakes the export with torch in a build stage and runs without it (issue 27). Before, the
    export's folder name was keyed on torch's installed version: without torch the key could not be made, the
    torch-free start failed and the full load then died on the missing torch."""
    done = subprocess.run([sys.executable, "-c", NO_TORCH + START, str(cache), json.dumps(TEXTS)],
                          capture_output=True, text=True, timeout=600, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    started = json.loads(done.stdout.splitlines()[-1])
    assert (started["imported"], started["path"]) == ([], "torch-free")
    assert started["documents"] == first_start["documents"]


def test_an_export_made_with_another_torch_is_made_again(manifest, cache, caplog) -> None:
    info = manifest.with_name(onnx_export.EXPORT_INFO)
    good = info.read_text()
    info.write_text(json.dumps({"torch": "0.0.1"}))
    try:
        with caplog.at_level(logging.INFO):
            embedder = create_embedder(settings(embedding_cache_dir=cache))
        assert embedder.session_settings["path"] == "sentence-transformers", "a stale export must not start torch-free"
        assert any("exported with torch 0.0.1" in r.getMessage() for r in caplog.records)
        assert json.loads(info.read_text()) == json.loads(good)  # made again with the torch installed here
    finally:
        info.write_text(good)


def test_without_torch_and_without_a_baked_export_the_error_says_what_to_do(tmp_path) -> None:
    done = subprocess.run([sys.executable, "-c", NO_TORCH + START, str(tmp_path / "empty"), json.dumps(TEXTS)],
                          capture_output=True, text=True, timeout=600, check=False)  # fmt: skip
    assert done.returncode != 0
    assert "torch is not installed" in done.stderr and "Rebuild the image" in done.stderr, done.stderr[-2000:]
