"""Vector gateway: embeddings + Milvus hybrid search behind a small HTTP API."""

__version__ = "0.1.0"
