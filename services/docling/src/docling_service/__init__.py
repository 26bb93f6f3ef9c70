"""docling-service: documents to Markdown with blocks, pages and exact character offsets."""

from importlib.metadata import PackageNotFoundError, version

try:  # the one version is VERSION at the repository root, read into the installed metadata at build time
    __version__ = version("ingestion-mcp-converter")
except PackageNotFoundError:  # run from a source tree without an install
    __version__ = "0+unknown"
