"""The docs_server profile against shared/specs/docs-server-api.md, through a real MCP client session."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from .conftest import SECTIONS

pytestmark = pytest.mark.timeout(300)

SPEC_TOOLS = {
    "search_documents", "get_file_details", "remove_file", "fetch_repo", "fetch_file", "get_job_status",
    "list_active_jobs",
}  # fmt: skip
SPEC_CODES = {
    "INVALID_PATH", "UNSUPPORTED_FORMAT", "INDEX_NOT_FOUND", "INVALID_REPO_URL", "REPOMIX_FAILED", "REPO_TOO_LARGE",
    "INVALID_URL", "DOWNLOAD_FAILED", "FILE_TOO_LARGE", "PROCESSING_FAILED",
}  # fmt: skip
JOB_KEYS = {"id", "type", "status", "progress", "currentStep", "startTime"}


def options_schema(tool: Any, name: str = "options") -> tuple[dict, dict]:
    prop = tool.input_schema["properties"][name]  # written in place: strict clients refuse $ref (docs/schemas.md)
    return prop, prop["properties"]


async def tools(client: Client) -> dict[str, Any]:
    return {tool.name: tool for tool in (await client.list_tools()).tools}


async def error_of(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    response = await client.call_tool(tool, arguments)
    assert response.is_error, response.structured_content
    error = response.structured_content["error"]
    assert set(error) <= {"code", "message", "suggestion"} and error["message"], error
    assert error["code"] in SPEC_CODES | {"JOB_NOT_FOUND", "INVALID_INPUT"}
    return error


async def run_job(client: Client, job_id: str, timeout: float = 180) -> tuple[dict[str, Any], list[float]]:
    """Poll get_job_status until the job ends; returns the final job and every progress value seen."""
    seen: list[float] = []
    for _ in range(int(timeout / 0.1)):
        job = (await client.call_tool("get_job_status", {"jobId": job_id})).structured_content
        assert set(job) >= JOB_KEYS, job
        seen.append(job["progress"])
        if job["status"] != "running":
            return job, seen
        await asyncio.sleep(0.1)
    raise AssertionError(f"job {job_id} still running: {job}")


async def fetch(client: Client, url: str, filename: str, **extra: Any) -> dict[str, Any]:
    started = (await client.call_tool("fetch_file", {"url": url, "filename": filename, **extra})).structured_content
    assert started["type"] == "fetch_file" and started["status"] == "running" and started["jobId"]
    job, _ = await run_job(client, started["jobId"])
    return job


@pytest.fixture(scope="module")
async def guide(docs_state: Any, web_port: int) -> dict[str, Any]:
    """guide.md fetched and indexed once for the module (its job result)."""
    from ingestion_mcp.server import build_server

    async with Client(build_server(docs_state)) as client:
        job = await fetch(client, f"http://127.0.0.1:{web_port}/guide.md", "guide.md")
    assert job["status"] == "completed", job
    return job["result"]


async def test_tool_names_parameters_defaults_and_bounds(docs_mcp: Any) -> None:
    async with docs_mcp() as docs_client:
        found = await tools(docs_client)
        assert set(found) == SPEC_TOOLS
        search = found["search_documents"]
        assert search.input_schema["required"] == ["query"]
        prop, options = options_schema(search)
        assert prop["default"] == {"limit": 10, "minScore": 0.7, "includeMetadata": True}
        assert (options["limit"]["minimum"], options["limit"]["maximum"]) == (1, 100)
        assert (options["minScore"]["minimum"], options["minScore"]["maximum"]) == (0, 1)
        details = found["get_file_details"].input_schema
        assert details["required"] == ["filePath"] and details["properties"]["contextSize"]["default"] == 3
        assert (
            details["properties"]["chunkIndex"]["type"] == "integer"
            and "default" not in details["properties"]["chunkIndex"]
        )
        assert found["remove_file"].input_schema["required"] == ["filePath"]
        repo_prop, repo = options_schema(found["fetch_repo"])
        assert found["fetch_repo"].input_schema["required"] == ["repoUrl"]
        assert repo_prop["default"]["maxFiles"] == 1000 and repo_prop["default"]["showLineNumbers"] is True
        assert repo_prop["default"]["includePatterns"] == ["*.txt", "*.md", "*.json", "*.rst", "*.yaml", "*.yml"]
        assert repo_prop["default"]["excludePatterns"] == ["**/node_modules/**", "**/.git/**"]
        assert repo["outputStyle"]["enum"] == ["markdown"] and repo_prop["default"]["removeComments"] is False
        file_prop, _ = options_schema(found["fetch_file"])
        assert file_prop["default"] == {"overwrite": True, "indexAfterSave": True, "maxFileSizeMB": 10}
        assert set(found["fetch_file"].input_schema["required"]) == {"url", "filename"}
        assert found["get_job_status"].input_schema["required"] == ["jobId"]
        assert found["list_active_jobs"].input_schema.get("properties") == {}


async def test_annotations_are_honest(docs_mcp: Any) -> None:
    async with docs_mcp() as docs_client:
        found = await tools(docs_client)
        for name in ("search_documents", "get_file_details", "get_job_status", "list_active_jobs"):
            assert found[name].annotations.read_only_hint is True, name
        assert found["remove_file"].annotations.destructive_hint is True
        for name in ("fetch_file", "fetch_repo"):
            assert found[name].annotations.open_world_hint is True and found[name].annotations.read_only_hint is False


async def test_search_returns_document_chunks_by_cosine_score(docs_mcp: Any, guide: dict) -> None:
    async with docs_mcp() as docs_client:
        query = {"query": "how do honey bees tell others where the flowers are", "options": {"minScore": 0.3}}
        out = (await docs_client.call_tool("search_documents", query)).structured_content
        assert len(out["result"]) >= 1
        top = out["result"][0]
        assert set(top) == {"id", "filePath", "chunkIndex", "content", "score", "metadata"}
        assert "waggle dance" in top["content"] and top["filePath"] == guide["filePath"]
        assert set(top["metadata"]) == {"fileSize", "lastModified", "chunkOffset", "tokenCount"}
        assert top["metadata"]["fileSize"] == Path(guide["filePath"]).stat().st_size
        scores = [r["score"] for r in out["result"]]
        assert scores == sorted(scores, reverse=True) and all(0.3 <= s <= 1 for s in scores)


async def test_min_score_default_drops_weak_matches_and_metadata_is_optional(docs_mcp: Any, guide: dict) -> None:
    async with docs_mcp() as docs_client:
        weak = (await docs_client.call_tool("search_documents", {"query": "zxqv plomb"})).structured_content
        assert weak == {"result": []}
        loose = {"query": "how do bees find flowers", "options": {"minScore": 0, "limit": 2, "includeMetadata": False}}
        out = (await docs_client.call_tool("search_documents", loose)).structured_content
        assert len(out["result"]) == 2 and all("metadata" not in r for r in out["result"])
        # minScore 0 asks for weak matches, not for chunks that match in no way (score 0 in every part). Letters
        # that are no word: "zxqv plomb" ("plomb" is French) sits at the calibration's floor against the compilers
        # chunk, below it with fp32 vectors and 0.003 cosine above with int8 ones (a weak match, hybrid 0.0027).
        nothing = {"query": "xq zv jk", "options": {"minScore": 0, "limit": 2}}
        assert (await docs_client.call_tool("search_documents", nothing)).structured_content == {"result": []}


async def test_search_and_active_jobs_answer_arrays(docs_mcp: Any, guide: dict) -> None:
    """The spec answers both with an array: the text block is that JSON array, and structuredContent (an object
    in MCP) wraps it as {"result": [...]}, as the MCP SDK does for a tool returning a list."""
    async with docs_mcp() as docs_client:
        query = {"query": "how do honey bees tell others where the flowers are", "options": {"minScore": 0.3}}
        found = await docs_client.call_tool("search_documents", query)
        chunks = json.loads(found.content[0].text)
        assert isinstance(chunks, list) and "waggle dance" in chunks[0]["content"]
        assert found.structured_content == {"result": chunks}
        active = await docs_client.call_tool("list_active_jobs", {})
        jobs = json.loads(active.content[0].text)
        assert isinstance(jobs, list) and active.structured_content == {"result": jobs}
        listed = await tools(docs_client)
        for name in ("search_documents", "list_active_jobs"):
            schema = listed[name].output_schema
            # result is optional: a failed call answers {"error": {...}} and must validate too
            assert set(schema["properties"]) == {"result", "error"}, name
            assert schema["properties"]["result"]["type"] == "array", name


async def test_out_of_range_options_are_refused(docs_mcp: Any) -> None:
    async with docs_mcp() as docs_client:
        for options in ({"limit": 0}, {"limit": 101}, {"minScore": 1.5}):
            response = await docs_client.call_tool("search_documents", {"query": "bees", "options": options})
            assert response.is_error, options


async def test_get_file_details_whole_file_and_chunk_window(docs_mcp: Any, guide: dict) -> None:
    async with docs_mcp() as docs_client:
        whole = (await docs_client.call_tool("get_file_details", {"filePath": guide["filePath"]})).structured_content
        assert whole["filePath"] == guide["filePath"] and whole["totalChunks"] == guide["chunksCreated"] >= 5
        assert all(title in whole["content"] for title in SECTIONS)
        window = await docs_client.call_tool(
            "get_file_details", {"filePath": guide["filePath"], "chunkIndex": 2, "contextSize": 1}
        )
        out = window.structured_content
        assert [c["chunkIndex"] for c in out["chunks"]] == [1, 2, 3]
        assert out["content"] == out["chunks"][1]["content"] and out["chunkIndex"] == 2
        edge = await docs_client.call_tool("get_file_details", {"filePath": guide["filePath"], "chunkIndex": 0})
        assert [c["chunkIndex"] for c in edge.structured_content["chunks"]] == [0, 1, 2, 3]


async def test_get_file_details_errors(docs_mcp: Any, guide: dict) -> None:
    async with docs_mcp() as docs_client:
        assert (await error_of(docs_client, "get_file_details", filePath="guide.md"))["code"] == "INVALID_PATH"
        missing = await error_of(docs_client, "get_file_details", filePath="/nowhere/else.md")
        assert missing["code"] == "INDEX_NOT_FOUND" and "fetch_file" in missing["suggestion"]
        beyond = await error_of(docs_client, "get_file_details", filePath=guide["filePath"], chunkIndex=999)
        assert beyond["code"] == "INDEX_NOT_FOUND" and f"has {guide['chunksCreated']} chunks" in beyond["message"]


async def test_remove_file_deletes_its_chunks(docs_mcp: Any, web_port: int, caplog: pytest.LogCaptureFixture) -> None:
    async with docs_mcp() as docs_client:
        job = await fetch(docs_client, f"http://127.0.0.1:{web_port}/removable.md", "removable.md")
        path = job["result"]["filePath"]
        with caplog.at_level(logging.INFO, logger="ingestion_mcp.audit"):
            removed = (await docs_client.call_tool("remove_file", {"filePath": path})).structured_content
            assert removed["success"] is True and removed["chunksDeleted"] == job["result"]["chunksCreated"] >= 1
            assert f"{removed['chunksDeleted']} chunks deleted" in removed["message"]
            assert (await error_of(docs_client, "remove_file", filePath=path))["code"] == "INDEX_NOT_FOUND"
        assert Path(path).exists()  # the index forgets the file; the file itself stays
    # Both deletes are on the audit record, the second (a file no longer indexed) as a failure.
    records = [
        r.fields for r in caplog.records if r.name == "ingestion_mcp.audit" and r.fields["tool"] == "remove_file"
    ]
    assert [(f["action"], f["result"]) for f in records] == [
        ("delete_document", "ok"),
        ("delete_document", "failed:INDEX_NOT_FOUND"),
    ], records
    assert records[1]["document"] == path, records  # the one no longer indexed is named as asked


async def test_fetch_file_job_progress_rises_to_completed(docs_mcp: Any, docs_state: Any, web_port: int) -> None:
    async with docs_mcp() as docs_client:
        started = await docs_client.call_tool(
            "fetch_file", {"url": f"http://127.0.0.1:{web_port}/slow/short.md", "filename": "short", "docFolder": "sub"}
        )
        job_id = started.structured_content["jobId"]
        active = (await docs_client.call_tool("list_active_jobs", {})).structured_content
        assert job_id in [j["id"] for j in active["result"]]
        job, seen = await run_job(docs_client, job_id)
        assert seen == sorted(seen) and seen[0] < 100 and job["progress"] == 100
        assert job["status"] == "completed" and job["endTime"] and job["currentStep"] == "done"
        saved = Path(job["result"]["filePath"])
        assert saved == docs_state.settings.documents_folder / "sub" / "short.md" and saved.is_file()
        assert job["result"]["indexed"] is True and job["result"]["status"] in ("indexed", "skipped")
        active = (await docs_client.call_tool("list_active_jobs", {})).structured_content
        assert job_id not in [j["id"] for j in active["result"]]


async def test_fetch_file_without_indexing_and_html(docs_mcp: Any, web_port: int) -> None:
    async with docs_mcp() as docs_client:
        kept = await fetch(
            docs_client, f"http://127.0.0.1:{web_port}/page.html", "kites", options={"indexAfterSave": False}
        )
        assert kept["status"] == "completed" and kept["result"]["indexed"] is False
        assert kept["result"]["filePath"].endswith("kites.html")


async def test_fetch_file_failures_carry_spec_codes(docs_mcp: Any, web_port: int) -> None:
    async with docs_mcp() as docs_client:
        missing = await fetch(docs_client, f"http://127.0.0.1:{web_port}/nope.pdf", "nope.pdf")
        assert missing["status"] == "failed" and missing["errorCode"] == "DOWNLOAD_FAILED" and "404" in missing["error"]
        too_big = await fetch(
            docs_client, f"http://127.0.0.1:{web_port}/guide.md", "big.md", options={"maxFileSizeMB": 0.001}
        )
        assert too_big["errorCode"] == "FILE_TOO_LARGE"
        blocked = await fetch(docs_client, "http://169.254.169.254/latest/meta-data", "meta.txt")
        assert blocked["errorCode"] == "INVALID_URL"
        assert (await error_of(docs_client, "fetch_file", url="not a url", filename="a.md"))["code"] == "INVALID_URL"
        assert (await error_of(docs_client, "fetch_file", url="ftp://h/a.md", filename="a.md"))["code"] == "INVALID_URL"
        escape = await error_of(
            docs_client, "fetch_file", url=f"http://127.0.0.1:{web_port}/short.md", filename="a.md", docFolder="/etc"
        )
        assert escape["code"] == "INVALID_PATH"


async def test_fetch_repo_indexes_one_markdown_file(docs_mcp: Any, git_repo: Path) -> None:
    async with docs_mcp() as docs_client:
        started = await docs_client.call_tool("fetch_repo", {"repoUrl": git_repo.as_uri(), "branch": "main"})
        assert started.structured_content["type"] == "fetch_repo"
        job, seen = await run_job(docs_client, started.structured_content["jobId"])
        assert job["status"] == "completed", job
        assert seen == sorted(seen) and job["result"]["files"] == 2 and job["result"]["filePath"].endswith(".md")
        query = {"query": "when should apple trees be pruned", "options": {"minScore": 0.3, "limit": 3}}
        hits = (await docs_client.call_tool("search_documents", query)).structured_content["result"]
        assert hits[0]["filePath"] == job["result"]["filePath"] and "dormant" in hits[0]["content"]


async def test_fetch_repo_failures(docs_mcp: Any) -> None:
    async with docs_mcp() as docs_client:
        bad_ref = await error_of(docs_client, "fetch_repo", repoUrl="https://github.com/o/r", branch="--upload-pack=x")
        assert bad_ref["code"] == "INVALID_REPO_URL"
        # What can never be a repository is refused at once, not as a job that fails later.
        for url in ("git@github.com:owner/repo.git", "not a url", "ftp://example.com/repo", "https://"):
            assert (await error_of(docs_client, "fetch_repo", repoUrl=url))["code"] == "INVALID_REPO_URL", url


async def test_hostile_file_paths_get_clean_errors(docs_mcp: Any) -> None:
    async with docs_mcp() as docs_client:
        nul = await error_of(docs_client, "get_file_details", filePath="/tmp/a\x00b.md")
        assert nul["code"] == "INVALID_PATH" and "Internal" not in nul["message"]
        assert (await error_of(docs_client, "remove_file", filePath="/tmp/\x07bell.md"))["code"] == "INVALID_PATH"


async def test_unknown_job_and_empty_index(docs_mcp: Any, app_state: Any) -> None:
    async with docs_mcp() as docs_client:
        # get_job_status fails in the shape of a failed Job: one schema covers both (no anyOf)
        unknown = await docs_client.call_tool("get_job_status", {"jobId": "job_nope"})
        assert unknown.is_error and unknown.structured_content["errorCode"] == "JOB_NOT_FOUND", unknown
        assert "job_nope" in unknown.structured_content["error"]
        from ingestion_mcp.server import build_server

        from .conftest import profile_state

        empty = profile_state(app_state, profiles=["docs_server"], docs_collection="docs_never_indexed")
        async with Client(build_server(empty)) as client:
            empty_index = await error_of(client, "search_documents", query="anything")
            assert empty_index["code"] == "INDEX_NOT_FOUND" and empty_index["message"] == "Nothing is indexed yet."
