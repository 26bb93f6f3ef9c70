"""The tool hints every profile uses, each defined once (MCP ToolAnnotations).

open_world_hint is true only where a tool reaches past this server's own index (the web, a git host).
"""

from __future__ import annotations

from mcp.types import ToolAnnotations

# Reads the index; changes nothing.
READ = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
# Adds or updates content; the same call again changes nothing (unchanged content is skipped by hash).
WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
# Makes something new that a second call refuses (it exists by then).
CREATE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
# Removes content for good; removing it again changes nothing more.
REMOVE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False)
# Stops background work (nothing stored is removed).
CANCEL = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
# Fetches from the web and indexes it: open world; idempotent, the same content is skipped by hash.
FETCH = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=True)
# Fetches from the web and saves the file on disk before indexing it (docs_server's fetch_file / fetch_repo):
# a file saved earlier under that name may be overwritten, and each call starts a new download job.
FETCH_AND_SAVE = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=True
)

# Claude Code cuts a tool's answer past 25,000 tokens unless the tool raises its own cap in `_meta` with this key
# (characters). Answers the response budget pages (INGESTION_MCP_RESPONSE_TOKEN_BUDGET, at most 25,000 tokens) need
# nothing; a tool whose spec answers a whole document or caller-sized data at once says how large it may be.
MAX_RESULT_KEY = "anthropic/maxResultSizeChars"
CLAUDE_RESULT_TOKENS = 25_000
LARGE_RESULT = {MAX_RESULT_KEY: 500_000}
