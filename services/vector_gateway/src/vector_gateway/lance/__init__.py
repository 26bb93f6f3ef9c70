"""The DocumentIndex (index.py) on LanceDB tables in a folder: the only package that imports lancedb."""

from .store import LanceStore

__all__ = ["LanceStore"]
