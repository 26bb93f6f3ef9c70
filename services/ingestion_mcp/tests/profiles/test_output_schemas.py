"""Every tool of the default profile answers within the outputSchema it lists: each tool is called for real
(concise and detailed, success and error, finished and background) and every structuredContent is checked
with a JSON Schema validator against the schema the client received. The MCP client checks successful
answers on its own; this also checks error answers and fails when a tool is left out. Each answer's text
block is the same result as compact JSON (the agent pays per token)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
from ingestion_mcp.server import build_server
from ingestion_mcp.sources import SourcePolicy
from ingestion_mcp.state import AppState
from mcp import Client
from mcp.types import TextContent

from bench.pdf_scale_docs import report_pdf

from .conftest import SECTIONS, profile_state

COLLECTION = "schema_check"


class Checked:
    """Calls tools and validates each answer against its listed outputSchema."""

    def __init__(self, client: Client, schemas: dict[str, dict[str, Any]]) -> None:
        self.client, self.schemas, self.called = client, schemas, set[str]()

    async def __call__(self, tool: str, **arguments: Any) -> dict[str, Any]:
        answer = await self.client.call_tool(tool, arguments)
        assert answer.structured_content is not None, (tool, answer.content)
        jsonschema.Draft202012Validator(self.schemas[tool]).validate(answer.structured_content)
        compact = json.dumps(answer.structured_content, ensure_ascii=False, separators=(",", ":"))
        assert [block.text for block in answer.content if isinstance(block, TextContent)] == [compact], tool
        self.called.add(tool)
        return answer.structured_content


async def listed(client: Client) -> dict[str, dict[str, Any]]:
    return {tool.name: tool.output_schema or {} for tool in (await client.list_tools()).tools}


async def exercise_library(call: Checked, docs_dir: Path, web_port: int) -> None:
    (docs_dir / "schema_note.md").write_text("# Tides\n\n" + " ".join([SECTIONS["Tides"]] * 3) + "\n")
    await call("create_collection", name=COLLECTION)
    assert (await call("create_collection", name=COLLECTION))["success"] is False
    for fmt in ("concise", "detailed"):
        await call("ingest_document", file_path=str(docs_dir / "schema_note.md"), collection=COLLECTION,
                   response_format=fmt, force=True)  # fmt: skip
        await call("ingest_text", text=" ".join([SECTIONS["Compilers"]] * 3), name="compilers",
                   collection=COLLECTION, response_format=fmt, force=True)  # fmt: skip
        await call("ingest_from_url", url=f"http://127.0.0.1:{web_port}/short.md", collection=COLLECTION,
                   response_format=fmt, force=True)  # fmt: skip
    assert (await call("ingest_document", file_path=str(docs_dir / "absent.md")))["success"] is False
    items = [{"text": SECTIONS["Volcanoes"], "name": "volcanoes"}, {"file_path": "/nope.md"}]
    batch = await call("ingest_batch", collection=COLLECTION, items=items)
    assert batch["failed"] == 1
    (docs_dir / "schema_sync").mkdir(exist_ok=True)
    (docs_dir / "schema_sync" / "a.md").write_text("# Owls\n\n" + " ".join([SECTIONS["Tides"]] * 3) + "\n")
    synced = await call("sync_folder", folder=str(docs_dir / "schema_sync"), collection=COLLECTION)
    assert synced["counts"]["added"] == 1
    assert (await call("sync_folder", folder="/etc", collection=COLLECTION))["success"] is False
    for fmt in ("concise", "detailed"):
        found = await call("search", query="moon tides", collection=COLLECTION, response_format=fmt)
        await call("list_documents", collection=COLLECTION, limit=1, response_format=fmt)
    assert found["results"][0]["why"] and (await call("search", query="x", collection="absent_one"))["success"] is False
    doc_id = found["results"][0]["doc_id"]
    await call("get_collections")
    await call("get_collections", collection=COLLECTION)
    await call("get_document", doc_id=doc_id, collection=COLLECTION)
    await call("get_document", doc_id=doc_id, collection=COLLECTION, response_format="detailed")
    await call("find_similar", doc_id=doc_id, collection=COLLECTION)
    for fmt in ("concise", "detailed"):
        await call("get_document_outline", doc_id=doc_id, collection=COLLECTION, response_format=fmt)
        await call("get_document_section", doc_id=doc_id, collection=COLLECTION, position=0, response_format=fmt)
    (docs_dir / "schema_pages.pdf").write_bytes(report_pdf(2, seed=3)[0])
    paged = await call("ingest_document", file_path=str(docs_dir / "schema_pages.pdf"), collection=COLLECTION)
    assert paged["status"] == "indexed"
    for fmt in ("concise", "detailed"):
        pages = await call("get_document_pages", key=str(docs_dir / "schema_pages.pdf"), collection=COLLECTION,
                           first_page=1, last_page=2, response_format=fmt)  # fmt: skip
        assert [page["page"] for page in pages["pages"]] == [1, 2]
        assert fmt == "concise" or pages["pages"][0]["headings"], pages
    await call("delete_document", doc_id=doc_id, collection=COLLECTION)
    assert (await call("get_document", doc_id=doc_id, collection=COLLECTION))["success"] is False


async def exercise_jobs(call: Checked) -> None:
    started = await call("ingest_text", text=" ".join([SECTIONS["Sourdough"]] * 3), name="bread", collection=COLLECTION)
    batch = await call("ingest_batch", collection=COLLECTION, items=[{"text": SECTIONS["Beekeeping"], "name": "bees"}])
    await call("list_active_jobs")
    await call("cancel_job", job_id=started.get("job_id") or "job_none")
    for job_id in (started.get("job_id"), batch.get("job_id"), "job_none"):
        await call("get_job_status", job_id=job_id or "job_none")


async def test_every_default_tool_answers_within_its_listed_output_schema(
    app_state: AppState, docs_dir: Path, web_port: int
) -> None:
    policy = SourcePolicy.build(allowed_hosts=[f"127.0.0.1:{web_port}"])
    async with Client(build_server(profile_state(app_state, policy=policy))) as client:
        call = Checked(client, await listed(client))
        await exercise_library(call, docs_dir, web_port)
        # Answers sent before the work ends (sync_wait_s=0): job ids, running jobs, a cancelled job.
        async with Client(build_server(profile_state(app_state, sync_wait_s=0))) as background:
            jobs = Checked(background, call.schemas)
            await exercise_jobs(jobs)
        await call("delete_collection", name=COLLECTION, confirm=False)
        await call("delete_collection", name=COLLECTION, confirm=True)
    assert call.called | jobs.called == set(call.schemas)
