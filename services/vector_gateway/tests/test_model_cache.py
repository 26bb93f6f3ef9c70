"""The model files the gateway derives live in its data folder (issue 50, point 2), run on its own too.

A gateway started without VECTOR_GATEWAY_EMBEDDING_CACHE_DIR keeps the ONNX export it makes of a model (and its int8
variant) in models/ beside its index; it used the user's cache (~/.cache/vector-gateway/onnx), where a first start
with an empty data folder wrote a 90 MB export. Here the precision is forced to fp32 (the path of a CPU without int8
dot products) and HOME is empty: the gateway finds the development model's export in its data folder (copied there,
as its own first start would have left it) and starts torch-free from it, and writes nothing in HOME. On the code
before, it looked in HOME's cache, found nothing, and exported the model there again.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from vector_gateway.embedder import bundled_model_dir, create_embedder
from vector_gateway.onnx_export import onnx_file
from vector_gateway.settings import GatewaySettings


@pytest.mark.parametrize("engine", ["lance", "milvus"])
def test_derived_model_files_default_to_the_data_folder(
    engine: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("VECTOR_GATEWAY_EMBEDDING_CACHE_DIR", raising=False)
    data = tmp_path / "data"
    if engine == "lance":
        settings = GatewaySettings(lance_uri=str(data / "lance"))
    else:  # a Milvus Lite file: its folder
        settings = GatewaySettings(index_engine="milvus", milvus_uri=str(data / "milvus.db"))
    assert settings.model_cache_dir == data / "models"
    monkeypatch.setenv("VECTOR_GATEWAY_EMBEDDING_CACHE_DIR", str(tmp_path / "baked"))
    assert GatewaySettings().model_cache_dir == tmp_path / "baked"  # the setting still says otherwise


def test_a_first_start_reads_and_writes_its_model_files_in_the_data_folder_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    baked = os.environ.get("VECTOR_GATEWAY_EMBEDDING_CACHE_DIR")  # `make install`'s export (the root conftest)
    model = bundled_model_dir()
    export = onnx_file(model, Path(baked)).parent if baked else None
    if export is None or not (export / "light.json").is_file():
        pytest.skip("no baked export of the development model: run `make install`")
    data, home = tmp_path / "data", tmp_path / "home"
    shutil.copytree(export, data / "models" / export.name)  # what its own first start leaves there
    home.mkdir()
    monkeypatch.delenv("VECTOR_GATEWAY_EMBEDDING_CACHE_DIR")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    settings = GatewaySettings(lance_uri=str(data / "lance"), embedding_precision="fp32")
    embedder = create_embedder(settings)
    path = getattr(embedder, "session_settings", {}).get("path")
    assert path == "torch-free", path  # found in data/models, not exported again
    assert getattr(embedder, "precision", "fp32") == "fp32"
    assert len(embedder.embed_documents(["a first start with an empty HOME"])[0]) == 384
    assert list(home.rglob("*")) == []  # nothing derived, nothing written outside the data folder
