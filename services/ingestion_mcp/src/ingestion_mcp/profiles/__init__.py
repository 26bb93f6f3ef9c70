"""The tool profiles: one folder each (its `PROFILE` record, tools and models), registered by name here.

Adding a profile is its folder plus its name in NAMES (docs/profiles.md). A profile is imported only
when it is served (record.load). This module imports nothing: the settings read NAMES from it.
"""

NAMES = ("ingestion", "mcpvectordb", "vector_store", "docs_server", "obsidian", "chatgpt")
