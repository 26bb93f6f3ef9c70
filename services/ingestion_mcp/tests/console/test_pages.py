"""Every console page with real documents; a console delete is gone for agents; escaping, CSP and CSRF."""

from __future__ import annotations

from pathlib import Path

from ingestion_mcp.server import build_server
from ingestion_mcp.state import AppState
from mcp import Client

from .conftest import console, csrf_of, upload

GUIDE = """# Greenhouse guide

## Watering

The orchids in the greenhouse need misting twice a day, and the ferns want their soil kept moist but never wet.

## Light

Shade the seedlings from the noon sun; the cacti on the south bench take full light all day long.
"""
XSS = """# Hostile notes

This paragraph carries markup that must stay text: <script>alert('owned')</script> and <img src=x onerror=alert(1)>
and a second sentence so that the document is long enough to be ingested as a real document.
"""


async def test_every_page_renders_the_real_data(open_state: AppState) -> None:
    async with console(open_state) as client:
        made = await upload(client, open_state, "greenhouse.md", GUIDE, "console-pages")
        home = await client.get("/")
        assert home.status_code == 200 and 'data-collection="console-pages"' in home.text
        assert 'data-test="collection-last-ingest"' in home.text
        assert 'data-test="collection-engine">lance<' in home.text  # the index each collection lives in

        listing = await client.get("/collections/console-pages")
        assert f'data-doc-id="{made["doc_id"]}"' in listing.text and "Greenhouse guide" in listing.text
        assert 'index <span id="collection-engine">lance</span>' in listing.text
        filtered = await client.get("/collections/console-pages/documents", params={"q": "no-such-thing"})
        assert 'id="documents-empty"' in filtered.text and "data-doc-id" not in filtered.text
        kept = await client.get("/collections/console-pages/documents", params={"q": "greenhouse"})
        assert made["doc_id"] in kept.text

        doc = await client.get(f"/collections/console-pages/documents/{made['doc_id']}")
        assert doc.status_code == 200
        assert "misting twice a day" in doc.text and 'data-test="chunk"' in doc.text
        assert "Greenhouse guide &gt; Watering" in doc.text  # a section, from the stored chunks

        found = await client.get("/search", params={"q": "how often to mist orchids", "collection": "console-pages"})
        for mode in ("hybrid", "semantic", "keyword"):
            assert f'id="results-{mode}"' in found.text
        assert found.text.count(f'data-doc-id="{made["doc_id"]}"') >= 2 and 'data-test="hit-dense"' in found.text

        narrowed = await client.get("/search", params={"q": "orchids", "mode": "keyword", "filters": "page=99"})
        assert 'id="results-keyword"' in narrowed.text and 'id="results-hybrid"' not in narrowed.text
        assert 'data-test="no-hits"' in narrowed.text
        bad = await client.get("/search", params={"q": "orchids", "top_k": "5000"})
        assert bad.status_code == 400 and 'data-test="error-message"' in bad.text

        jobs = await client.get("/jobs")
        assert jobs.status_code == 200 and 'id="jobs-live"' in jobs.text
        assert (await client.get("/static/htmx.min.js")).status_code == 200


async def test_a_console_delete_is_gone_for_agents(open_state: AppState) -> None:
    async with console(open_state) as client:
        made = await upload(client, open_state, "greenhouse.md", GUIDE, "console-delete")
        page = await client.get(f"/collections/console-delete/documents/{made['doc_id']}")
        path = f"/collections/console-delete/documents/{made['doc_id']}/delete"

        refused = await client.post(path, data={})  # no CSRF token: refused, nothing deleted
        assert refused.status_code == 403 and "CSRF" in refused.text
        assert (await client.get(f"/collections/console-delete/documents/{made['doc_id']}")).status_code == 200

        gone = await client.post(path, data={"csrf_token": csrf_of(page.text)})
        assert gone.status_code == 303 and "notice=" in gone.headers["location"]
    async with Client(build_server(open_state)) as agent:
        answer = await agent.call_tool("search", {"query": "misting orchids", "collection": "console-delete"})
        assert answer.structured_content is not None
        assert made["doc_id"] not in str(answer.structured_content), answer.structured_content


async def test_a_collection_deleted_in_the_console_is_gone_for_agents_once_its_name_is_typed(
    open_state: AppState,
) -> None:
    async with console(open_state) as client:
        await upload(client, open_state, "greenhouse.md", GUIDE, "console-drop")
        page = await client.get("/collections/console-drop")
        assert 'id="collection-delete-form"' in page.text
        csrf, path = csrf_of(page.text), "/collections/console-drop/delete"
        refused = await client.post(path, data={"confirm_name": "console-drop"})  # no CSRF token
        assert refused.status_code == 403
        wrong = await client.post(path, data={"csrf_token": csrf, "confirm_name": "console-dro"})
        assert wrong.status_code == 400 and "does not match" in wrong.text
        assert (await client.get("/collections/console-drop")).status_code == 200, "nothing deleted"
        gone = await client.post(path, data={"csrf_token": csrf, "confirm_name": "console-drop"})
        assert gone.status_code == 303 and gone.headers["location"].startswith("/?notice=")
        listing = await client.get(gone.headers["location"])
        assert 'id="notice"' in listing.text and "Deleted collection console-drop (1 documents" in listing.text
        assert 'data-collection="console-drop"' not in listing.text
        assert (await client.get("/collections/console-drop")).status_code == 404
    async with Client(build_server(open_state)) as agent:
        answer = await agent.call_tool("get_collections", {})
        assert "console-drop" not in str(answer.structured_content), answer.structured_content


async def test_hostile_markup_renders_as_text_under_a_strict_policy(open_state: AppState) -> None:
    async with console(open_state) as client:
        made = await upload(client, open_state, "hostile.md", XSS, "console-xss")
        doc = await client.get(f"/collections/console-xss/documents/{made['doc_id']}")
    assert "&lt;script&gt;alert(&#39;owned&#39;)&lt;/script&gt;" in doc.text
    assert "<script>alert" not in doc.text and "<img src=x" not in doc.text
    policy = doc.headers["content-security-policy"]
    assert "default-src 'self'" in policy and "frame-ancestors 'none'" in policy and "unsafe-inline" not in policy
    assert doc.headers["x-content-type-options"] == "nosniff"
    assert "<script>" not in doc.text.replace('<script src="/static/htmx.min.js"></script>', "")


async def test_an_upload_is_refused_as_the_tools_refuse(open_state: AppState) -> None:
    async with console(open_state) as client:
        csrf = csrf_of((await client.get("/ingest")).text)
        answer = await client.post("/ingest", data={"csrf_token": csrf, "collection": "console-x"},
                                   files={"file": ("tool.exe", b"MZ\x90\x00", "application/octet-stream")})  # fmt: skip
        assert answer.status_code == 400 and "Unsupported file type: .exe" in answer.text
        assert 'id="error"' in answer.text
        missing = await client.get("/collections/console-nothing")
        assert missing.status_code == 404 and "not found" in missing.text


async def test_the_documents_table_shows_each_source_s_pages(open_state: AppState) -> None:
    sample = Path(__file__).resolve().parents[4] / "tests" / "fixtures" / "sample.pdf"  # 3 pages
    async with console(open_state) as client:
        pdf = await upload(client, open_state, "sample.pdf", sample.read_bytes(), "console-pages-count")
        note = await upload(client, open_state, "greenhouse.md", GUIDE, "console-pages-count")
        listing = (await client.get("/collections/console-pages-count")).text
    rows = {doc_id: listing.split(f'data-doc-id="{doc_id}"', 1)[1].split("</tr>", 1)[0]
            for doc_id in (pdf["doc_id"], note["doc_id"])}  # fmt: skip
    assert '<td data-test="document-pages">3</td>' in rows[pdf["doc_id"]], rows
    assert '<td data-test="document-pages">\u2013</td>' in rows[note["doc_id"]], rows


async def test_a_collection_page_shows_its_synced_folders(open_state: AppState, docs_dir: Path) -> None:
    """Freshness where an operator looks: each synced folder, watched or not, its last sync and what it did."""
    from ingestion_mcp.profiles.ingestion.sync_tool import sync_folder_job

    folder = docs_dir / "console-synced"
    folder.mkdir()
    (folder / "kiln.md").write_text("# Kiln\n\nThe pottery kiln is fired slowly to a thousand degrees overnight.\n")

    async def progress(fraction: float, step: str) -> None:
        return None

    await sync_folder_job(open_state, {"folder": str(folder), "collection": "console-synced"}, progress)
    await open_state.folders.change("console-synced", str(folder.resolve()), watch=True, changed_since=3,
                                    watch_error="the folder cannot be read (Permission denied)",
                                    watch_error_at="2026-11-28T09:00:00+00:00")  # fmt: skip
    try:
        async with console(open_state) as client:
            page = await client.get("/collections/console-synced")
    finally:  # the store is the session's: a watch left behind would be followed by the watch tests' watchers
        await open_state.folders.forget("console-synced")
    assert page.status_code == 200 and 'id="synced-folders"' in page.text, page.text[:500]
    row = page.text[page.text.index('id="synced-folders"') :]
    assert str(folder.resolve()) in row and "1 added" in row and ">3<" in row
    assert "yes (not working)" in row and "cannot be read (Permission denied)" in row, row  # issue 37: visibly broken
    assert "since 2026-11-28T09:00:00+00:00" in row, row
