"""ChatGPT's connector contract (connectors and deep research without developer mode): `search` and `fetch`.

ChatGPT uses exactly these two tools and ignores the rest; both answer one text content item holding JSON
(docs/clients.md, "ChatGPT"). Its `search` clashes with the ingestion and mcpvectordb profiles' `search`: served
with either, the server refuses to start; it combines with vector_store, docs_server and obsidian.
"""

from __future__ import annotations

from functools import partial

from ...toolkit.common import error_result
from ..record import Profile
from .tools import register, render_error

PROFILE = Profile("chatgpt", register, partial(error_result, render_error))
