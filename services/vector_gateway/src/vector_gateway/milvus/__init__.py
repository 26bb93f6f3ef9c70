"""The DocumentIndex (index.py) on Milvus Lite or a Milvus server: the only package that imports pymilvus."""

from .store import MilvusStore

__all__ = ["MilvusStore"]
