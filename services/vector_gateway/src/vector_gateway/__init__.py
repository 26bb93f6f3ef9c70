"""Vector gateway: embeddings + Milvus hybrid search behind a small HTTP API."""

from importlib.metadata import PackageNotFoundError, version

from servicekit.privacy import keep_local

keep_local()  # before any dependency loads: their telemetry off in every process (servicekit/privacy.py)

try:  # the one version is VERSION at the repository root, read into the installed metadata at build time
    __version__ = version("ingestion-mcp-gateway")
except PackageNotFoundError:  # run from a source tree without an install
    __version__ = "0+unknown"
