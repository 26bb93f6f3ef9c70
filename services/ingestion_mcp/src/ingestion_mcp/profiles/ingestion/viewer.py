"""An MCP Apps view (SEP-1865) of the cited page: hosts that render MCP Apps (Claude, ChatGPT, VS Code, Goose)
show it beside a search's answer; it pages through the document by calling get_document_pages with image='page'
through the host. The search tool names it in its ``_meta.ui.resourceUri``; a client without Apps ignores that key
and sees the same tool and the same answers.

The view is one static HTML file (no build step, no network: the host's default CSP allows inline script and data:
images, which is all it uses); it reads page pictures through the host, so the rights of the tool call apply."""

from __future__ import annotations

from importlib import resources

from mcp.server import MCPServer

from ...state import AppState

VIEWER_URI = "ui://ingestion-mcp/page-viewer"
APP_MIME_TYPE = "text/html;profile=mcp-app"
VIEWER_META = {"ui": {"resourceUri": VIEWER_URI}}


def viewer_html() -> str:
    return resources.files(__package__).joinpath("page_viewer.html").read_text(encoding="utf-8")


def register(server: MCPServer, state: AppState) -> None:
    @server.resource(
        VIEWER_URI,
        name="page_viewer",
        title="The cited page",
        description="Shows a search result's page with the passage marked, and pages through the document.",
        mime_type=APP_MIME_TYPE,
        meta={"ui": {"prefersBorder": True}},
    )
    def page_viewer() -> str:
        return viewer_html()
