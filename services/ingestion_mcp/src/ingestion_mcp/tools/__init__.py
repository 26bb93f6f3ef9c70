"""MCP tool profiles. Each is a thin layer over the same core (pipeline + backend)."""
