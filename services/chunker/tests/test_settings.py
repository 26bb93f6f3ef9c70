"""Settings: defaults from the bundled model, and clear refusals at start-up."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from chunker_service.main import run
from chunker_service.settings import ChunkerSettings, bundled_model_path
from chunker_service.tokens import TokenCounter, TokenizerLoadError
from pydantic import ValidationError


def test_defaults_come_from_the_bundled_model(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("CHUNKER_TOKENIZER_PATH", "CHUNKER_MODEL_MAX_TOKENS", "CHUNKER_PORT", "CHUNKER_MAX_TEXT_CHARS"):
        monkeypatch.delenv(name, raising=False)
    settings = ChunkerSettings()
    assert settings.port == 8002
    assert settings.tokenizer_path == bundled_model_path()
    assert (settings.tokenizer_name, settings.model_max_tokens) == ("all-MiniLM-L6-v2", 256)
    assert settings.max_text_chars == 20_000_000


def test_env_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHUNKER_PORT", "9100")
    monkeypatch.setenv("CHUNKER_MODEL_MAX_TOKENS", "512")
    monkeypatch.setenv("CHUNKER_MAX_TEXT_CHARS", "1000")
    monkeypatch.setenv("AUTH_TOKEN", "t0ken")
    settings = ChunkerSettings()
    assert (settings.port, settings.model_max_tokens, settings.max_text_chars) == (9100, 512, 1000)
    assert settings.token_value() == "t0ken"


def _copy_tokenizer(tmp_path: Path, folder: str, config: object | None) -> Path:
    model = tmp_path / folder
    model.mkdir()
    source = bundled_model_path()
    assert source is not None
    shutil.copy(source / "tokenizer.json", model / "tokenizer.json")
    if config is not None:
        (model / "sentence_bert_config.json").write_text(json.dumps(config))
    return model


def test_a_mounted_model_folder_gives_its_name_and_max_length(tmp_path: Path) -> None:
    model = _copy_tokenizer(tmp_path, "bge-small-en-v1.5", {"max_seq_length": 512})
    settings = ChunkerSettings(tokenizer_path=model)
    assert (settings.tokenizer_name, settings.model_max_tokens) == ("bge-small-en-v1.5", 512)
    file_only = ChunkerSettings(tokenizer_path=model / "tokenizer.json", tokenizer_name="bge")
    assert (file_only.tokenizer_name, file_only.model_max_tokens) == ("bge", 512)


def test_without_sentence_bert_config_the_limit_is_256(tmp_path: Path) -> None:
    model = _copy_tokenizer(tmp_path, "plain", None)
    assert ChunkerSettings(tokenizer_path=model).model_max_tokens == 256


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"tokenizer_path": "/nonexistent/model"}, "has no tokenizer.json"),
        ({"model_max_tokens": 0}, "greater than or equal to 1"),
        ({"max_text_chars": 30_000_000}, "less than or equal to 20000000"),
        ({"port": 0}, "greater than or equal to 1"),
        ({"max_concurrency": 0}, "greater than or equal to 1"),
    ],
)
def test_bad_values_are_refused(kwargs: dict, fragment: str) -> None:
    with pytest.raises(ValidationError, match=fragment):
        ChunkerSettings(**kwargs)


def test_a_broken_sentence_bert_config_is_named(tmp_path: Path) -> None:
    model = _copy_tokenizer(tmp_path, "broken", {"max_seq_length": "long"})
    with pytest.raises(ValidationError, match="set CHUNKER_MODEL_MAX_TOKENS"):
        ChunkerSettings(tokenizer_path=model)


def test_a_file_that_is_not_a_tokenizer_is_refused_when_loaded(tmp_path: Path) -> None:
    bogus = tmp_path / "tokenizer.json"
    bogus.write_text("{not json")
    with pytest.raises(TokenizerLoadError, match="Point CHUNKER_TOKENIZER_PATH at a Hugging Face tokenizer"):
        TokenCounter.from_path(bogus, "bogus")


def test_run_exits_with_a_readable_message(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("CHUNKER_TOKENIZER_PATH", "/nonexistent/model")
    with pytest.raises(SystemExit) as exit_info:
        run()
    message = capsys.readouterr().err
    assert exit_info.value.code == 2
    assert message.startswith("chunker-service: invalid configuration:") and "/nonexistent/model" in message


def test_run_names_the_environment_variable(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CHUNKER_MODEL_MAX_TOKENS", "-3")
    with pytest.raises(SystemExit):
        run()
    assert "CHUNKER_MODEL_MAX_TOKENS: Input should be greater than or equal to 1" in capsys.readouterr().err
