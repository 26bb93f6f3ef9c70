"""ingestion-mcp: MCP tools over the docling, chunker and vector-gateway services."""

__version__ = "0.1.0"
