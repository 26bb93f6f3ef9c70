"""ChatGPT's `search(query)` and `fetch(id)`, each answering one text content item of JSON, within ChatGPT's limits.

search: {"results": [{"id", "title", "url", "text"}]}, one result per document (its best passage as text), best first.
fetch: {"id", "title", "text", "url", "metadata"}: the document's Markdown in parts of at most FETCH_CHARS; a cut
part says so in its text and names the next part's id in metadata.next_id.

Both go through the Library facade over the guarded backend, as the ingestion profile's search does: a caller sees
exactly the collections and documents their rights allow there, and a document they may not read is "not found".
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

from ingestion_contracts.gateway import MAX_QUERY_CHARS, SearchHit, SearchRequest
from mcp.server import MCPServer
from mcp.types import CallToolResult, TextContent
from pydantic import Field

from ...errors import NotFound, ToolFailure
from ...state import AppState
from ...toolkit.annotations import READ
from ...toolkit.common import profile_tools
from .links import DocumentRef, document_url, parse_id

# ChatGPT documents no numeric cap on a tool's answer; hosts reject answers in the tens of thousands of characters
# (a ChatGPT custom connector refused a ~66,000-character search answer: nowledge-co/community#493), so each
# answer stays well below that, and says where it was cut (docs/clients.md, "ChatGPT").
SEARCH_RESULTS = 10  # documents in a search answer
SEARCH_CHARS = 20_000  # a search answer at most (results dropped from the end beyond it)
PASSAGE_CHARS = 1_000  # the text of one search result
FETCH_CHARS = 40_000  # document text in one fetch answer; the rest in the next part
HITS_FOLDED = 40  # passages searched, folded to their documents


def text_answer(payload: dict[str, Any], *, is_error: bool = False) -> CallToolResult:
    text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=is_error)


def render_error(failure: ToolFailure) -> CallToolResult:
    """A failure as the same one text item, isError=true: what went wrong and what to do instead."""
    payload = {"error": failure.message}
    if failure.suggestion:
        payload["suggestion"] = failure.suggestion
    return text_answer(payload, is_error=True)


def passage(hit: SearchHit) -> str:
    text = " ".join(hit.text.split())
    where = [f"p. {hit.cited_page or hit.page}"] if (hit.cited_page or hit.page) else []
    where += [" > ".join(hit.heading_path)] if hit.heading_path else []
    text = f"[{'; '.join(where)}] {text}" if where else text
    return text if len(text) <= PASSAGE_CHARS else text[: PASSAGE_CHARS - 1] + "…"


def search_results(state: AppState, hits: list[SearchHit]) -> list[dict[str, str]]:
    """One result per document, in the order of its best passage, that passage as text."""
    best: dict[tuple[str, str], SearchHit] = {}
    for hit in hits:
        best.setdefault((hit.collection, hit.doc_id), hit)
    results = [
        {
            "id": DocumentRef(hit.collection, hit.doc_id).id(),
            "title": hit.title or Path(hit.key or hit.source).name or hit.doc_id,
            "url": document_url(state.settings, hit.collection, hit.doc_id, hit.key),
            "text": passage(hit),
        }
        for hit in list(best.values())[:SEARCH_RESULTS]
    ]
    while len(results) > 1 and len(json.dumps({"results": results}, ensure_ascii=False)) > SEARCH_CHARS:
        results.pop()
    return results


def part_text(content: str, ref: DocumentRef) -> tuple[str, int]:
    """The part of the document ``ref`` names, with a closing line when more follows; and the number of parts."""
    parts = max(1, -(-len(content) // FETCH_CHARS))
    if ref.part > parts:
        raise ToolFailure(
            f"Document {ref.collection}:{ref.doc_id} has {parts} part(s); there is no part {ref.part}.",
            "Fetch the document's id, then follow metadata.next_id.",
            code="INVALID_INPUT",
        )
    start = (ref.part - 1) * FETCH_CHARS
    text = content[start : start + FETCH_CHARS]
    if ref.part < parts:
        text += (
            f"\n\n[Part {ref.part} of {parts}: characters {start + 1:,}-{start + len(text):,} of {len(content):,}; "
            f"fetch id '{ref.next().id()}' for the next part.]"
        )
    return text, parts


def register(server: MCPServer, state: AppState) -> None:
    tool = profile_tools(server, render_error)

    @tool(READ)
    async def search(
        query: Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS, description="What to look for.")],
    ) -> CallToolResult:
        """Search the indexed documents (PDFs, Office files, web pages, notes) by keywords and meaning.

        Returns JSON {"results": [{"id", "title", "url", "text"}]}: up to 10 documents, best first, each with its
        best-matching passage as text (page and section first). Pass a result's id to fetch for the full text."""
        found = await state.library.search(SearchRequest(query=query, mode="hybrid", top_k=HITS_FOLDED))
        return text_answer({"results": search_results(state, found.hits)})

    @tool(READ)
    async def fetch(
        id: Annotated[
            str, Field(min_length=1, max_length=400, description="An id from search.")
        ],  # the contract's name
    ) -> CallToolResult:
        """Fetch the full text of a document search found, by its id.

        Returns JSON {"id", "title", "text", "url", "metadata"}: text is the document's Markdown, at most 40,000
        characters a part; a longer document ends its part with a note, and metadata.next_id fetches the next."""
        ref = parse_id(id)
        try:
            doc = await state.library.document(ref.collection, ref.doc_id)
        except NotFound:  # missing, deleted, replaced, or in a collection the caller may not read: all alike
            raise ToolFailure(
                f"No document with id {ref.id()!r}.",
                "It may have been deleted or replaced since the search: search again and fetch an id it returns.",
                code="NOT_FOUND",
            ) from None
        text, parts = part_text(doc.content, ref)
        metadata: dict[str, Any] = {
            "collection": doc.collection, "source": doc.source, "key": doc.key, "file_type": doc.file_type,
            "pages": doc.page_count, "updated": doc.last_modified or doc.updated_at, "tags": doc.tags,
            "labels": doc.metadata, "characters": len(doc.content), "part": ref.part, "parts": parts,
        }  # fmt: skip
        if ref.part < parts:
            metadata["next_id"] = ref.next().id()
        return text_answer({
            "id": ref.id(), "title": doc.title or Path(doc.key or doc.source).name or doc.doc_id, "text": text,
            "url": document_url(state.settings, doc.collection, doc.doc_id, doc.key),
            "metadata": {key: value for key, value in metadata.items() if value not in (None, "", [], {})},
        })  # fmt: skip
