"""Typed calls to the docling, chunker and vector-gateway services (backend.py: one method per endpoint) over
HTTP clients with retries (clients.py)."""

from .backend import Backend, PageProgress, seg

__all__ = ["Backend", "PageProgress", "seg"]
