"""Vector gateway: embeddings + Milvus hybrid search behind a small HTTP API."""

from importlib.metadata import PackageNotFoundError, version

try:  # the one version is VERSION at the repository root, read into the installed metadata at build time
    __version__ = version("ingestion-mcp-gateway")
except PackageNotFoundError:  # run from a source tree without an install
    __version__ = "0+unknown"
