"""ingestion-mcp: MCP tools over the docling, chunker and vector-gateway services."""
