"""docling-service: documents to Markdown with blocks, pages and exact character offsets."""

__version__ = "0.1.0"
