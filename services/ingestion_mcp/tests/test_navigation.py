"""Reading a long document in parts through a real MCP client: outline, section, pages (issue 30, point 1).

The document is ingested through the real pipeline (chunker, gateway with the real model, Milvus Lite); its
sections are long enough for several chunks each, so a section is read back from chunks with overlaps.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.timeout(300)

PARAGRAPH = (
    "The {topic} programme was reviewed by the board in a long session that went over every figure twice. "
    "Each line of the budget was read aloud, questioned and written down with its owner and its due date. "
)


def _body(topic: str, paragraphs: int) -> str:
    return "\n\n".join(PARAGRAPH.format(topic=f"{topic} {i}") for i in range(paragraphs))


HANDBOOK = (
    f"Foreword before any heading.\n\n# Handbook\n\n{_body('opening', 2)}\n\n"
    f"## Costs\n\n{_body('costs', 20)}\n\n### Travel\n\n{_body('travel', 20)}\n\n"
    f"### Notes\n\n{_body('travel notes', 1)}\n\n## Staff\n\n{_body('staff', 4)}\n\n"
    f"### Notes\n\n{_body('staff notes', 1)}\n\n## Appendix\n\n### Tables\n\n{_body('tables', 2)}\n"
)


async def _read_all(call_tool, client, tool: str, **arguments: object) -> tuple[str, dict]:
    """Every part of a paged answer's content, joined, and the first answer."""
    first = out = await call_tool(client, tool, **arguments)
    text = out["content"]
    while out.get("truncated"):
        out = await call_tool(client, tool, **arguments, start_char=out["next_start_char"])
        text += out["content"]
    return text, first


async def test_outline_levels_and_sections_rebuild_the_document(connect, call_tool) -> None:
    async with connect() as client:
        ingested = await call_tool(client, "ingest_text", text=HANDBOOK, name="handbook", collection="nav",
                                   response_format="detailed")  # fmt: skip
        doc_id = ingested["doc_id"]
        assert ingested["chunks_created"] > 8
        outline = await call_tool(client, "get_document_outline", key="handbook", collection="nav")
        assert outline["levels_known"] is True and outline["doc_id"] == doc_id
        assert [(s["title"], s.get("level"), s["depth"]) for s in outline["sections"]] == [
            ("(before the first heading)", None, 0), ("Handbook", 1, 1), ("Costs", 2, 2), ("Travel", 3, 3),
            ("Notes", 3, 3), ("Staff", 2, 2), ("Notes", 3, 3), ("Appendix", 2, 2), ("Tables", 3, 3),
        ]  # fmt: skip
        assert all(s["tokens"] > 0 for s in outline["sections"])

        whole, _ = await _read_all(call_tool, client, "get_document", doc_id=doc_id, collection="nav")
        parts = [
            (await _read_all(call_tool, client, "get_document_section", doc_id=doc_id, collection="nav",
                             position=s["position"], subsections=False))[0]
            for s in outline["sections"]
        ]  # fmt: skip
        assert "".join(parts) == whole  # outline + sections read the document exactly, nothing twice

        costs, first = await _read_all(call_tool, client, "get_document_section", key="handbook",
                                       collection="nav", heading=["Costs"])  # fmt: skip
        assert first["heading_path"] == ["Handbook", "Costs"] and first["truncated"] is True  # over the budget
        assert costs.startswith("## Costs") and "### Travel" in costs and "travel notes 0" in costs
        assert "## Staff" not in costs and costs == whole[whole.index("## Costs") : whole.index("## Staff")]
        own = await call_tool(client, "get_document_section", doc_id=doc_id, collection="nav",
                              heading=["Handbook", "Costs"], subsections=False)  # fmt: skip
        assert "### Travel" not in own["content"]
        detailed = await call_tool(client, "get_document_outline", doc_id=doc_id, collection="nav",
                                   response_format="detailed")  # fmt: skip
        assert detailed["sections"][3]["heading_path"] == ["Handbook", "Costs", "Travel"]
        levels = await call_tool(client, "get_document_section", doc_id=doc_id, collection="nav", position=3,
                                 response_format="detailed")  # fmt: skip
        assert levels["heading_levels"] == [1, 2, 3] and levels["chunks"][0] <= levels["chunks"][1]
        notes = await call_tool(client, "get_document_section", doc_id=doc_id, collection="nav",
                                heading=["Staff", "notes"])  # fmt: skip
        assert "staff notes 0" in notes["content"] and notes["position"] == 6
        # A heading with no text of its own before its subsection travels in the subsection's first chunk; it is
        # still a section of the outline, read with its subsections.
        appendix = await call_tool(client, "get_document_section", key="handbook", collection="nav",
                                   heading=["Appendix"])  # fmt: skip
        assert appendix["content"].startswith("## Appendix\n\n### Tables") and "tables 1" in appendix["content"]
        bare = await call_tool(client, "get_document_section", key="handbook", collection="nav",
                               heading=["Appendix"], subsections=False)  # fmt: skip
        assert bare["content"].strip() == "## Appendix"


async def test_every_heading_is_listed_with_or_without_text_of_its_own(connect, call_tool) -> None:
    """A part title straight before its first chapter's title, at the same level (a sibling with no text of its
    own): the chunker joins its line to the chunk after it, whose path does not name it (issue 38, point 3)."""
    guide = (
        f"# Guide\n\n{_body('guide', 1)}\n\n## Part II\n\n## Plotting styles\n\n{_body('styles', 3)}\n\n"
        f"### Boxes\n\n{_body('boxes', 2)}\n\n## Part III\n\n## Terminals\n\n{_body('terminals', 2)}\n"
    )
    async with connect() as client:
        await call_tool(client, "ingest_text", text=guide, name="guide", collection="nav3")
        outline = await call_tool(client, "get_document_outline", key="guide", collection="nav3")
        assert [(s["title"], s.get("level")) for s in outline["sections"]] == [
            ("Guide", 1), ("Part II", 2), ("Plotting styles", 2), ("Boxes", 3), ("Part III", 2), ("Terminals", 2),
        ]  # fmt: skip
        styles = await call_tool(client, "get_document_section", key="guide", collection="nav3",
                                 heading=["Plotting styles"])  # fmt: skip
        assert styles["content"].startswith("## Plotting styles") and styles["content"].rstrip().endswith("boxes 1 "
               "programme was reviewed by the board in a long session that went over every figure twice. Each line of "
               "the budget was read aloud, questioned and written down with its owner and its due date.")  # fmt: skip


async def test_navigation_misuse_is_answered_with_what_to_do(connect, call_tool) -> None:
    async with connect() as client:
        doc_id = (await call_tool(client, "ingest_text", text=HANDBOOK, name="handbook-2", collection="nav2",
                                  response_format="detailed"))["doc_id"]  # fmt: skip
        ambiguous = await call_tool(client, "get_document_section", doc_id=doc_id, collection="nav2", heading=["Notes"])
        assert ambiguous["success"] is False and "positions 4, 6" in ambiguous["error"]
        missing = await call_tool(client, "get_document_section", doc_id=doc_id, collection="nav2", heading=["Lunch"])
        assert missing["success"] is False and "get_document_outline" in missing["suggestion"]
        far = await call_tool(client, "get_document_section", doc_id=doc_id, collection="nav2", position=99)
        assert far["success"] is False and "9 sections" in far["error"]
        both = await call_tool(client, "get_document_outline", doc_id=doc_id, key="handbook-2", collection="nav2")
        assert both["success"] is False and "either doc_id or key" in both["error"]
        neither = await call_tool(client, "get_document", collection="nav2")
        assert neither["success"] is False and "either doc_id or key" in neither["error"]
        unknown = await call_tool(client, "get_document_outline", key="/etc/passwd", collection="nav2")
        assert unknown["success"] is False and "list_documents" in unknown["suggestion"]
        pageless = await call_tool(client, "get_document_pages", doc_id=doc_id, collection="nav2", first_page=1)
        assert pageless["success"] is False and "has no pages" in pageless["error"]
        by_key = await call_tool(client, "find_similar", key="handbook-2", collection="nav2")
        assert by_key["success"] is True and by_key["doc_id"] == doc_id
        # Past the end of every paged read: an error that says where the end is (issue 38), not an empty success.
        past = {
            "get_document_outline": {"offset": 100_000},
            "get_document": {"start_char": 1_000_000_000},
            "get_document_section": {"position": 1, "start_char": 1_000_000},
        }
        for tool, arguments in past.items():
            answer = await call_tool(client, tool, doc_id=doc_id, collection="nav2", **arguments)
            assert answer["success"] is False and "nothing is left to read" in answer["error"], (tool, answer)
            assert answer["suggestion"].startswith(("Read it from start_char=0", "Ask for offset 0-")), (tool, answer)
        assert "offset 0-8" in (await call_tool(client, "get_document_outline", doc_id=doc_id, collection="nav2",
                                                offset=9))["suggestion"]  # fmt: skip
        listing = await call_tool(client, "list_documents", collection="nav2", offset=50)
        assert listing["success"] is False and "holds 1 document(s)" in listing["error"], listing
        # No ceiling on where a read starts (a long manual passes a million characters): far past the end is the
        # same answer, not a validation error.
        far_list = await call_tool(client, "list_documents", collection="nav2", offset=10**12)
        assert far_list["success"] is False and "holds 1 document(s)" in far_list["error"], far_list
        gone = await call_tool(client, "delete_document", key="handbook-2", collection="nav2")
        assert gone["success"] is True and gone["doc_id"] == doc_id
        after = await call_tool(client, "get_document_outline", doc_id=doc_id, collection="nav2")
        assert after["success"] is False and after["error"].startswith(f"Document '{doc_id}' not found")
