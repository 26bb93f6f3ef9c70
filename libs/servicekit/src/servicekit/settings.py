"""Settings every service shares; each service subclasses with its own env prefix."""

from __future__ import annotations

import sys
from typing import Any, TypeVar

from pydantic import AliasChoices, Field, SecretStr, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

S = TypeVar("S", bound=BaseSettings)
EXIT_CONFIG = 2  # what every entry point exits with on a configuration it refuses


class ServiceSettings(BaseSettings):
    model_config = SettingsConfigDict(extra="ignore", env_file=None)

    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=1, le=65535)
    log_level: str = Field(default="INFO", pattern=r"^(DEBUG|INFO|WARNING|ERROR|CRITICAL)$")
    # JSON log lines (true), text lines (false), or unset: text when stderr is a terminal, JSON otherwise.
    json_logs: bool | None = None
    # The plan's well-known name, shared by every service.
    auth_token: SecretStr | None = Field(default=None, validation_alias=AliasChoices("AUTH_TOKEN"))
    # Once the service has been quiet this many seconds after work, its free heap memory goes back to the
    # system (servicekit/memory.py, docs/memory.md); 0: never.
    idle_trim_s: float = Field(default=2.0, ge=0, le=3600)

    def token_value(self) -> str | None:
        return self.auth_token.get_secret_value() if self.auth_token else None


def settings_or_exit(kind: type[S], program: str, **overrides: Any) -> S:
    """The settings, or one line on stderr naming each refused environment variable and why, then exit 2.

    Every entry point starts with it (the three services, ingestion-mcp, its worker and ingestion-index), so a bad
    variable reads the same everywhere: ``chunker-service: invalid configuration: CHUNKER_PORT: ...``."""
    try:
        return kind(**overrides)
    except ValidationError as exc:
        problems = "; ".join(f"{env_name(kind, tuple(e['loc']))}: {e['msg']}" for e in exc.errors())
        print(f"{program}: invalid configuration: {problems}", file=sys.stderr)
        raise SystemExit(EXIT_CONFIG) from None


def env_name(kind: type[BaseSettings], loc: tuple[int | str, ...]) -> str:
    """The environment variable a refused field is read from: its alias (AUTH_TOKEN, DOCLING_SERVICE_URL) or the
    class's prefix and the field's name; a check of several fields together is "settings"."""
    field = kind.model_fields.get(str(loc[0])) if loc else None
    if field is None:
        return "settings"
    alias = field.validation_alias
    if isinstance(alias, AliasChoices) and isinstance(alias.choices[0], str):
        return alias.choices[0]
    if isinstance(alias, str):
        return alias
    prefix = str(kind.model_config.get("env_prefix") or "")
    return f"{prefix}{loc[0]}".upper() + "".join(f"[{part}]" for part in loc[1:])
