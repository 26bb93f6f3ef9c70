"""The core path as users walk it (issue 11): identity, honest dedup, cancellation, progress, failures.

Each journey drives the real server over stdio with the real MCP client; each assertion is something a
user would notice. On the code before the one-pipeline rework every test here fails: two files with one
`source` collapsed into one document, a retag answered `skipped`, a cancelled call kept running,
progress jumped 60 -> 100, a failed fetch left its file behind.
"""

from __future__ import annotations

import itertools
import shutil
from pathlib import Path
from typing import Any

import anyio
import pytest
from journeys import counts, file_server, finished_job, long_text, server_params
from mcp import Client
from service_stack import call

from tests.fixtures.make_fixtures import make_docx

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
ALPHA = "# Alpha policy\n\nThe alpha policy requires every harbour lantern to be inspected each spring by wardens.\n"


def documents(listing: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {doc["name"]: doc for doc in listing["documents"]}


async def test_labels_are_not_identity_and_dedup_is_honest(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "alpha.md").write_text(ALPHA, encoding="utf-8")
    make_docx(
        docs / "gamma.docx",
        "Gamma memo",
        [(None, ["The gamma memo describes how copper violins are tuned in winter."])],
    )
    async with Client(server_params(docs, tmp_path / "data"), read_timeout_seconds=300) as client:
        # Two files from one source stay two documents.
        for name in ("alpha.md", "gamma.docx"):
            out = await call(client, "ingest_document", file_path=str(docs / name), source="sharepoint")
            assert out["success"] and out["status"] == "indexed", out
        # Two messages from one source stay two documents.
        for name, body in (("msg1", "Standup: the lagoon survey starts Monday"), ("msg2", "Standup: glacier data")):
            out = await call(client, "ingest_text", text=f"{body}, as agreed in the planning meeting.", name=name,
                             source="slack")  # fmt: skip
            assert out["status"] == "indexed", out
        assert (await counts(client, "rag_gateway"))[0] == 4
        # Every passage from one source, ranked (min_score 0: no relevance floor; no passage holds both words).
        by_source = await call(client, "search", query="policy memo", filters={"source": "sharepoint"}, top_k=10,
                               min_score=0)  # fmt: skip
        assert {Path(r["title"]).name for r in by_source["results"]} >= {"Alpha policy", "Gamma memo"}, by_source
        assert all(r["source"] == "sharepoint" for r in by_source["results"])
        slack = await call(client, "search", query="standup survey glacier", filters={"source": "slack"}, top_k=10)
        assert {r["title"] for r in slack["results"]} == {"msg1", "msg2"}

        # The same bytes again: skipped. New tags, then new metadata: updated, found by them, not re-embedded.
        path = str(docs / "alpha.md")
        again = await call(client, "ingest_document", file_path=path, source="sharepoint")
        assert again["status"] == "skipped" and again["chunks_created"] == 0
        before = await counts(client, "rag_gateway")
        retag = await call(client, "ingest_document", file_path=path, source="sharepoint", tags=["other"],
                           response_format="detailed")  # fmt: skip
        assert retag["status"] == "updated" and retag["chunks_created"] == 0, retag
        assert "embedding_ms" not in (retag.get("stages") or {})
        tagged = await call(client, "search", query="harbour lantern inspection", tags=["other"])
        assert tagged["results"] and "harbour lantern" in tagged["results"][0]["text"]
        meta = await call(client, "ingest_document", file_path=path, source="sharepoint", tags=["other"],
                          metadata={"team": "legal"})  # fmt: skip
        assert meta["status"] == "updated"
        legal = await call(client, "search", query="harbour lantern", filters={"metadata.team": "legal"})
        assert legal["results"] and legal["results"][0]["source"] == "sharepoint"
        assert await counts(client, "rag_gateway") == before
        same = await call(client, "ingest_document", file_path=path, source="sharepoint", tags=["other"],
                          metadata={"team": "legal"})  # fmt: skip
        assert same["status"] == "skipped"

        # Changed chunking re-chunks; force re-embeds anyway; timings add up.
        dense = await call(client, "ingest_document", file_path=path, source="sharepoint", tags=["other"],
                           metadata={"team": "legal"}, chunking="dense")  # fmt: skip
        assert dense["status"] == "replaced"
        labels = {"source": "sharepoint", "tags": ["other"], "metadata": {"team": "legal"}}
        forced = await call(client, "ingest_document", file_path=path, **labels, chunking="dense", force=True,
                            response_format="detailed")  # fmt: skip
        assert forced["status"] == "replaced" and forced["stages"]["embedding_ms"] > 0
        assert forced["processing_time_ms"] >= sum(v for v in forced["stages"].values() if v)
        assert forced["key"] == str((docs / "alpha.md").resolve())
        assert (await counts(client, "rag_gateway"))[0] == 4


async def test_every_way_in_stores_the_same_document(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    make_docx(
        docs / "memo.docx",
        "Quarry memo",
        [(None, ["The quarry closes at dusk; the summit trail opens at dawn in summer."])],
    )
    (docs / "noise.txt").write_bytes(bytes(range(1, 9)) * 40)
    async with Client(server_params(docs, tmp_path / "data"), read_timeout_seconds=300) as client:
        single = await call(client, "ingest_document", file_path=str(docs / "memo.docx"), collection="one")
        batch = await call(client, "ingest_batch", items=[{"file_path": str(docs / "memo.docx")}], collection="two")
        assert single["status"] == "indexed" and batch["results"][0]["status"] == "indexed", batch
        text = "The meadow willow grows by the river in the prairie, far from the marble quarry."
        await call(client, "ingest_text", text=text, name="notes", collection="one")
        await call(client, "ingest_batch", items=[{"text": text, "name": "notes"}], collection="two")
        one = documents(await call(client, "list_documents", collection="one", response_format="detailed"))
        two = documents(await call(client, "list_documents", collection="two", response_format="detailed"))
        for name, ignored in (("memo.docx", set()), ("notes", {"last_modified"})):  # a text's is its ingest time
            ignored |= {"doc_id", "collection", "updated_at"}
            a = {k: v for k, v in one[name].items() if k not in ignored}
            b = {k: v for k, v in two[name].items() if k not in ignored}
            assert a == b, (name, a, b)
        assert one["notes"]["file_type"] == "txt" and one["notes"]["last_modified"]
        assert one["memo.docx"]["file_type"] == "docx" and one["memo.docx"]["last_modified"]

        # Control bytes are no text, whichever way they come in.
        refused = await call(client, "ingest_document", file_path=str(docs / "noise.txt"))
        assert refused["success"] is False and "no letters or digits" in refused["error"], refused
        in_batch = await call(client, "ingest_batch", items=[{"file_path": str(docs / "noise.txt")}])
        assert in_batch["results"][0]["success"] is False
        assert (await counts(client, "rag_gateway")) == (0, 0)


async def test_progress_during_embedding_and_a_cancelled_call_stops(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    # The longest synchronous wait, so the progress of the whole ingest reaches this call.
    params = server_params(docs, tmp_path / "data", INGESTION_MCP_SYNC_WAIT_S="55")
    async with Client(params, read_timeout_seconds=600) as client:
        seen: list[tuple[float, str | None]] = []

        async def record(progress: float, total: float | None, message: str | None) -> None:
            seen.append((progress, message))

        text = long_text(90, "progress")  # ~55 KB: a few embedding batches
        out = await client.call_tool("ingest_text", {"text": text, "name": "progress", "chunking": "dense"},
                                     progress_callback=record)  # fmt: skip
        assert out.structured_content["status"] == "indexed", out.content
        embedding = sorted({p for p, m in seen if m == "embedding"})
        assert len(embedding) >= 3 and embedding[-1] - embedding[0] >= 20, seen
        assert all(a[0] <= b[0] for a, b in itertools.pairwise(seen)), "progress went back"
        before = await counts(client, "rag_gateway")

        # A 400 KB text, cancelled by the client as soon as embedding has begun.
        started = anyio.Event()

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            if message == "embedding":
                started.set()

        big = long_text(660, "cancelled")
        assert len(big) > 400_000
        async with anyio.create_task_group() as group:

            async def ingest() -> None:
                with anyio.CancelScope() as scope:
                    group_scope.append(scope)
                    await client.call_tool("ingest_text", {"text": big, "name": "big"}, progress_callback=on_progress)

            group_scope: list[anyio.CancelScope] = []
            group.start_soon(ingest)
            with anyio.fail_after(300):
                await started.wait()
            group_scope[0].cancel()

        # The server stops the work: no job keeps running, and nothing of the text is ever stored.
        with anyio.fail_after(60):
            while (await call(client, "list_active_jobs"))["jobs"]:
                await anyio.sleep(0.5)
        await anyio.sleep(3)
        assert await counts(client, "rag_gateway") == before
        found = await call(client, "search", query="Paragraph 12 of cancelled", mode="keyword")
        assert not [r for r in found["results"] if "cancelled" in r["text"]]


async def test_background_jobs_cancel_fail_honestly_and_urls_default_to_their_domain(tmp_path: Path) -> None:
    docs, web = tmp_path / "docs", tmp_path / "web"
    docs.mkdir()
    web.mkdir()
    (web / "page.md").write_text("# Falcon notes\n\nThe falcon nests on the marble summit above the lagoon.\n")
    env = {"INGESTION_MCP_SYNC_WAIT_S": "1", "INGESTION_MCP_SOURCE_ALLOWED_HOSTS": "127.0.0.1"}
    with file_server(web, delay_404_s=3) as site:
        async with Client(server_params(docs, tmp_path / "data", **env), read_timeout_seconds=300) as client:
            # A background job cancelled with cancel_job ends cancelled and writes nothing.
            started = await call(client, "ingest_text", text=long_text(660, "job"), name="job")
            job_id = started["job_id"]
            cancelled = await call(client, "cancel_job", job_id=job_id)
            assert cancelled["job"]["status"] == "cancelled", cancelled
            status = await call(client, "get_job_status", job_id=job_id)
            assert status["success"] is False and status["job"]["status"] == "cancelled", status
            assert "Cancelled" in status["error"] and status["suggestion"]

            # A background ingest that fails says so, with the real error and what to do.
            slow = await call(client, "ingest_from_url", url=site.url("slow-404/report.pdf"))
            assert slow["success"] is True and slow["job_id"], slow
            job = await finished_job(client, slow["job_id"])
            assert job["success"] is False and "404" in job["error"] and job["suggestion"], job

            # ingest_from_url without a source records the URL's domain; the URL is the identity.
            page = await call(client, "ingest_from_url", url=site.url("page.md"), response_format="detailed")
            if page.get("job_id"):  # a slow machine: the answer is the job's result
                page = (await finished_job(client, page["job_id"]))["job"]["result"]
            assert page["status"] == "indexed" and page["key"] == site.url("page.md"), page
            hit = (await call(client, "search", query="falcon nests on the summit"))["results"][0]
            assert hit["source"] == "127.0.0.1", hit
            assert await counts(client, "rag_gateway") == (1, 1)


async def test_a_failed_download_leaves_no_file(tmp_path: Path) -> None:
    docs, web = tmp_path / "docs", tmp_path / "web"
    docs.mkdir()
    web.mkdir()
    shutil.copy(FIXTURES / "bomb.docx", web / "bomb.docx")
    make_docx(web / "good.docx", "Beacon guide", [(None, ["Light the beacon on the summit when the ember glows."])])
    env = {"INGESTION_MCP_PROFILES": "docs_server", "INGESTION_MCP_SOURCE_ALLOWED_HOSTS": "127.0.0.1"}
    with file_server(web) as site:
        async with Client(server_params(docs, tmp_path / "data", **env), read_timeout_seconds=300) as client:
            for name in ("bomb.docx", "good.docx"):
                started = await call(client, "fetch_file", url=site.url(name), filename=name, docFolder=str(docs))
                with anyio.fail_after(120):
                    while (job := await call(client, "get_job_status", jobId=started["jobId"]))["status"] == "running":
                        await anyio.sleep(0.5)
                if name == "bomb.docx":
                    assert job["status"] == "failed", job
                else:
                    assert job["status"] == "completed", job
    assert sorted(p.name for p in docs.iterdir()) == ["good.docx"]
