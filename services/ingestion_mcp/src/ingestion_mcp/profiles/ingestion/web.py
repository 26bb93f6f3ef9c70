"""Primary tool: ingest_from_url (fetched under the SSRF policy, routed by content type)."""

from __future__ import annotations

from typing import Annotated

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import Field

from ...ingest.pipeline import IngestOutcome
from ...state import AppState
from ...toolkit.annotations import FETCH
from ...toolkit.common import profile_tools
from .models import (
    ChunkingArg,
    CollectionArg,
    ForceArg,
    FormatArg,
    IngestOutput,
    MetadataArg,
    TagsArg,
    render_error,
)
from .tools import ingest_output, ingest_via_job

CONTENT_TYPES = {"pdf": "PDF", "docx": "DOCX", "pptx": "PPTX", "xlsx": "XLSX", "html": "HTML", "md": "Markdown",
                 "txt": "Text", "image": "Image"}  # fmt: skip


def register(server: MCPServer, state: AppState) -> None:
    tool = profile_tools(server, render_error)

    @tool(FETCH)
    async def ingest_from_url(
        url: Annotated[str, Field(min_length=8, max_length=2048, description="http(s) URL.")],
        ctx: Context,
        collection: CollectionArg = None,
        source: Annotated[str | None, Field(default=None, max_length=256)] = None,
        tags: TagsArg = None,
        chunking: ChunkingArg = "default",
        response_format: FormatArg = "concise",
        metadata: MetadataArg = None,
        force: ForceArg = False,
    ) -> Annotated[CallToolResult, IngestOutput]:
        """Fetch a web page or hosted document (PDF, DOCX, PPTX, XLSX, HTML, Markdown, text) and ingest it:
        HTML reduced to its main content, private addresses refused. Identified by its final URL."""
        params = {
            "url": url, "collection": state.collection(collection), "source": source, "tags": tags,
            "chunking": chunking, "metadata": metadata, "force": force,
        }  # fmt: skip

        def shape(outcome: IngestOutcome) -> IngestOutput:
            content_type = CONTENT_TYPES.get(outcome.file_type, outcome.file_type)
            return ingest_output(outcome, outcome.key, response_format, url=outcome.key, content_type=content_type)

        return await ingest_via_job(state, ctx, "ingest_from_url", params, url, shape)
