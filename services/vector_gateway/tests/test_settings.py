"""Settings: defaults from the brief, and bad or conflicting values refused at start-up."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError
from vector_gateway.embedder import resolve_model
from vector_gateway.settings import BUNDLED_MODEL_NAME, GatewaySettings


def test_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("VECTOR_GATEWAY_MILVUS_URI", "VECTOR_GATEWAY_PORT", "VECTOR_GATEWAY_EMBEDDING_MODEL"):
        monkeypatch.delenv(name, raising=False)
    settings = GatewaySettings()
    assert (settings.port, settings.milvus_uri, settings.embedding_batch_size) == (8003, "./data/milvus.db", 64)
    assert (settings.rrf_k, settings.dense_index, settings.embedding_device) == (60, "HNSW", "auto")
    assert settings.load_model_at_startup and settings.should_flush and not settings.uses_server


def test_environment_prefix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VECTOR_GATEWAY_MILVUS_URI", "http://milvus:19530")
    monkeypatch.setenv("VECTOR_GATEWAY_MILVUS_TOKEN", "root:Milvus")
    monkeypatch.setenv("VECTOR_GATEWAY_DENSE_INDEX", "IVF_FLAT")
    settings = GatewaySettings()
    assert settings.uses_server and not settings.should_flush
    assert settings.token_for_milvus() == "root:Milvus"
    assert "Milvus" not in repr(settings)  # the token is a secret


def test_token_with_lite_is_a_conflict() -> None:
    with pytest.raises(ValidationError, match="Lite has no authentication"):
        GatewaySettings(milvus_uri="./x.db", milvus_token="t")


@pytest.mark.parametrize("uri", ["ftp://host/x", "./data/milvus", "grpc:/bad"])
def test_bad_uris_are_refused(uri: str) -> None:
    with pytest.raises(ValidationError, match="VECTOR_GATEWAY_MILVUS_URI"):
        GatewaySettings(milvus_uri=uri)


def test_model_that_is_not_a_folder_is_refused() -> None:
    with pytest.raises(ValidationError, match="not a local folder"):
        GatewaySettings(milvus_uri="x.db", embedding_model="BAAI/bge-small-en-v1.5")


@pytest.mark.parametrize("name", ["", "all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"])
def test_bundled_names_resolve_to_the_packaged_model(name: str) -> None:
    reported, path = resolve_model(name)
    assert reported == BUNDLED_MODEL_NAME
    assert (path / "config.json").is_file()


def test_local_folder_is_used_as_is(tmp_path: Path) -> None:
    assert resolve_model(str(tmp_path)) == (tmp_path.name, tmp_path)
    assert GatewaySettings(milvus_uri="x.db", embedding_model=str(tmp_path)).embedding_model == str(tmp_path)


@pytest.mark.parametrize("field", [{"embedding_device": "tpu"}, {"dense_index": "DISKANN"}, {"rrf_k": 0}])
def test_out_of_range_values_are_refused(field: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        GatewaySettings(milvus_uri="x.db", **field)


def test_embedding_draws_no_progress_bar_when_services_log_at_info(embedder, capfd: pytest.CaptureFixture[str]) -> None:
    import logging

    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.INFO)  # what every service runs at; sentence-transformers then shows tqdm bars
    try:
        capfd.readouterr()
        assert len(embedder.embed_query("a search query")) == embedder.dimension
        assert len(embedder.embed_documents(["one passage", "another passage"])) == 2
    finally:
        root.setLevel(level)
    assert "Batches" not in capfd.readouterr().err


@pytest.mark.parametrize(
    ("gpu", "requested", "expected"),
    [(True, "auto", "cuda"), (False, "auto", "cpu"), (True, "cuda:1", "cuda:1"), (False, "cpu", "cpu")],
)
def test_the_embedder_runs_on_a_gpu_when_torch_sees_one(
    monkeypatch: pytest.MonkeyPatch, gpu: bool, requested: str, expected: str
) -> None:
    import torch
    from vector_gateway.embedder import resolve_device

    # No GPU on the CI machines: what torch reports is the one thing faked here.
    monkeypatch.setattr(torch.cuda, "is_available", lambda: gpu)
    assert resolve_device(requested) == expected


def test_asking_for_cuda_without_a_gpu_says_what_to_do(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch
    from vector_gateway.embedder import resolve_device

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(RuntimeError, match=r"torch sees no CUDA device.*Use 'auto' or 'cpu'"):
        resolve_device("cuda")


def test_the_broker_url_is_a_redis_url_and_a_secret() -> None:
    settings = GatewaySettings(milvus_uri="./x.db", broker_url="redis://:hunter2@redis:6379/0")
    assert settings.broker_url is not None and settings.broker_url.get_secret_value().endswith("@redis:6379/0")
    assert "hunter2" not in repr(settings)
    assert GatewaySettings(milvus_uri="./x.db", broker_url="  ").broker_url is None
    with pytest.raises(ValidationError, match="VECTOR_GATEWAY_BROKER_URL must be a Redis URL"):
        GatewaySettings(milvus_uri="./x.db", broker_url="http://redis:6379")
