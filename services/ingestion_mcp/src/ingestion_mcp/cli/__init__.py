"""The three entry points, one module each: `ingestion-mcp` (server_command), `ingestion-mcp-worker`
(worker_command) and `ingestion-index` (index_command; what it does to a folder of notes: index, what it shows:
index_output)."""
