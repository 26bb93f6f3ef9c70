"""Settings of the MCP server: its own INGESTION_MCP_ names plus the plan's well-known ones."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal
from urllib.parse import urlsplit

from ingestion_contracts import DEFAULT_COLLECTION, check_collection_name
from ingestion_contracts.vectors import VectorMetric
from pydantic import AliasChoices, Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

# The tool profiles, one folder each under profiles/ (docs/profiles.md). Here, below the profiles, so that the
# settings can check INGESTION_MCP_PROFILES without importing any profile; profiles.NAMES is this tuple.
PROFILE_NAMES = ("ingestion", "mcpvectordb", "vector_store", "docs_server", "obsidian", "chatgpt")
# Asymmetric signature algorithms only: "none" and HS* would let anyone holding the public key sign.
ALGORITHMS = ("RS256", "ES256", "PS256", "EdDSA")
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


def _safe_fetch_url(url: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme == "https" or (parts.scheme == "http" and parts.hostname in LOOPBACK_HOSTS)


def _split(value: object) -> object:
    if isinstance(value, str):
        return [part.strip() for part in value.replace(";", ",").split(",") if part.strip()]
    return value


def default_data_dir() -> Path:
    """The data folder when INGESTION_MCP_DATA_DIR is unset: the platform's user data folder for the app
    (~/.local/share/ingestion-mcp on Linux, honouring XDG_DATA_HOME; ~/Library/Application Support/ingestion-mcp on
    macOS; %LOCALAPPDATA%\\ingestion-mcp on Windows). The one place that decides it."""
    from platformdirs import user_data_path

    return user_data_path("ingestion-mcp", appauthor=False)


class McpSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="INGESTION_MCP_", extra="ignore", populate_by_name=True)

    transport: Literal["stdio", "streamable-http"] = "stdio"
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=1, le=65535)
    allowed_origins: Annotated[list[str], NoDecode] = Field(default_factory=list)
    log_level: str = Field(default="WARNING", pattern=r"^(DEBUG|INFO|WARNING|ERROR|CRITICAL)$")
    # One JSON line per event on stderr (and the ready message as one): true; one text line per event (the ready
    # message as a block to read): false; unset: text when stderr is a terminal (a person), JSON otherwise (a client's
    # log file, a container's collector).
    json_logs: bool | None = None
    # Where the audit records go (docs/auth.md): "stderr", "off", or a file appended to; whatever log_level says.
    audit_log: str = Field(default="stderr", min_length=1)
    profiles: Annotated[list[str], NoDecode] = Field(default_factory=lambda: ["ingestion"])
    # Streamable HTTP keeps no session between requests, so any replica behind a round-robin balancer
    # answers any request, for clients on 2025-11-25 as on 2026-07-28 (which is stateless anyway).
    stateless_http: bool = True
    # A Redis (or Valkey) URL, e.g. redis://redis:6379/0: jobs go on the queue there and every replica sees
    # them; cancels of 2025-11-25 clients travel between replicas on it. None: everything in process.
    broker_url: str | None = None
    # Queued jobs (docs/jobs.md): a worker stops a job after job_timeout_s (failed); a worker that dies
    # mid-job loses its lease after job_lease_s and another runs the job again, up to job_max_tries times.
    job_timeout_s: float = Field(default=3600.0, ge=1)
    job_lease_s: float = Field(default=30.0, ge=1, le=600)
    job_max_tries: int = Field(default=3, ge=1, le=20)
    # On SIGTERM (a rollout) a worker stops taking jobs and lets running ones finish for this long; the rest go
    # back to the queue without spending a try. The pod's grace period must be longer (docs/jobs.md).
    job_grace_s: float = Field(default=25.0, ge=0, le=600)
    # Every broker call answers or fails within this (a frozen or unreachable Redis), then one retry.
    broker_timeout_s: float = Field(default=3.0, gt=0, le=60)
    # The one cap on what a caller sends: an HTTP request body, an ingest_text text (UTF-8), a job's
    # parameters on the queue. Larger content goes in a file (ingest_document).
    max_payload_mb: int = Field(default=16, ge=1, le=512)

    # Where files may be read from (ingest_document, sync_folder, ...). Everything else is refused. Unset: the roots the
    # MCP client declares (its `roots` capability, stdio only: access/roots.py); with neither, no folder at all.
    # Never the working directory: a client that starts the server from / would open the whole file system.
    allowed_roots: Annotated[list[Path], NoDecode] = Field(default_factory=list)
    # Embedded mode keeps its index, the folder records and downloaded files here. Unset: the platform's user data
    # folder (default_data_dir), never the working directory.
    data_dir: Path = Field(default_factory=lambda: default_data_dir())
    max_file_mb: int = Field(default=100, ge=1, le=2048)
    min_text_chars: int = Field(default=50, ge=1)
    # The Markdown one converted file may yield (a text handed over directly is capped by max_payload_mb).
    max_text_chars: int = Field(default=5_000_000, ge=1000)
    request_timeout_s: float = Field(default=300.0, gt=0)
    # A tool waits this long for its job before answering with a job id (agents time out at 60 s).
    sync_wait_s: float = Field(default=40.0, ge=0, le=55)
    job_retention_s: float = Field(default=3600.0, ge=60)
    max_concurrent_jobs: int = Field(default=2, ge=1, le=16)
    # Once the process has been quiet this many seconds after a job or a search burst, the memory it freed goes
    # back to the system (servicekit/memory.py; docs/memory.md); 0: never (what malloc keeps, it keeps).
    idle_trim_s: float = Field(default=2.0, ge=0, le=3600)
    # Watched folders (sync_folder watch=true, docs/sync.md). Off: watches are stored but nothing follows them.
    watch_enabled: bool = True
    # A batch of changes is synced after this much quiet (an editor's save storm is one batch) ...
    watch_step_ms: int = Field(default=300, ge=10, le=10_000)
    # ... and at the latest this long after its first change, even if changes keep coming.
    watch_debounce_ms: int = Field(default=1600, ge=50, le=60_000)
    # How often the watching process re-reads the watched folders (a watch set on another replica).
    watch_refresh_s: float = Field(default=5.0, gt=0, le=300)
    # With a broker, the watching process's lease: another replica takes over this long after it dies.
    watch_lease_s: float = Field(default=15.0, ge=3, le=600)
    # Poll instead of inotify (network file systems, some container mounts); None: watchfiles decides.
    watch_force_polling: bool | None = None
    # An answer larger than this many (estimated) tokens is truncated with a hint to narrow it.
    # At most Claude Code's cap on a tool answer (25,000 tokens): an answer the budget pages fits it (docs/clients.md).
    response_token_budget: int = Field(default=8000, ge=500, le=25_000)

    # Remote sources (ingest_from_url, fetch_file, fetch_repo): SSRF-safe by default. Private, loopback
    # and link-local addresses are refused unless a host or CIDR is listed here.
    source_allowed_hosts: Annotated[list[str], NoDecode] = Field(default_factory=list)
    source_max_download_bytes: int = Field(default=50 * 1024 * 1024, ge=1024)
    source_connect_timeout_s: float = Field(default=10.0, gt=0)
    source_read_timeout_s: float = Field(default=30.0, gt=0)
    source_total_timeout_s: float = Field(default=120.0, gt=0)
    source_max_redirects: int = Field(default=5, ge=0, le=20)
    repo_max_files: int = Field(default=1000, ge=1)
    repo_timeout_s: float = Field(default=300.0, gt=0)
    # fetch_file saves downloads here (never outside it); default: <data_dir>/documents.
    documents_dir: Path | None = None

    docling_service_url: str | None = Field(default=None, validation_alias=AliasChoices("DOCLING_SERVICE_URL"))
    chunker_service_url: str | None = Field(default=None, validation_alias=AliasChoices("CHUNKER_SERVICE_URL"))
    vector_gateway_url: str | None = Field(default=None, validation_alias=AliasChoices("VECTOR_GATEWAY_URL"))
    auth_token: SecretStr | None = Field(default=None, validation_alias=AliasChoices("AUTH_TOKEN"))
    # OAuth resource server mode (docs/auth.md): set the issuer to accept its signed access tokens (JWT)
    # instead of AUTH_TOKEN at the MCP endpoint; rights per collection come from the access policy file.
    oauth_issuer: str | None = None
    oauth_jwks_url: str | None = None
    oauth_jwks_file: Path | None = None
    # This server's resource URL (the tokens' audience), e.g. https://mcp.example.com/mcp.
    oauth_audience: str | None = None
    # The address clients reach this server at (behind a route or proxy), e.g. https://mcp.example.com: the links the
    # chatgpt profile gives to a document's console page. Default: the OAuth audience's origin, else http://host:port.
    public_url: str | None = Field(default=None, pattern=r"^https?://[^\s/]+(/[^\s]*)?$")
    oauth_algorithms: Annotated[list[str], NoDecode] = Field(default_factory=lambda: list(ALGORITHMS))
    oauth_leeway_s: float = Field(default=30.0, ge=0, le=300)
    # An unknown key id refetches the issuer's keys at most this often (key rotation).
    oauth_jwks_refetch_s: float = Field(default=60.0, ge=1)
    access_policy: Path | None = None
    # The operator console (docs/console.md): the key its session cookies are signed with (default: derived
    # from AUTH_TOKEN; set it in OAuth mode when several replicas serve), and how long a token-mode session lasts.
    console_secret: SecretStr | None = None
    console_session_s: int = Field(default=8 * 3600, ge=60, le=30 * 86400)
    default_collection: str = Field(
        default=DEFAULT_COLLECTION, validation_alias=AliasChoices("DEFAULT_COLLECTION", "default_collection")
    )

    # docs_server profile (docs-server-api.md): one collection; fetch_file / fetch_repo save under
    # documents_dir, in these folders (relative to it) unless fetch_file names its docFolder.
    docs_collection: str = "docs"
    docs_fetch_folder: str = "./docs/fetched"
    docs_repo_folder: str = "./docs/repos"
    # obsidian profile and the `ingestion-index` CLI: the vault (any folder of notes/documents),
    # its collection, and how many files the CLI sends to the services per batch.
    vault_path: Path | None = None
    obsidian_collection: str = "obsidian_notes"
    index_batch_size: int = Field(default=16, ge=1, le=256)
    # vector_store profile: the metric of stores created from now on (a store keeps the one it was made with).
    vector_store_metric: VectorMetric = "cosine"

    @field_validator(
        "allowed_origins", "profiles", "oauth_algorithms", "allowed_roots", "source_allowed_hosts", mode="before"
    )
    @classmethod
    def _comma_separated(cls, value: object) -> object:
        return _split(value)

    @field_validator("audit_log")
    @classmethod
    def _audit_sink(cls, value: str) -> str:
        if value in ("stderr", "off"):
            return value
        if not Path(value).parent.is_dir():
            raise ValueError(f"the audit log {value!r} is not stderr, off, or a file in an existing folder")
        return value

    @field_validator("profiles")
    @classmethod
    def _known_profiles(cls, names: list[str]) -> list[str]:
        unknown = [name for name in names if name not in PROFILE_NAMES]
        if unknown:
            raise ValueError(f"unknown tool profile {unknown[0]!r}; available: {', '.join(PROFILE_NAMES)}")
        return names

    @field_validator("oauth_algorithms")
    @classmethod
    def _asymmetric_algorithms(cls, names: list[str]) -> list[str]:
        refused = [name for name in names if name not in ALGORITHMS]
        if refused or not names:
            raise ValueError(
                f"algorithm {refused[0] if refused else '(none)'!r} is not accepted; use some of "
                f"{', '.join(ALGORITHMS)} (never 'none' nor HS*: a public key cannot sign)"
            )
        return names

    @field_validator("vector_store_metric", mode="before")
    @classmethod
    def _metric_name(cls, value: object) -> object:
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("default_collection")
    @classmethod
    def _valid_collection(cls, value: str) -> str:
        return check_collection_name(value)

    @field_validator("docs_collection", "obsidian_collection")
    @classmethod
    def _valid_profile_collection(cls, value: str) -> str:
        return check_collection_name(value)

    @field_validator("allowed_roots")
    @classmethod
    def _absolute_roots(cls, roots: list[Path]) -> list[Path]:
        resolved = [root.expanduser().resolve() for root in roots]
        if any(root == Path(root.anchor) for root in resolved):
            raise ValueError(
                "an allowed root is the file system's root (/), which would let any file be read; name the folders "
                "documents live in (e.g. INGESTION_MCP_ALLOWED_ROOTS=$HOME/Documents)"
            )
        return resolved

    @model_validator(mode="after")
    def _documents_in_the_data_folder(self) -> McpSettings:
        if self.documents_dir is None:
            self.documents_dir = self.data_dir / "documents"
        return self

    @model_validator(mode="after")
    def _urls_all_or_none(self) -> McpSettings:
        urls = {
            "DOCLING_SERVICE_URL": self.docling_service_url,
            "CHUNKER_SERVICE_URL": self.chunker_service_url,
            "VECTOR_GATEWAY_URL": self.vector_gateway_url,
        }
        missing = [name for name, url in urls.items() if not url]
        if 0 < len(missing) < len(urls):
            raise ValueError(
                "Set all three service URLs or none (none runs the services in-process); "
                f"missing: {', '.join(missing)}."
            )
        for name, url in urls.items():
            if url and not url.startswith(("http://", "https://")):
                raise ValueError(f"{name} must be an http(s) URL, got {url!r}.")
        if (
            self.transport == "streamable-http"
            and self.host not in ("127.0.0.1", "localhost", "::1")
            and not (self.auth_token or self.oauth_issuer)
        ):
            raise ValueError(
                "Refusing to serve MCP over HTTP on a non-loopback address without AUTH_TOKEN; "
                "set AUTH_TOKEN (or INGESTION_MCP_OAUTH_ISSUER) or bind INGESTION_MCP_HOST=127.0.0.1."
            )
        return self

    @model_validator(mode="after")
    def _oauth_complete(self) -> McpSettings:
        if not self.oauth_issuer:
            return self
        if bool(self.oauth_jwks_url) == bool(self.oauth_jwks_file):
            raise ValueError("With INGESTION_MCP_OAUTH_ISSUER set exactly one of OAUTH_JWKS_URL or OAUTH_JWKS_FILE.")
        if self.oauth_jwks_url and not _safe_fetch_url(self.oauth_jwks_url):
            raise ValueError("INGESTION_MCP_OAUTH_JWKS_URL must be https (plain http only on a loopback address).")
        if not self.oauth_audience:
            raise ValueError(
                "With INGESTION_MCP_OAUTH_ISSUER set INGESTION_MCP_OAUTH_AUDIENCE too: this server's resource URL, "
                "e.g. https://mcp.example.com/mcp (tokens must name it in 'aud')."
            )
        if self.access_policy is None:
            raise ValueError(
                "With INGESTION_MCP_OAUTH_ISSUER set INGESTION_MCP_ACCESS_POLICY too: the policy file that gives "
                "tokens their rights (docs/auth.md)."
            )
        return self

    @property
    def embedded(self) -> bool:
        return not self.vector_gateway_url

    @property
    def documents_folder(self) -> Path:
        """Where fetch_file saves downloads: documents_dir, by default in the data folder."""
        return (self.documents_dir or self.data_dir / "documents").expanduser().resolve()

    @property
    def max_payload_bytes(self) -> int:
        return self.max_payload_mb * 1024 * 1024

    @property
    def max_body_bytes(self) -> int:
        """The HTTP layer's outer bound: room for a payload at the cap in its JSON-RPC envelope (escaped text
        grows), so that the tool itself refuses an oversized text with an answer an MCP client can show."""
        return 2 * self.max_payload_bytes + 64 * 1024

    def token_value(self) -> str | None:
        return self.auth_token.get_secret_value() if self.auth_token else None

    @property
    def auth_mode(self) -> Literal["none", "token", "oauth"]:
        """OAuth when an issuer is set, else the static AUTH_TOKEN when set, else none (loopback only)."""
        return "oauth" if self.oauth_issuer else "token" if self.auth_token else "none"
