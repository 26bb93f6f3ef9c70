"""Wire models of the vector gateway (embed, store, search in Milvus)."""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from .chunker import PageStart
from .common import DOC_ID_PATTERN, MAX_TAGS, CollectionName, Tag, WireModel
from .regions import Furniture, PageSize, Region, Unit

SearchMode = Literal["hybrid", "semantic", "keyword"]
# indexed: new; replaced: content or chunking changed (re-embedded); updated: same content and chunking, new
# labels (tags, metadata, title, source) written without re-embedding; skipped: nothing changed, nothing written.
UpsertStatus = Literal["indexed", "replaced", "updated", "skipped"]
# Reserved key inside stored metadata where the gateway keeps a document's identity and chunking; never
# accepted from callers, never returned in `metadata`.
RESERVED_METADATA_KEY = "__ingest"
MAX_TOP_K = 100
MAX_CHUNK_RANGE = 1000  # the most chunks one chunk-range read answers (the gateway refuses more)
MAX_ORDER = 2**63 - 1  # write orders are signed 64-bit integers (servicekit.write_order)
# min_score from which a hit is relevant with the bundled model, per mode (vector_gateway/calibration.py;
# measured in bench/TUNING.md "Calibrated scores").
# keyword: best effort (BM25 matches any shared word; no threshold keeps 90% of answers and drops 90% off-topic).
RELEVANT_SCORE = {"hybrid": 0.35, "semantic": 0.40, "keyword": 0.30}
# An answer whose best hit scores under this (per mode) is held back whole as off-topic by the MCP search tool when
# no min_score is given: the highest floor that keeps 99% of the relevant documents of a top 10 on SciFact train and
# dbpedia-5k dev (python -m bench.tune_floor; docs/search-scores.md, "A floor for nonsense").
RELEVANCE_FLOOR = {"hybrid": 0.28, "semantic": 0.45, "keyword": 0.25}
# A hybrid or keyword answer under its floor is on topic still when one of its hits' meaning alone (its calibrated
# cosine, what semantic mode scores it) reaches this (vector_gateway/relevance.py; python -m bench.tune_floor).
MEANING_FLOOR = 0.45
# An answer that reaches its floor by its words (hybrid, keyword) without holding the query's words is on topic only
# when one of its hits is this close to the query in meaning too (its calibrated cosine): BM25 scores any shared word
# ("beach", "cup", "fee"), so a score alone cannot tell an everyday question from one the library answers. The
# highest that keeps 99% of the relevant documents of a top 10 on SciFact train and dbpedia-5k dev
# (python -m bench.tune_floor; docs/search-scores.md, "A floor for nonsense").
LEXICAL_MEANING_FLOOR = {"hybrid": 0.34, "keyword": 0.3}
# The least score, in every mode, of a passage that holds a query of 4+ words word for word (its words in order,
# case, accents, punctuation and Markdown marks aside): score = EXACT_PHRASE_SCORE + (1 - it) x its own score
# (vector_gateway/search.py; docs/search-scores.md, "Exact phrases").
EXACT_PHRASE_SCORE = 0.5
MAX_QUERY_CHARS = 4000
MAX_PER_DOCUMENT = 10
MAX_METADATA_BYTES = 16_384
MAX_CHUNK_FURNITURE = 400
MAX_METADATA_DEPTH = 4
MAX_CHUNK_BOXES = 2000  # a chunk of one-word lines (a table of numbers) has a few hundred

# Chunk fields a caller may filter on with equality. Anything else (except metadata.<key>)
# is refused with the list below, so a typo never silently matches everything.
FILTERABLE_FIELDS: dict[str, type] = {
    "doc_id": str,
    "source": str,
    "title": str,
    "file_type": str,
    "page": int,
    "chunk_index": int,
    "last_modified": str,
    "collection": str,
}
METADATA_KEY_PATTERN = r"^metadata\.[A-Za-z_][A-Za-z0-9_]{0,63}$"
_METADATA_KEY_RE = re.compile(METADATA_KEY_PATTERN)
FilterValue = str | int | float | bool


def check_filter_keys(filters: dict[str, Any]) -> dict[str, Any]:
    """Refuse unknown filter keys with a message that lists the allowed ones."""
    for key in filters:
        if key not in FILTERABLE_FIELDS and not _METADATA_KEY_RE.fullmatch(key):
            allowed = ", ".join(sorted(FILTERABLE_FIELDS))
            raise ValueError(
                f"Unknown filter key {key!r}. Allowed: {allowed}, or metadata.<key> (letters, digits, underscore)."
            )
    return filters


def _depth(value: Any, level: int = 0) -> int:
    if isinstance(value, dict):
        return max((_depth(v, level + 1) for v in value.values()), default=level + 1)
    if isinstance(value, list):
        return max((_depth(v, level + 1) for v in value), default=level + 1)
    return level


def check_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    """Bound metadata in depth and serialized size (it is stored as JSON in every chunk)."""
    if RESERVED_METADATA_KEY in metadata:
        raise ValueError(f"Metadata key {RESERVED_METADATA_KEY!r} is reserved; use another name.")
    if _depth(metadata) > MAX_METADATA_DEPTH:
        raise ValueError(f"Metadata is nested too deeply (more than {MAX_METADATA_DEPTH} levels); flatten it.")
    size = len(json.dumps(metadata, ensure_ascii=False).encode())
    if size > MAX_METADATA_BYTES:
        raise ValueError(f"Metadata is {size} bytes as JSON; the limit is {MAX_METADATA_BYTES}. Store less.")
    return metadata


Metadata = dict[str, Any]


class ChunkIn(WireModel):
    index: int = Field(ge=0)
    text: str = Field(min_length=1, max_length=200_000)
    start: int = Field(default=0, ge=0)
    end: int = Field(default=0, ge=0)
    token_count: int = Field(default=0, ge=0)
    heading_path: list[str] = Field(default_factory=list, max_length=16)
    heading_levels: list[Annotated[int, Field(ge=1, le=6)]] = Field(
        default_factory=list,
        max_length=16,
        description="Level (1-6) of each heading in heading_path (the chunker's); empty: not known.",
    )
    page: int | None = Field(default=None, ge=1)
    page_end: int | None = Field(default=None, ge=1)
    page_starts: list[PageStart] = Field(
        default_factory=list, max_length=1000, description="Where each page begins in `text` (the chunker's)."
    )
    boxes: list[Region] | None = Field(
        default=None,
        max_length=MAX_CHUNK_BOXES,
        description="Where the text lies on its pages (the chunker's boxes; offsets in `text`); null: not located "
        "(a format without pages).",
    )
    units: list[Unit] = Field(
        default_factory=list, max_length=64, description="Tables and figures the chunk holds (the chunker's units)."
    )
    furniture: list[Furniture] = Field(
        default_factory=list,
        max_length=MAX_CHUNK_FURNITURE,
        description="Running heads, feet and page numbers of the pages the chunk holds (the converter's furniture): "
        "kept with it and shown with its page's text, never searched.",
    )

    @model_validator(mode="after")
    def _levels_match_the_path(self) -> ChunkIn:
        if self.heading_levels and len(self.heading_levels) != len(self.heading_path):
            raise ValueError(
                f"Chunk {self.index}: {len(self.heading_levels)} heading_levels for {len(self.heading_path)} headings "
                "in heading_path; send one level per heading (the chunker's heading_levels), or none."
            )
        return self

    @model_validator(mode="after")
    def _boxes_in_text(self) -> ChunkIn:
        outside = [[b.start, b.end] for b in self.boxes or [] if b.end > len(self.text)]
        if outside:
            raise ValueError(
                f"Chunk {self.index}: boxes at offsets {outside[:3]} lie past the end of `text` ({len(self.text)} "
                "characters); send the chunker's boxes unchanged, or none."
            )
        return self

    @model_validator(mode="after")
    def _page_starts_in_text(self) -> ChunkIn:
        offsets = [start.offset for start in self.page_starts]
        if offsets != sorted(set(offsets)) or (offsets and offsets[-1] >= len(self.text)):
            raise ValueError(
                f"Chunk {self.index}: page_starts offsets {offsets} must increase and lie inside `text` "
                f"({len(self.text)} characters); send the chunker's page_starts unchanged, or none."
            )
        return self


MAX_KEY_CHARS = 2048
DocumentKey = Annotated[str, Field(min_length=1, max_length=MAX_KEY_CHARS)]


class UpsertDocumentRequest(WireModel):
    source: str = Field(
        min_length=1, max_length=2048, description="Label: where the document came from (stored, filterable)."
    )
    key: DocumentKey | None = Field(
        default=None,
        description="The document's identity in its collection (absolute path, normalised URL, text name). "
        "Ingesting the same key again replaces, updates or skips that document. Defaults to source.",
    )
    doc_id: str | None = Field(
        default=None,
        pattern=DOC_ID_PATTERN,
        description="Omit to derive a stable id from (collection, key).",
    )
    chunking: str = Field(
        default="", max_length=64, description="How the chunks were made (e.g. the preset): part of the dedup check."
    )
    vectors: list[list[float]] | None = Field(
        default=None,
        description="Embeddings of the chunks, in order, made by /v1/embed/passages with the collection's model; "
        "omit to let the gateway embed.",
    )
    embedding_model: str | None = Field(default=None, max_length=256, description="The model that made `vectors`.")
    title: str = Field(default="", max_length=1024)
    file_type: str = Field(default="txt", max_length=32)
    content_hash: str = Field(pattern=r"^[0-9a-f]{64}$", description="sha256 of the source content.")
    page_count: int | None = Field(
        default=None,
        ge=1,
        le=1_000_000,
        description="Pages of the source (PDF pages, slides); omit for page-less formats. Defaults to the last page "
        "a chunk names.",
    )
    last_modified: str = Field(default="", max_length=64)
    tags: list[Tag] = Field(default_factory=list, max_length=MAX_TAGS)
    metadata: Metadata = Field(default_factory=dict)
    chunks: list[ChunkIn] = Field(min_length=1, max_length=100_000)
    page_sizes: list[PageSize] = Field(
        default_factory=list, max_length=1_000_000, description="Sizes of the pages the chunks' boxes name."
    )
    force: bool = Field(default=False, description="Re-index even when the content hash is unchanged.")
    order: int | None = Field(
        default=None,
        ge=1,
        le=MAX_ORDER,
        description="Write order taken when the write was submitted (servicekit.write_order): of two writes of one "
        "document the larger order is kept, whatever order they arrive in. A write whose order equals the stored "
        "content's is a retry of the write that stored it and answers what that write did. Omit to let the gateway "
        "take one when the write arrives.",
    )

    @field_validator("metadata")
    @classmethod
    def _bounded_metadata(cls, value: dict[str, Any]) -> dict[str, Any]:
        return check_metadata(value)

    @property
    def identity(self) -> str:
        return self.key or self.source


class OriginalKept(WireModel):
    """What PUT /v1/collections/{c}/originals/{content_hash} did: kept the bytes, or had them already."""

    content_hash: str
    kept: bool = Field(description="False: the original was kept already.")
    size_bytes: int


class RelabelRequest(WireModel):
    """New labels for a stored document whose content and chunking are unchanged: no re-embedding."""

    content_hash: str = Field(pattern=r"^[0-9a-f]{64}$", description="Must match the stored version.")
    source: str = Field(min_length=1, max_length=2048)
    title: str | None = Field(default=None, max_length=1024, description="Omit to keep the stored title.")
    last_modified: str | None = Field(default=None, max_length=64)
    tags: list[Tag] = Field(default_factory=list, max_length=MAX_TAGS)
    metadata: Metadata = Field(default_factory=dict)

    @field_validator("metadata")
    @classmethod
    def _bounded_metadata(cls, value: dict[str, Any]) -> dict[str, Any]:
        return check_metadata(value)


class PassageIn(WireModel):
    title: str = Field(default="", max_length=1024, description="The title of the chunk's document.")
    heading_path: list[str] = Field(default_factory=list, max_length=16)
    text: str = Field(min_length=1, max_length=200_000)


class EmbedPassagesRequest(WireModel):
    """Chunks to embed exactly as an upsert would (document title and headings in front of the text)."""

    passages: list[PassageIn] = Field(min_length=1, max_length=1024)


class StageTimings(WireModel):
    embedding_ms: float = 0.0
    storing_ms: float = 0.0


class UpsertDocumentResponse(WireModel):
    doc_id: str
    collection: str
    source: str
    status: UpsertStatus
    chunk_count: int
    timings: StageTimings = Field(default_factory=StageTimings)
    warnings: list[str] = Field(default_factory=list)


class UpsertBatchRequest(WireModel):
    documents: list[UpsertDocumentRequest] = Field(min_length=1, max_length=1000)
    commit_within_ms: int | None = Field(
        default=None,
        ge=0,
        le=86_400_000,
        description="Commit only within this many milliseconds of the request's arrival (a queue worker's remaining "
        "job lease). Past it nothing is committed and the answer is 409 COMMIT_DEADLINE_PASSED.",
    )


class WriteOrder(WireModel):
    """A write order (POST /v1/write-order): submitters take one when a write is submitted."""

    order: int = Field(ge=1, le=MAX_ORDER)


class UpsertBatchResponse(WireModel):
    results: list[UpsertDocumentResponse]
    timings: StageTimings


class SearchRequest(WireModel):
    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    collections: list[CollectionName] | None = Field(default=None, description="None searches every collection.")
    mode: SearchMode = "hybrid"
    top_k: int = Field(default=10, ge=1, le=MAX_TOP_K)
    filters: dict[str, FilterValue] = Field(default_factory=dict, max_length=16)
    tags: list[Tag] = Field(default_factory=list, max_length=MAX_TAGS, description="Hits must carry every tag.")
    min_score: float | None = Field(default=None, ge=0.0, le=1.0)
    include_total: bool = Field(
        default=False, description="Also count the chunks searched (one more query; always done when nothing matched)."
    )
    exact_phrase: bool = Field(
        default=True,
        description="Raise passages that hold a query of 4+ words word for word (phrase_score; a semantic search pays "
        "one BM25 query for it); false: meaning and terms only, as find_similar's whole-chunk probes ask.",
    )
    group_by_document: bool = Field(
        default=False,
        description="top_k counts documents: each one's best passages (per_document of them), the others counted in "
        "more_in_document.",
    )
    per_document: int = Field(default=1, ge=1, le=MAX_PER_DOCUMENT, description="With group_by_document: passages "
                              "shown per document.")  # fmt: skip

    @field_validator("filters")
    @classmethod
    def _known_filter_keys(cls, value: dict[str, FilterValue]) -> dict[str, FilterValue]:
        return check_filter_keys(value)

    @field_validator("query")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("The query is blank; give a few words describing what to find.")
        return value


class SearchHit(WireModel):
    chunk_id: str
    doc_id: str
    collection: str
    source: str
    key: str = Field(default="", description="The document's identity (path, URL, name); see UpsertDocumentRequest.")
    title: str
    file_type: str
    page: int | None = Field(description="First page of the chunk.")
    page_end: int | None = Field(description="Last page of the chunk.")
    cited_page: int | None = Field(
        default=None,
        description="The page to cite, within page..page_end: the one holding the passage that matched the query "
        "(for a chunk across a page break), else the one holding most of the chunk.",
    )
    heading_path: list[str]
    heading_levels: list[int] | None = Field(
        default=None,
        description="Level (1-6) of each heading in heading_path; null: not known (indexed before levels were "
        "kept; re-ingest to fill them in).",
    )
    chunk_index: int
    text: str
    start: int
    end: int
    token_count: int
    score: float = Field(
        description="0..1, higher is better; calibrated, so it means the same for every query and collection: "
        "dense_score + keyword_score + phrase_score. Hybrid 0.35 or more: relevant with the bundled model."
    )
    dense_score: float = Field(default=0.0, description="Dense (meaning) part of score: weight x calibrated cosine.")
    keyword_score: float = Field(default=0.0, description="Keyword (BM25) part of score: weight x calibrated BM25.")
    phrase_score: float = Field(
        default=0.0,
        description="Exact part of score: a passage that holds the query (4+ words) word for word, or a one-word "
        f"query's word as written (hybrid, keyword), scores {EXACT_PHRASE_SCORE} + {1 - EXACT_PHRASE_SCORE} x "
        f"(dense_score + keyword_score), at least {EXACT_PHRASE_SCORE}; 0 for any other passage.",
    )
    dense_rank: int | None = Field(
        default=None, description="Rank in the dense candidate list (1 = first); none: absent."
    )
    keyword_rank: int | None = Field(default=None, description="Rank in the BM25 candidate list; none: absent.")
    more_in_document: int | None = Field(
        default=None, description="group_by_document: other passages of this document that matched, not shown."
    )
    tags: list[str]
    metadata: dict[str, Any]
    last_modified: str
    boxes: list[Region] | None = Field(
        default=None,
        description="Where the text lies on its pages (offsets in `text`; points from each page's top-left corner); "
        "null: not located (a format without pages, or indexed before boxes were kept: re-ingest to fill them in).",
    )
    units: list[Unit] | None = Field(
        default=None, description="Tables and figures the chunk holds (offsets in the document's Markdown)."
    )
    page_sizes: list[PageSize] | None = Field(default=None, description="Sizes of the pages `boxes` and `units` name.")
    cited: list[list[int]] | None = Field(
        default=None,
        description="The sentences to quote: [start, end] offsets in `text` of the one or two sentences that match "
        "the query best, in order; empty: none shares a word with the query; null: not a search (a chunk listing).",
    )


# Why an answer is held back as off-topic (vector_gateway/relevance.py): its best hit is under the mode's floor; it
# reaches the floor on words it shares with the query, none of its hits close in meaning (LEXICAL_MEANING_FLOOR); its
# closest hit holds one word of the query only, and is as close to that word alone as to the query; or no hit shares a
# word with a query of words the embedding model does not know (made-up words).
OffTopic = Literal["under_floor", "words_without_meaning", "one_word", "unknown_words"]


class SearchResponse(WireModel):
    hits: list[SearchHit]
    mode: SearchMode
    total_searched: int | None = Field(
        default=None, description="Chunks in the collections searched: when include_total was set or nothing matched."
    )
    embedding_ms: float
    search_ms: float
    on_topic: bool | None = Field(
        default=None,
        description="Whether the answer is on the library's topic: a hit holds two thirds of the query's words as "
        "written, or its best hit reaches RELEVANCE_FLOOR for the mode (hybrid and keyword: and a hit is close to the "
        "query in meaning too, not only as far as one of its words goes), or a hybrid or keyword hit's meaning alone "
        "reaches the semantic floor (semantic: or the hybrid answer to the same query is on topic); never for made-up "
        "words no hit holds. The MCP search tool holds back an answer that is not (no min_score given). None: not "
        "judged.",
    )
    off_topic: OffTopic | None = Field(
        default=None,
        description="Why the answer is not on topic (on_topic false, hits found): under_floor (its best hit is under "
        "the mode's floor), words_without_meaning (it shares words with the query, no hit close to it in meaning), "
        "one_word (the hit closest to the query in meaning holds one of its words only, and that word alone is as "
        "close to it as the whole query: the passage is about the word, not the question), unknown_words (no hit "
        "holds a word of the query, and the model knows fewer than half of its words whole: made-up words, another "
        "language).",
    )


class DocumentInfo(WireModel):
    doc_id: str
    collection: str
    source: str
    key: str = Field(default="", description="The document's identity (path, URL, name).")
    chunking: str = Field(default="", description="How it was chunked; empty for documents written before 0.3.")
    title: str
    file_type: str
    content_hash: str
    chunk_count: int
    token_count: int
    page_count: int | None = Field(
        default=None, description="Pages of the source (PDF pages, slides); null for page-less formats."
    )
    created_at: str
    updated_at: str
    last_modified: str
    tags: list[str]
    metadata: dict[str, Any]
    content_order: int = Field(
        default=0, description="Write order of the write that stored this content (0: written before write orders)."
    )
    content_status: Literal["indexed", "replaced", ""] = Field(
        default="", description="What that write did: indexed (new) or replaced (changed content); empty before 0.6."
    )


class DocumentList(WireModel):
    documents: list[DocumentInfo]
    total: int
    offset: int
    limit: int


class DocumentStamp(WireModel):
    key: str
    doc_id: str
    content_hash: str
    metadata: dict[str, Any] = Field(default_factory=dict, description="Only the metadata keys asked for.")


class DocumentStamps(WireModel):
    """What a folder sync compares with: every document under a key prefix, read in one pass."""

    stamps: list[DocumentStamp]


class FindDocumentsRequest(WireModel):
    keys: list[DocumentKey] = Field(min_length=1, max_length=1000, description="Document identities to look up.")


class DocumentContent(DocumentInfo):
    content: str = Field(description="Markdown rebuilt from the chunks, overlaps removed.")


class OutlineSection(WireModel):
    """One section of a document: a heading and the text up to the next heading (its subsections apart)."""

    position: int = Field(ge=0, description="Order in the document (0 = first); sections tile `content`.")
    heading_path: list[str] = Field(description="Titles from the top heading down to this one; [] before any.")
    heading_levels: list[int] | None = Field(
        default=None,
        description="Level (1-6) of each heading in heading_path; null: not known (indexed before levels were "
        "kept; re-ingest to fill them in).",
    )
    start: int = Field(ge=0, description="Offset of the section's first character in `content`.")
    end: int = Field(ge=0, description="Offset one past its last character (its subsections begin there).")
    page: int | None = Field(default=None, description="Page where it begins.")
    page_end: int | None = Field(default=None, description="Page where it ends.")
    chunk_start: int = Field(ge=0, description="Its first chunk's index.")
    chunk_end: int = Field(ge=0, description="Its last chunk's index.")


class DocumentStructure(DocumentContent):
    """A document's Markdown with its map: sections in order and where each page begins."""

    sections: list[OutlineSection]
    page_starts: list[PageStart] = Field(
        default_factory=list, description="Where each page begins in `content`, in order; empty without pages."
    )
    levels_known: bool = Field(description="Every section's heading levels are known.")
    regions: list[Region] | None = Field(
        default=None,
        description="Where `content` lies on its pages (offsets in `content`); null: not located (no pages, or "
        "indexed before boxes were kept).",
    )
    units: list[Unit] | None = Field(default=None, description="Tables and figures (offsets in `content`).")
    page_sizes: list[PageSize] | None = Field(default=None, description="Sizes of the pages regions and units name.")
    furniture: list[Furniture] | None = Field(
        default=None, description="Running heads, feet and page numbers, page by page (not in `content`)."
    )


class DocumentChunks(WireModel):
    doc_id: str
    collection: str
    chunks: list[SearchHit]
    chunk_count: int


class DeleteDocumentResponse(WireModel):
    doc_id: str
    collection: str
    deleted_chunks: int


# Milvus Lite slows as a collection grows past this many chunks (docs/scale.md): the gateway warns in its log, and
# the MCP server's get_collections says so beside the count.
LITE_SLOWS_AT_CHUNKS = 100_000


class CollectionInfo(WireModel):
    name: str
    document_count: int
    chunk_count: int
    embedding_model: str
    dimension: int
    engine: str | None = Field(
        default=None, description="The index it lives in: lance, milvus-lite or milvus (a server)."
    )
    precision: Literal["fp32", "int8"] | None = Field(
        default=None, description="The precision its vectors were embedded at (the embedding model says it too)."
    )


class CollectionList(WireModel):
    collections: list[CollectionInfo]


class CollectionNames(WireModel):
    names: list[str] = Field(description="Every collection's name, A to Z (no counts: one cheap call).")


class CreateCollectionRequest(WireModel):
    name: CollectionName


class DeleteCollectionResponse(WireModel):
    name: str
    deleted_documents: int
    deleted_chunks: int


class EmbedRequest(WireModel):
    texts: list[Annotated[str, Field(min_length=1, max_length=100_000)]] = Field(min_length=1, max_length=1024)


class EmbeddingModelInfo(WireModel):
    """The gateway's embedding model, described without loading it."""

    model: str
    dimension: int | None = Field(default=None, description="Vector width; null when the model folder does not say")
    precision: Literal["fp32", "int8"] | None = Field(
        default=None,
        description="What the loaded model embeds at (int8 on CPUs with int8 dot products); null "
        "until the model is loaded",
    )


class EmbedResponse(WireModel):
    vectors: list[list[float]]
    model: str
    dimension: int
    embedding_ms: float
