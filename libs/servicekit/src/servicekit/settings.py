"""Settings every service shares; each service subclasses with its own env prefix."""

from __future__ import annotations

from pydantic import AliasChoices, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


class ServiceSettings(BaseSettings):
    model_config = SettingsConfigDict(extra="ignore", env_file=None)

    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=1, le=65535)
    log_level: str = Field(default="INFO", pattern=r"^(DEBUG|INFO|WARNING|ERROR|CRITICAL)$")
    json_logs: bool = True
    # The plan's well-known name, shared by every service.
    auth_token: SecretStr | None = Field(default=None, validation_alias=AliasChoices("AUTH_TOKEN"))
    # Once the service has been quiet this many seconds after work, its free heap memory goes back to the
    # system (servicekit/memory.py, docs/memory.md); 0: never.
    idle_trim_s: float = Field(default=2.0, ge=0, le=3600)

    def token_value(self) -> str | None:
        return self.auth_token.get_secret_value() if self.auth_token else None
