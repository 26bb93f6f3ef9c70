from pathlib import Path

import pytest
from ingestion_mcp.settings import McpSettings
from pydantic import ValidationError


def test_defaults_run_embedded_on_loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("DOCLING_SERVICE_URL", "CHUNKER_SERVICE_URL", "VECTOR_GATEWAY_URL", "AUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    settings = McpSettings()
    assert settings.embedded and settings.host == "127.0.0.1" and settings.default_collection == "rag_gateway"


def test_plan_names_are_read_from_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DOCLING_SERVICE_URL", "http://docling:8001")
    monkeypatch.setenv("CHUNKER_SERVICE_URL", "http://chunker:8002")
    monkeypatch.setenv("VECTOR_GATEWAY_URL", "http://gateway:8003")
    monkeypatch.setenv("DEFAULT_COLLECTION", "legal_docs")
    monkeypatch.setenv("INGESTION_MCP_ALLOWED_ROOTS", f"{tmp_path}, {tmp_path / 'b'}")
    settings = McpSettings()
    assert not settings.embedded and settings.default_collection == "legal_docs"
    assert settings.allowed_roots == [tmp_path.resolve(), (tmp_path / "b").resolve()]


def test_some_but_not_all_urls_is_refused_with_the_missing_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCLING_SERVICE_URL", "http://docling:8001")
    monkeypatch.delenv("CHUNKER_SERVICE_URL", raising=False)
    monkeypatch.delenv("VECTOR_GATEWAY_URL", raising=False)
    with pytest.raises(ValidationError, match="CHUNKER_SERVICE_URL, VECTOR_GATEWAY_URL"):
        McpSettings()


def test_public_http_without_token_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AUTH_TOKEN", raising=False)
    with pytest.raises(ValidationError, match="AUTH_TOKEN"):
        McpSettings(transport="streamable-http", host="0.0.0.0")
    monkeypatch.setenv("AUTH_TOKEN", "s3cret")
    assert McpSettings(transport="streamable-http", host="0.0.0.0").token_value() == "s3cret"


@pytest.mark.parametrize("name", ["has space", "-starts-with-dash", "semi;colon", "x" * 256, "..", "_reserved", "a/b"])
def test_invalid_default_collection_is_refused(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    monkeypatch.setenv("DEFAULT_COLLECTION", name)
    with pytest.raises(ValidationError, match="Invalid collection name"):
        McpSettings()


def test_vector_store_metric_is_checked_at_start_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("INGESTION_MCP_VECTOR_STORE_METRIC", raising=False)
    assert McpSettings().vector_store_metric == "cosine"
    monkeypatch.setenv("INGESTION_MCP_VECTOR_STORE_METRIC", " Euclidean ")
    assert McpSettings().vector_store_metric == "euclidean"
    monkeypatch.setenv("INGESTION_MCP_VECTOR_STORE_METRIC", "l2")
    with pytest.raises(ValidationError, match="'cosine', 'dot' or 'euclidean'"):
        McpSettings()


def test_downloads_go_to_the_data_folder_not_the_working_directory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    settings = McpSettings(data_dir=tmp_path / "data")
    assert settings.documents_folder == (tmp_path / "data" / "documents").resolve()
    chosen = McpSettings(data_dir=tmp_path / "data", documents_dir=tmp_path / "elsewhere")
    assert chosen.documents_folder == (tmp_path / "elsewhere").resolve()


def test_a_profile_clash_is_a_configuration_error_not_a_traceback(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    env = {**os.environ, "INGESTION_MCP_PROFILES": "obsidian,vector_store", "INGESTION_MCP_DATA_DIR": str(tmp_path)}
    command = [sys.executable, "-m", "ingestion_mcp.cli.server_command"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "both define the tool 'vector_search'" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("name", ["legal-docs.2026", "1starts_with_digit", "x" * 255])
def test_default_collection_takes_the_names_users_write(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    monkeypatch.setenv("DEFAULT_COLLECTION", name)
    assert McpSettings().default_collection == name


def test_idle_trim_defaults_on_and_zero_turns_it_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("INGESTION_MCP_IDLE_TRIM_S", raising=False)
    assert McpSettings().idle_trim_s == 2.0
    monkeypatch.setenv("INGESTION_MCP_IDLE_TRIM_S", "0")
    assert McpSettings().idle_trim_s == 0
    monkeypatch.setenv("INGESTION_MCP_IDLE_TRIM_S", "-1")
    with pytest.raises(ValidationError, match="idle_trim_s"):
        McpSettings()


def test_the_embedded_docling_worker_leaves_soon_unless_told_otherwise(monkeypatch: pytest.MonkeyPatch) -> None:
    from docling_service.settings import DoclingSettings
    from ingestion_mcp.embedded.services import EMBEDDED_WORKER_IDLE_S, embedded_docling_settings

    for name in ("DOCLING_WORKER_IDLE_S", "DOCLING_WORKER_WARM"):
        monkeypatch.delenv(name, raising=False)
    laptop = embedded_docling_settings(DoclingSettings())
    assert laptop.worker_idle_s == EMBEDDED_WORKER_IDLE_S < DoclingSettings().worker_idle_s
    assert laptop.worker_warm is False
    monkeypatch.setenv("DOCLING_WORKER_IDLE_S", "600")
    monkeypatch.setenv("DOCLING_WORKER_WARM", "true")
    chosen = embedded_docling_settings(DoclingSettings())
    assert chosen.worker_idle_s == 600 and chosen.worker_warm is True


def test_the_embedded_gateway_derives_model_files_in_the_data_folder(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Any model file the gateway makes (another model's ONNX export, its int8 variant) goes to <data>/models, not to
    ~/.cache (issue 50): nothing is written outside the data folder. A cache the user names is kept."""
    from ingestion_mcp.embedded.services import gateway_settings
    from vector_gateway.onnx_export import onnx_file

    monkeypatch.delenv("VECTOR_GATEWAY_EMBEDDING_CACHE_DIR", raising=False)
    settings = McpSettings.model_validate({"data_dir": tmp_path / "data"})
    cache = gateway_settings(settings).embedding_cache_dir
    assert cache == (tmp_path / "data" / "models").resolve()
    assert onnx_file(tmp_path / "my-model", cache).is_relative_to(tmp_path / "data")
    monkeypatch.setenv("VECTOR_GATEWAY_EMBEDDING_CACHE_DIR", str(tmp_path / "baked"))
    assert gateway_settings(settings).embedding_cache_dir == tmp_path / "baked"


def test_unset_folders_are_the_user_s_data_folder_and_no_allowed_root_wherever_it_starts(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Issue 48: from / the data folder was /data (a 34-line PermissionError) and the allowed root was / itself."""
    for name in ("INGESTION_MCP_DATA_DIR", "INGESTION_MCP_ALLOWED_ROOTS", "XDG_DATA_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir("/")
    settings = McpSettings()
    assert settings.data_dir == tmp_path / ".local/share/ingestion-mcp" and settings.allowed_roots == []
    monkeypatch.setenv("INGESTION_MCP_ALLOWED_ROOTS", "/")
    with pytest.raises(ValidationError, match="file system's root"):
        McpSettings()


def test_a_data_folder_that_cannot_be_written_is_one_line(tmp_path: Path) -> None:
    from ingestion_mcp.cli.server_command import data_folder_problem

    (tmp_path / "file").write_text("in the way")
    problem = data_folder_problem(McpSettings(data_dir=tmp_path / "file" / "data"))
    assert problem is not None and "\n" not in problem and "INGESTION_MCP_DATA_DIR" in problem
    assert data_folder_problem(McpSettings(data_dir=tmp_path / "fine")) is None
