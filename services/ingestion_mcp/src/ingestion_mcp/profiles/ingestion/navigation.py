"""Reading a long document in parts: its outline, one section, a page range.

Each is a slice of the document's Markdown as get_document returns it (the gateway's structure: the same
chunks, the same layout), so reading every section in outline order gives back get_document's text.
Each answer fits the response budget; a cut one says `truncated` and which call reads on.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Annotated, Literal

from ingestion_contracts.gateway import MAX_QUERY_CHARS, DocumentStructure, OutlineSection, SearchHit
from ingestion_contracts.regions import Unit
from mcp.server import MCPServer
from mcp.types import CallToolResult
from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema

from ...errors import ToolFailure
from ...library import estimate_tokens
from ...state import AppState
from ...toolkit.annotations import READ
from ...toolkit.common import profile_tools, result
from .documents import DocRefArg, KeyArg, resolve_doc_id
from .documents import doc_name as short_name
from .evidence import (
    PAGED_FILE_TYPES,
    PageRegions,
    ShownImage,
    UnitItem,
    crop_of,
    grouped,
    image_content,
    page_share,
    whole_units,
)
from .models import CollectionArg, FormatArg, OffsetArg, ToolOutput, render_error

StartCharArg = OffsetArg  # a cut answer names the call that reads on
PREAMBLE = "(before the first heading)"
MAX_FIGURES = 3  # crops one answer carries (each is an image of up to 1 MB)
UNLOCATED = " It was indexed before boxes were kept (no regions): ingest it again with force=true to locate its text."


class OutlineEntry(BaseModel):
    position: int
    title: str
    level: int | None = None  # absent: not known (said in the answer's message)
    depth: int
    page: int | None = None
    tokens: int
    # detailed only (named in OutlineOutput's description)
    heading_path: SkipJsonSchema[list[str] | None] = None
    page_end: SkipJsonSchema[int | None] = None


class OutlineOutput(ToolOutput):
    model_config = ConfigDict(json_schema_extra={"description": "'detailed' adds heading_path and page_end."})
    doc_id: str | None = None
    name: str | None = None
    levels_known: bool | None = None
    sections: list[OutlineEntry] | None = None
    total: int | None = None
    next_offset: int | None = None


class SectionOutput(ToolOutput):
    model_config = ConfigDict(json_schema_extra={"description": "'detailed' adds heading_levels, chunks, regions."})
    doc_id: str | None = None
    name: str | None = None
    position: int | None = None
    heading_path: list[str] | None = None
    page: int | None = None
    page_end: int | None = None
    content: str | None = None
    truncated: bool | None = None
    next_start_char: int | None = None
    heading_levels: SkipJsonSchema[list[int] | None] = None
    chunks: SkipJsonSchema[list[int] | None] = None  # first and last chunk index
    regions: SkipJsonSchema[list[PageRegions] | None] = None  # offsets in content


class PageText(BaseModel):
    page: int
    text: str
    headings: SkipJsonSchema[list[str] | None] = None  # detailed: the sections that begin on the page
    size: SkipJsonSchema[list[float] | None] = None  # detailed: [width, height] in points
    boxes: SkipJsonSchema[list[list[float]] | None] = None  # detailed: [start, end, x0, top, x1, bottom]
    # The page's running head, foot and number as printed: in no passage, section or page citation.
    furniture: SkipJsonSchema[list[str] | None] = None


class PagesOutput(ToolOutput):
    model_config = ConfigDict(
        json_schema_extra={"description": "'detailed' adds each page's headings, size, boxes; chunk_index: units."}
    )
    doc_id: str | None = None
    name: str | None = None
    page_count: int | None = None
    pages: list[PageText] | None = None
    truncated: bool | None = None
    next_page: int | None = None
    next_start_char: int | None = None
    units: SkipJsonSchema[list[UnitItem] | None] = None  # the passage's tables (Markdown) and figures, whole
    images: SkipJsonSchema[list[ShownImage] | None] = None  # what the image content shows, in order


def doc_name(doc: DocumentStructure) -> str:
    return short_name(doc.key or doc.source)


async def read_structure(
    state: AppState, collection: str | None, doc_id: str | None, key: str | None
) -> DocumentStructure:
    """The document a navigation tool names (by doc_id or key), with its map: one gateway read."""
    name = state.collection(collection)
    return await state.library.structure(name, await resolve_doc_id(state, name, doc_id, key))


def _norm(title: str) -> str:
    return " ".join(title.split()).casefold()


# A heading's own numbering, printed before its title ("Part II", "Chapter 3", "Appendix A", "3.2.1", "IV."): an agent
# asks for "Plotting styles" where the manual prints "Part II Plotting styles".
_LABEL = r"(?i:part|chapter|section|appendix|annex|book)"
_NUMBERING = re.compile(rf"^(?:{_LABEL}\s+\S+|(?:{_LABEL}\s+)?(?:[IVXLCDM]+|\d+(?:\.\d+)*|[A-Z](?=\.))\.?)\s+")


def _bare(title: str) -> str:
    """The title without the numbering printed before it; the title itself when nothing would be left."""
    return _norm(_NUMBERING.sub("", " ".join(title.split()), count=1)) or _norm(title)


def _matching(doc: DocumentStructure, wanted: list[str], norm: Callable[[str], str]) -> list[OutlineSection]:
    want = [norm(t) for t in wanted]
    return [s for s in doc.sections if want and [norm(t) for t in s.heading_path[-len(want) :]] == want]


def find_section(doc: DocumentStructure, heading: list[str] | None, position: int | None) -> OutlineSection:
    """The section at an outline position, or the one whose heading path ends with `heading`."""
    if (heading is None) == (position is None):
        raise ToolFailure(
            "Give either heading or position (not both, not neither).",
            "Both come from get_document_outline: heading is a section's title (or its path from the top).",
            code="INVALID_ARGUMENT",
        )
    if position is not None:
        if position >= len(doc.sections):
            raise ToolFailure(
                f"'{doc_name(doc)}' has {len(doc.sections)} sections (positions 0-{len(doc.sections) - 1}).",
                "Use get_document_outline to see them.",
                code="SECTION_NOT_FOUND",
            )
        return doc.sections[position]
    # The titles as printed first; only where none matches, the titles without their numbering ("Part II").
    found = _matching(doc, heading or [], _norm) or _matching(doc, heading or [], _bare)
    if len(found) > 1:  # the whole path the outline gives ("Introduction" at the top) is that section, not a deeper
        found = [s for s in found if len(s.heading_path) == len(heading or [])] or found  # "... > Introduction"
    if len(found) == 1:
        return found[0]
    if not found:
        raise ToolFailure(
            f"No section of '{doc_name(doc)}' has the heading {' > '.join(heading or [])!r}.",
            "Use get_document_outline to see the headings (or pass position).",
            code="SECTION_NOT_FOUND",
        )
    raise ToolFailure(
        f"{len(found)} sections of '{doc_name(doc)}' have the heading {' > '.join(heading or [])!r}: positions "
        f"{', '.join(str(s.position) for s in found[:20])}.",
        "Pass position, or a longer heading path (the titles above it first).",
        code="AMBIGUOUS_SECTION",
        details={"positions": [s.position for s in found]},
    )


def section_end(doc: DocumentStructure, section: OutlineSection, subsections: bool) -> OutlineSection:
    """The last section a read of `section` covers: itself, or its last subsection."""
    last = section
    if subsections and section.heading_path:
        depth = len(section.heading_path)
        for later in doc.sections[section.position + 1 :]:
            if later.heading_path[:depth] != section.heading_path:
                break
            last = later
    return last


def page_ranges(doc: DocumentStructure, first: int, last: int) -> list[tuple[int, int, int]]:
    """(page, start, end) in the content of each page first..last that holds any text."""
    starts = doc.page_starts
    ranges = []
    for i, start in enumerate(starts):
        if first <= start.page <= last:
            end = starts[i + 1].offset if i + 1 < len(starts) else len(doc.content)
            ranges.append((start.page, start.offset, end))
    return ranges


def page_texts(doc: DocumentStructure, first: int, last: int) -> list[PageText]:
    """The text of each page first..last that holds any (a page begins where the previous one ends)."""
    return [PageText(page=page, text=doc.content[start:end]) for page, start, end in page_ranges(doc, first, last)]


def located_page(doc: DocumentStructure, page: PageText, start: int) -> None:
    """Fill a page's size and boxes (offsets in its text as shown, which begins at ``start`` in the content)."""
    on_page = [r for r in doc.regions or [] if r.page == page.page]
    for found in grouped(on_page, doc.page_sizes, shift=start, limit=len(page.text)):
        page.size, page.boxes = found.size, found.boxes


def section_regions(doc: DocumentStructure, start: int, end: int, shown: int) -> list[PageRegions] | None:
    """The regions of content start..end, as offsets in the ``shown`` characters an answer gives from ``start``."""
    if doc.regions is None:
        return None
    inside = [r for r in doc.regions if r.end > start and r.start < end]
    return grouped(inside, doc.page_sizes, shift=start, limit=shown)


def unlocated(doc: DocumentStructure) -> bool:
    return doc.file_type in PAGED_FILE_TYPES and doc.regions is None


def register(server: MCPServer, state: AppState) -> None:  # three tools, one reading each
    tool = profile_tools(server, render_error)

    @tool(READ)
    async def get_document_outline(
        doc_id: DocRefArg = None,
        key: KeyArg = None,
        collection: CollectionArg = None,
        offset: OffsetArg = 0,
        response_format: FormatArg = "concise",
    ) -> Annotated[CallToolResult, OutlineOutput]:
        """A document's sections in order: heading, level, page, size in tokens."""
        doc = await read_structure(state, collection, doc_id, key)
        state.library.budget.check_start(
            offset,
            len(doc.sections),
            f"offset {offset}: '{doc_name(doc)}' has {len(doc.sections)} sections",
            f"Ask for offset 0-{len(doc.sections) - 1}.",
        )
        detailed = response_format == "detailed"
        entries = [
            OutlineEntry(
                position=s.position, title=s.heading_path[-1] if s.heading_path else PREAMBLE,
                level=s.heading_levels[-1] if s.heading_levels else None, depth=len(s.heading_path), page=s.page,
                tokens=estimate_tokens(doc.content[s.start : s.end]),
                heading_path=s.heading_path if detailed else None, page_end=s.page_end if detailed else None,
            )
            for s in doc.sections[offset:]
        ]  # fmt: skip
        answer = OutlineOutput(success=True, doc_id=doc.doc_id, name=doc_name(doc), levels_known=doc.levels_known,
                               sections=entries, total=len(doc.sections))  # fmt: skip
        state.library.budget.trim(answer, "sections")
        shown = len(answer.sections or [])
        more = offset + shown < len(doc.sections)
        answer.next_offset = offset + shown if more else None
        answer.message = f"Sections {offset}-{offset + shown - 1} of {len(doc.sections)} of '{doc_name(doc)}'."
        if more:
            answer.message += f" Call again with offset={offset + shown} for the rest."
        if not doc.levels_known:
            # No re-ingest advice: a PDF without bookmarks has its levels guessed again, so the answer would not
            # change (issue 51, point 5); only a document indexed before levels were kept would gain from it.
            answer.message += (" Heading levels are not known (the document declares none, e.g. a PDF without"
                               " bookmarks): depth is the nesting the layout suggests.")  # fmt: skip
        return result(answer)

    @tool(READ)
    async def get_document_section(
        doc_id: DocRefArg = None,
        key: KeyArg = None,
        collection: CollectionArg = None,
        heading: Annotated[
            list[Annotated[str, Field(max_length=300)]] | None,
            Field(default=None, min_length=1, max_length=16, description="A title, or titles from the top down."),
        ] = None,
        position: Annotated[int | None, Field(default=None, ge=0, description="From the outline.")] = None,
        subsections: Annotated[bool, Field(default=True)] = True,
        start_char: StartCharArg = 0,
        response_format: FormatArg = "concise",
    ) -> Annotated[CallToolResult, SectionOutput]:
        """One section's Markdown (with its subsections unless false), by heading or outline position."""
        doc = await read_structure(state, collection, doc_id, key)
        section = find_section(doc, heading, position)
        last = section_end(doc, section, subsections)
        text = doc.content[section.start : last.end]
        state.library.budget.check_start(
            start_char,
            len(text),
            f"start_char {start_char}: the section holds {len(text)} characters",
            "Read it from start_char=0, or the next section by its position.",
        )
        content, truncated = state.library.budget.window(text, start_char)
        pages = [p for s in doc.sections[section.position : last.position + 1] for p in (s.page, s.page_end) if p]
        answer = SectionOutput(
            success=True, doc_id=doc.doc_id, name=doc_name(doc), position=section.position,
            heading_path=section.heading_path, page=min(pages) if pages else None,
            page_end=max(pages) if pages else None, content=content, truncated=truncated or None,
            next_start_char=start_char + len(content) if truncated else None,
            heading_levels=section.heading_levels if response_format == "detailed" else None,
            chunks=[section.chunk_start, last.chunk_end] if response_format == "detailed" else None,
            regions=section_regions(doc, section.start + start_char, last.end, len(content))
            if response_format == "detailed" else None,
            message=f"'{' > '.join(section.heading_path) or PREAMBLE}' of '{doc_name(doc)}': characters "
            f"{start_char}-{start_char + len(content)} of {len(text)}.",
        )  # fmt: skip
        if truncated:
            answer.message = f"{answer.message} Call again with start_char={start_char + len(content)} for the rest."
        if response_format == "detailed" and unlocated(doc):
            answer.message = f"{answer.message}{UNLOCATED}"
        return result(answer)

    @tool(READ)
    async def get_document_pages(
        first_page: Annotated[int, Field(ge=1)],
        doc_id: DocRefArg = None,
        key: KeyArg = None,
        collection: CollectionArg = None,
        last_page: Annotated[int | None, Field(default=None, ge=1, description="Default: first_page.")] = None,
        start_char: StartCharArg = 0,
        response_format: FormatArg = "concise",
        chunk_index: Annotated[int | None, Field(default=None, ge=0, description="A search result's.")] = None,
        image: Annotated[Literal["page", "figure"] | None, Field(default=None)] = None,
        query: Annotated[str | None, Field(default=None, max_length=MAX_QUERY_CHARS)] = None,
    ) -> Annotated[CallToolResult, PagesOutput]:
        """The text of pages first_page..last_page of a PDF or slides, page by page. chunk_index adds that
        passage's tables and figures whole; image='page' adds first_page as a picture with it marked (the search's
        query: its cited sentences apart), 'figure' its figures (else first_page's)."""
        name = state.collection(collection)
        doc = await read_structure(state, collection, doc_id, key)
        answer = read_pages(state, doc, first_page, last_page, start_char, detailed=response_format == "detailed")
        passage = await state.library.passage(name, doc.doc_id, chunk_index) if chunk_index is not None else None
        if passage is not None:
            answer.units = whole_units(doc, passage) or None
        if image is None:
            return result(answer)
        pictures, answer.images = [], []
        if image == "page":
            picture = await state.library.page_image(name, doc.doc_id, first_page, chunk=chunk_index, query=query)
            pictures.append(image_content(picture))
            answer.images.append(ShownImage(page=first_page, kind="page", marked=picture.marked if passage else None,
                                            cited=picture.cited or None, cited_box=page_share(picture),
                                            passage_pages=picture.passage_pages or None))  # fmt: skip
            note = page_note(first_page, last_page, passage is not None, picture.marked, picture.passage_pages,
                             unlocated=unlocated(doc), cited=picture.cited)  # fmt: skip
            answer.message = f"{answer.message}{note}"
        else:
            for unit in figures_of(doc, passage, first_page):
                picture = await state.library.page_image(name, doc.doc_id, unit.page, crop=crop_of(unit))
                pictures.append(image_content(picture))
                answer.images.append(ShownImage(page=unit.page, kind="figure"))
            answer.message = f"{answer.message} {len(pictures)} figure(s) as pictures, in the order of images."
        shown = result(answer)
        shown.content.extend(pictures)
        return shown


def page_count(doc: DocumentStructure, first_page: int, last: int) -> int:
    """The document's page count, once pages first_page..last are known to be there to read."""
    if last < first_page:
        raise ToolFailure(f"last_page ({last}) is before first_page ({first_page}).",
                          "Give first_page <= last_page.", code="INVALID_ARGUMENT")  # fmt: skip
    if not doc.page_starts:
        raise ToolFailure(
            f"'{doc_name(doc)}' has no pages (a {doc.file_type} document).",
            "Read it by section (get_document_outline, get_document_section) or with get_document.",
            code="NO_PAGES",
        )
    count = doc.page_count or doc.page_starts[-1].page
    if first_page > count:
        raise ToolFailure(f"'{doc_name(doc)}' has {count} pages; there is no page {first_page}.",
                          f"Ask for pages 1-{count}.", code="PAGE_NOT_FOUND")  # fmt: skip
    return count


def read_pages(
    state: AppState, doc: DocumentStructure, first_page: int, last_page: int | None, start_char: int, *, detailed: bool
) -> PagesOutput:
    """Pages first_page..last_page of a document's text, within the response budget (the text of the tool)."""
    last = last_page or first_page
    count = page_count(doc, first_page, last)
    ranges = page_ranges(doc, first_page, last)
    printed = page_furniture(doc)
    pages = [
        PageText(page=page, text=doc.content[start:end], furniture=printed.get(page)) for page, start, end in ranges
    ]
    if pages and pages[0].page == first_page:
        state.library.budget.check_start(
            start_char,
            len(pages[0].text),
            f"start_char {start_char}: page {first_page} holds {len(pages[0].text)} characters",
            f"Read page {first_page} from start_char=0, or the next page.",
        )
    if detailed:
        for page in pages:
            page.headings = [" > ".join(s.heading_path) for s in doc.sections if s.page == page.page and
                             s.heading_path and doc.content[s.start : s.end].lstrip().startswith("#")]  # fmt: skip
    budget, shown, cut = state.library.budget.chars, list[PageText](), None
    for i, (page, (_, offset, _)) in enumerate(zip(pages, ranges, strict=True)):
        skip = start_char if i == 0 else 0
        text = page.text[skip : skip + budget]
        shown.append(PageText(page=page.page, text=text, headings=page.headings, furniture=page.furniture))
        if detailed:
            located_page(doc, shown[-1], offset + skip)
        budget -= len(text)
        if skip + len(text) < len(page.text):
            cut = (page.page, skip + len(text))
            break
        if budget <= 0 and i + 1 < len(pages):
            cut = (pages[i + 1].page, 0)
            break
    answer = PagesOutput(success=True, doc_id=doc.doc_id, name=doc_name(doc), page_count=count, pages=shown,
                         truncated=True if cut else None, next_page=cut[0] if cut else None,
                         next_start_char=cut[1] if cut else None)  # fmt: skip
    held = [p.page for p in shown]
    answer.message = (f"Pages {held[0]}-{held[-1]} of '{doc_name(doc)}' ({count} pages)." if held
                      else f"Pages {first_page}-{last} of '{doc_name(doc)}' hold no text.")  # fmt: skip
    if cut:
        answer.message += f" Call again with first_page={cut[0]}, start_char={cut[1]} for the rest."
    if detailed and unlocated(doc):
        answer.message += UNLOCATED
    return answer


def page_furniture(doc: DocumentStructure) -> dict[int, list[str]]:
    """Each page's furniture lines, running head first."""
    found: dict[int, list[str]] = {}
    for line in doc.furniture or []:
        found.setdefault(line.page, []).append(line.text)
    return found


def page_note(
    page: int,
    last_page: int | None,
    asked: bool,
    marked: int,
    passage_pages: list[int],
    *,
    unlocated: bool,
    cited: int = 0,
) -> str:
    """What the page picture shows, and where to look when the passage is not on it. Ingesting again is advised
    only where it locates the passage: a document indexed before boxes were kept (a test follows the advice)."""
    note = f" Page {page} is the first image" + (" (one page a call)." if last_page and last_page > page else ".")
    if asked and marked:
        note += f" The passage is marked on it ({marked} boxes)."
        if cited:
            note += f" The {cited} lines of the sentences cited for the query are marked in full, the rest lighter."
    elif asked and passage_pages:
        note += (
            f" The passage lies on page(s) {', '.join(map(str, passage_pages))}: ask for first_page={passage_pages[0]}."
        )
    elif asked and unlocated:
        note += " The passage has no boxes (indexed before they were kept): ingest the document again with force=true."
    elif asked:
        note += " The passage has no printed text of its own to mark (a bookmark's title its page does not print)."
    return note


def figures_of(doc: DocumentStructure, passage: SearchHit | None, page: int) -> list[Unit]:
    """The figures a passage holds, else those on ``page``; at most MAX_FIGURES."""
    found = [u for u in (passage.units or []) if u.kind == "figure"] if passage is not None else [
        u for u in doc.units or [] if u.kind == "figure" and u.page == page]  # fmt: skip
    if not found:
        where = "the passage" if passage is not None else f"page {page}"
        raise ToolFailure(
            f"No figure of '{doc_name(doc)}' is known on {where}.",
            "Ask for image='page' to see the whole page, or search for the figure's caption.",
            code="FIGURE_NOT_FOUND",
        )
    return found[:MAX_FIGURES]
