"""The primary tool set (ingestion-mcp plan): ingest, search, collections."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Unpack

from ingestion_contracts.common import UserName
from ingestion_contracts.gateway import (
    LITE_SLOWS_AT_CHUNKS,
    RELEVANCE_FLOOR,
    CollectionInfo,
    SearchHit,
    SearchRequest,
)
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import Field

from ...errors import ToolFailure
from ...ingest.folders import latest_sync, stale_marks, synced_folders
from ...ingest.pipeline import IngestOutcome
from ...library import ResponseBudget
from ...state import AppState
from ...toolkit.annotations import READ, WRITE
from ...toolkit.common import ToolDecorator, profile_tools, result
from ...toolkit.excerpt import excerpt
from .evidence import NOT_LOCATED, hit_regions, hit_units, not_located
from .models import (
    ChunkingArg,
    CollectionArg,
    CollectionsOutput,
    CollectionSummary,
    ForceArg,
    FormatArg,
    IngestNames,
    IngestOutput,
    MetadataArg,
    QueryArg,
    ScoreParts,
    SearchOutput,
    SearchResultItem,
    SourceArg,
    Stages,
    TagFilterArg,
    TagsArg,
    TopKArg,
    render_error,
)
from .sync_tool import freshness
from .viewer import VIEWER_META

CONCISE_TEXT_CHARS = 600
FILES_PAGE = 100  # file names in one get_collections answer (synced folders' failing files: FAILING_PAGE)


def ingest_message(outcome: IngestOutcome, label: str) -> str:
    where = outcome.collection
    if outcome.status == "skipped":
        return (f"Skipped {label}: unchanged since it was ingested into {where} ({outcome.chunks} chunks). "
                "Pass force=true to ingest it again anyway.")  # fmt: skip
    if outcome.status == "updated":
        return (
            f"Updated the labels of {label} in {where} (same content, {outcome.chunks} chunks kept, not re-embedded)."
        )
    verb = "Replaced the previous version of" if outcome.status == "replaced" else "Successfully ingested"
    return f"{verb} {label} into {where} ({outcome.chunks} chunks, ~{outcome.tokens} tokens)"


def ingest_output(
    outcome: IngestOutcome, label: str, response_format: str, **names: Unpack[IngestNames]
) -> IngestOutput:
    created = outcome.chunks if outcome.status in ("indexed", "replaced") else 0
    out = IngestOutput.model_validate({
        "success": True, "message": ingest_message(outcome, label), "status": outcome.status,
        "collection": outcome.collection, "chunks_created": created, **names,
    })  # fmt: skip
    if response_format == "detailed":
        out.doc_id, out.source, out.estimated_tokens = outcome.doc_id, outcome.source, outcome.tokens
        out.key = outcome.key
        out.page_count, out.pipeline = outcome.page_count, outcome.pipeline
        out.processing_time_ms = outcome.processing_ms
        out.stages = Stages(**outcome.stages)
        out.warnings = outcome.warnings
    return out


def cited_page(hit: SearchHit) -> int | None:
    """The page an agent should cite (the gateway's choice; a gateway before it gave the first page only)."""
    return hit.cited_page if hit.cited_page is not None else hit.page


def page_range(hit: SearchHit) -> list[int] | None:
    if hit.page is None or hit.page_end is None or hit.page_end == hit.page:
        return None
    return [hit.page, hit.page_end]


def search_item(hit: SearchHit, detailed: bool, query: str = "") -> SearchResultItem:
    """One hit as the answer shows it; a concise one's text is cut around the query's words (toolkit/excerpt.py)."""
    text = hit.text if detailed else excerpt(hit.text, query, CONCISE_TEXT_CHARS)
    item = SearchResultItem(
        title=hit.title or Path(hit.key or hit.source).name, source=hit.source, collection=hit.collection,
        page=cited_page(hit), page_range=page_range(hit), section=" > ".join(hit.heading_path) or None,
        text=text, score=round(hit.score, 4), doc_id=hit.doc_id, chunk_index=hit.chunk_index,
        more=hit.more_in_document or None,
    )  # fmt: skip
    if detailed:
        item.tags, item.metadata, item.file_type = hit.tags, hit.metadata, hit.file_type
        item.updated = hit.last_modified or None
        item.why = ScoreParts(
            dense=hit.dense_score, keyword=hit.keyword_score, phrase=hit.phrase_score or None,
            dense_rank=hit.dense_rank, keyword_rank=hit.keyword_rank, collection=hit.collection,
        )  # fmt: skip
        item.regions, item.units = hit_regions(hit), hit_units(hit)
        item.cited = hit.cited
    return item


def fit_budget(out: SearchOutput, budget: ResponseBudget) -> SearchOutput:
    """Drop the lowest-ranked results until the answer fits the token budget, and say so."""
    if out.results and budget.trim(out, "results"):
        out.truncated = True
    if out.truncated:
        out.message = (
            f"{out.message} Truncated to {len(out.results or [])} results to stay within the response budget; "
            "lower top_k, use response_format='concise', or add filters to narrow the search."
        )
    return out


async def ingest_via_job(
    state: AppState,
    ctx: Context,
    kind: str,
    params: dict[str, Any],
    label: str,
    shape: Callable[[IngestOutcome], IngestOutput],
) -> CallToolResult:
    """Run an ingest as a job; answer with its result, or with its id when it outlives the wait."""
    job, finished = await state.run_job(ctx, kind, params, label)
    if finished:
        return result(shape(IngestOutcome(**job.result)))
    return result(
        IngestOutput(
            success=True,
            job_id=job.id,
            message=f"Still processing {label} ({job.progress:.0f}%, {job.current_step}). "
            f"Call get_job_status with job_id '{job.id}' to follow it, or cancel_job to stop it.",
        )
    )


def register(server: MCPServer, state: AppState) -> None:
    tool = profile_tools(server, render_error)
    _register_ingest(tool, state)
    _register_search(tool, state)
    _register_collections(tool, state)


def _register_ingest(tool: ToolDecorator, state: AppState) -> None:
    @tool(WRITE)
    async def ingest_document(
        file_path: Annotated[str, Field(min_length=1, max_length=4096, description="Absolute path.")],
        ctx: Context,
        collection: CollectionArg = None,
        source: SourceArg = None,
        tags: TagsArg = None,
        chunking: ChunkingArg = "default",
        response_format: FormatArg = "concise",
        metadata: MetadataArg = None,
        force: ForceArg = False,
    ) -> Annotated[CallToolResult, IngestOutput]:
        """Ingest a file (PDF, Office, OpenDocument, EPUB, RTF, EML/MSG, HTML/MHTML, Markdown, CSV, LaTeX, AsciiDoc,
        text, image; also gzipped), identified by its absolute path. For text you have use ingest_text; for the
        web, ingest_from_url."""
        name = Path(file_path).name
        params = {
            "file_path": file_path, "collection": state.collection(collection), "source": source, "tags": tags,
            "chunking": chunking, "metadata": metadata, "force": force,
        }  # fmt: skip
        return await ingest_via_job(
            state, ctx, "ingest_document", params, name,
            lambda outcome: ingest_output(outcome, name, response_format, file_name=name),
        )  # fmt: skip

    @tool(WRITE)
    async def ingest_text(
        text: Annotated[str, Field(min_length=1)],
        ctx: Context,
        collection: CollectionArg = None,
        name: Annotated[
            str | None,
            Field(
                default=None,
                max_length=256,
                description="Identity: the same name again updates or replaces it.",
            ),
        ] = None,
        source: SourceArg = None,
        tags: TagsArg = None,
        chunking: ChunkingArg = "default",
        response_format: FormatArg = "concise",
        metadata: MetadataArg = None,
        force: ForceArg = False,
    ) -> Annotated[CallToolResult, IngestOutput]:
        """Ingest text you already have (plain or Markdown, 50+ characters), identified by its name (else its
        content). Markdown headings become each passage's section."""
        params = {
            "text": text, "collection": state.collection(collection), "name": name, "source": source, "tags": tags,
            "chunking": chunking, "metadata": metadata, "force": force,
        }  # fmt: skip
        return await ingest_via_job(
            state, ctx, "ingest_text", params, name or "text",
            lambda o: ingest_output(o, f"text '{o.title}'", response_format, name=o.title),
        )  # fmt: skip


async def mark_stale(state: AppState, keys: list[tuple[str, str | None]], items: list[Any]) -> int:
    """Mark each item whose document is stale (its synced file now fails: ingest/folders.py); how many are."""
    marks = await stale_marks(state.folders)
    for (collection, key), item in zip(keys, items, strict=True):
        item.stale = marks.of(collection, key)
    return sum(1 for item in items if item.stale)


def _register_search(tool: ToolDecorator, state: AppState) -> None:
    @tool(READ, meta=VIEWER_META)  # hosts that render MCP Apps show the cited page; others ignore it
    async def search(
        query: QueryArg,
        collection: CollectionArg = None,
        top_k: TopKArg = 5,
        mode: Annotated[
            str,
            Field(
                default="hybrid",
                pattern="^(hybrid|semantic|keyword)$",
                description="keyword: exact terms, codes; semantic: paraphrases; hybrid: both.",
            ),
        ] = "hybrid",
        filters: Annotated[
            dict[str, str | int | float | bool] | None,
            Field(
                default=None,
                description="Equality filters, AND-ed: file_type, page, source, title, doc_id, chunk_index, "
                'last_modified, metadata.<key> ({"page": 3}).',
            ),
        ] = None,
        tags: TagFilterArg = None,
        min_score: Annotated[
            float | None,
            Field(
                default=None,
                ge=0,
                le=1,
                description="Drop passages scoring below this.",
            ),
        ] = None,
        per_document: Annotated[
            int, Field(default=0, ge=0, description="N>0: top_k counts documents, N passages each")
        ] = 0,
        response_format: FormatArg = "concise",
    ) -> Annotated[CallToolResult, SearchOutput]:
        """Passages matching a query, best first; all collections unless one is given. score (0-1) means the same
        for any query; off-topic answers are held back (hybrid under 0.28, semantic 0.45; min_score 0 shows
        them). Verbatim matches (4+ words, or one word as typed): 0.5+."""
        detailed = response_format == "detailed"
        request = SearchRequest(
            query=query, collections=[collection] if collection else None, mode=mode,  # type: ignore[arg-type]  # str: the pattern checks it; the schema stays a string
            top_k=top_k, filters=filters or {}, tags=tags or [], min_score=min_score, include_total=detailed,
            group_by_document=per_document > 0, per_document=max(per_document, 1),
        )  # fmt: skip
        found = await state.library.search(request)
        hits, held = gated(found.hits, mode, min_score, on_topic=found.on_topic)
        items = [search_item(hit, detailed, query) for hit in hits]
        where = f"'{collection}'" if collection else "all collections"
        held_back = held_message(held, mode, where, found.off_topic)
        out = SearchOutput(
            success=True, query=query, mode=found.mode, results=items, total_results=len(items),
            message=f"Found {len(items)} passages in {where}." if items else held_back or
            f"No passages matched in {where}. Try other words, mode='semantic', or fewer filters.",
        )  # fmt: skip
        if items and (stale := await mark_stale(state, [(hit.collection, hit.key) for hit in found.hits], items)):
            out.message = f"{out.message} {stale} of them come from stale documents (see `stale`: the file now fails)."
        if detailed:
            out.searched_chunks = found.total_searched
            out.search_time_ms = round(found.embedding_ms + found.search_ms, 1)
            if unlocated := sum(1 for hit in found.hits if not_located(hit)):
                out.message = f"{out.message} {NOT_LOCATED.format(count=unlocated)}"
        return result(fit_budget(out, state.library.budget))


def gated(
    hits: list[SearchHit], mode: str, min_score: float | None, *, on_topic: bool | None = None
) -> tuple[list[SearchHit], int]:
    """The hits to show, and how many were held back: without min_score, an answer that is off-topic is held back
    whole (an on-topic answer is shown whole: its tail is ranked, not judged). The gateway judges it (``on_topic``,
    vector_gateway/relevance.py); a gateway that does not is read by its best score against the mode's floor."""
    if on_topic is None:
        on_topic = bool(hits) and max(hit.score for hit in hits) >= RELEVANCE_FLOOR[mode]
    if min_score is not None or not hits or on_topic:
        return hits, 0
    return [], len(hits)


HELD_BECAUSE = {
    "words_without_meaning": "share words with the query but none is close to it in meaning",
    "one_word": (
        "are about one word of the query, not about the question (the closest holds that word only, and is as close "
        "to it alone as to the whole query)"
    ),
    "unknown_words": (
        "hold none of the query's words, and the embedding model knows too few of them to judge by meaning (made-up "
        "words, or a language other than English: try the words the documents use)"
    ),
}


def held_message(held: int, mode: str, where: str, why: str | None = None) -> str:
    """Why an answer was held back (the gateway's ``off_topic``; a gateway that does not say: its floor)."""
    if not held:
        return ""
    reason = HELD_BECAUSE.get(why or "", f"score under the relevance floor ({RELEVANCE_FLOOR[mode]} in {mode} mode)")
    return (f"Nothing relevant in {where}: the {held} best passages {reason}, as off-topic queries do. Pass "
            "min_score: 0 to see them, or try other words.")  # fmt: skip


def index_note(infos: list[CollectionInfo]) -> str:
    """Which index holds them and at which precision their vectors are, and the way out when a Milvus Lite collection
    grew past where Lite slows."""
    engine = next((info.engine for info in infos if info.engine), None)
    if engine is None:
        return ""
    precisions = sorted({info.precision for info in infos if info.precision})
    vectors = f"; vectors: {', '.join(precisions)}" if precisions else ""
    big = [info.name for info in infos if engine == "milvus-lite" and info.chunk_count >= LITE_SLOWS_AT_CHUNKS]
    if not big:
        return f" (index: {engine}{vectors})"
    return (f" (index: {engine}{vectors}; Milvus Lite slows past {LITE_SLOWS_AT_CHUNKS:,} chunks in a collection, "
            f"as in {', '.join(big[:3])}: vector-gateway-migrate moves the index to Lance, "
            "see docs/scale.md)")  # fmt: skip


def _register_collections(tool: ToolDecorator, state: AppState) -> None:
    @tool(READ)
    async def get_collections(
        collection: Annotated[
            UserName | None,
            Field(default=None, description="Omit to list all collections."),
        ] = None,
        offset: int = 0,
    ) -> Annotated[CallToolResult, CollectionsOutput]:
        """List collections with their document counts, or give the stats and files of one collection."""
        if collection is None:
            listing = await state.library.listing()
            synced = await synced_folders(state.folders)
            items = [
                CollectionSummary(
                    name=c.name, document_count=c.document_count, chunk_count=c.chunk_count,
                    last_synced=latest_sync(synced.get(c.name, [])), engine=c.engine, precision=c.precision,
                )
                for c in listing.collections
            ]  # fmt: skip
            total_docs = sum(c.document_count for c in items)
            total_chunks = sum(c.chunk_count or 0 for c in items)
            return result(CollectionsOutput(
                success=True, collections=items, total_collections=len(items),
                message=f"Found {len(items)} collections with {total_docs} total documents and {total_chunks} chunks"
                + index_note(listing.collections),
            ))  # fmt: skip
        if offset < 0:
            raise ToolFailure("offset must be 0 or more.", "Pass 100 for the second page of files, 200 for the third.")
        info = await state.library.collection_info(collection)
        folders = (await synced_folders(state.folders, offset)).get(info.name)
        page = await state.library.documents(collection, offset=offset, limit=FILES_PAGE)
        files = [Path(doc.key or doc.source).name or doc.key for doc in page.documents]
        cut = offset > 0 or offset + len(files) < info.document_count
        listed = (f" Files {offset + 1}-{offset + len(files)} of {info.document_count} are listed; offset="
                  f"{offset + FILES_PAGE} gives the next page." if cut and files else "")  # fmt: skip
        return result(CollectionsOutput(
            success=True, name=info.name, document_count=info.document_count, chunk_count=info.chunk_count,
            files=files, file_count=info.document_count, embedding_model=info.embedding_model, synced_folders=folders,
            engine=info.engine, precision=info.precision,
            message=f"Collection '{info.name}' contains {info.chunk_count} chunks from {info.document_count} files"
            + index_note([info]) + freshness(folders) + "." + listed,
        ))  # fmt: skip
