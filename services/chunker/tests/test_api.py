"""Contract tests through httpx.ASGITransport against create_app(settings) with the real tokenizer."""

from __future__ import annotations

import httpx
import pytest
from asgi_lifespan import LifespanManager
from chunker_service.main import create_app
from chunker_service.settings import ChunkerSettings
from ingestion_contracts.chunker import ChunkBatchResponse, ChunkResponse, PresetsResponse

TEXT = "# Guide\n\n" + "The retrieval model reads passages of text. " * 60 + "\n\n## Install\n\nRun the installer.\n"


async def test_presets_name_the_tokenizer_and_its_limit(client: httpx.AsyncClient) -> None:
    response = await client.get("/v1/presets")
    assert response.status_code == 200
    body = PresetsResponse.model_validate(response.json())
    assert {(p.name, p.window_tokens, p.overlap_tokens) for p in body.presets} == {
        ("default", 200, 40),
        ("dense", 100, 30),
        ("sparse", 400, 60),
    }
    assert (body.tokenizer, body.model_max_tokens, body.default_preset) == ("all-MiniLM-L6-v2", 256, "default")


async def test_chunk_with_the_default_preset(client: httpx.AsyncClient) -> None:
    response = await client.post("/v1/chunk", json={"text": TEXT})
    assert response.status_code == 200, response.text
    body = ChunkResponse.model_validate(response.json())
    assert (body.preset, body.window_tokens, body.overlap_tokens) == ("default", 200, 40)
    assert body.tokenizer == "all-MiniLM-L6-v2" and body.model_max_tokens == 256 and body.warnings == []
    assert body.total_tokens > 450 and body.chunking_ms > 0
    assert [c.index for c in body.chunks] == list(range(len(body.chunks)))
    assert all(TEXT[c.start : c.end] == c.text and c.token_count <= 200 for c in body.chunks)
    assert body.chunks[0].heading_path == ["Guide"] and body.chunks[-1].heading_path == ["Guide", "Install"]
    assert body.chunks[0].heading_levels == [1] and body.chunks[-1].heading_levels == [1, 2]
    assert response.headers["x-request-id"]


async def test_explicit_window_and_default_overlap(client: httpx.AsyncClient) -> None:
    response = await client.post("/v1/chunk", json={"text": TEXT, "window_tokens": 50})
    body = ChunkResponse.model_validate(response.json())
    assert (body.preset, body.window_tokens, body.overlap_tokens) == ("custom", 50, 10)
    assert max(c.token_count for c in body.chunks) <= 50 and len(body.chunks) > 10


async def test_sparse_preset_warns_that_the_model_reads_less(client: httpx.AsyncClient) -> None:
    response = await client.post("/v1/chunk", json={"text": TEXT, "preset": "sparse"})
    body = ChunkResponse.model_validate(response.json())
    assert body.window_tokens == 400
    assert body.warnings == [
        "window of 400 tokens is longer than the 256 tokens all-MiniLM-L6-v2 reads; "
        "the rest of each chunk is not embedded; use the default or dense preset"
    ]


async def test_pages_of_each_chunk(client: httpx.AsyncClient) -> None:
    half = len(TEXT) // 2
    spans = [{"page": 1, "start": 0, "end": half}, {"page": 2, "start": half, "end": len(TEXT)}]
    response = await client.post("/v1/chunk", json={"text": TEXT, "preset": "dense", "page_spans": spans})
    chunks = ChunkResponse.model_validate(response.json()).chunks
    assert chunks[0].page == chunks[0].page_end == 1 and chunks[-1].page == chunks[-1].page_end == 2
    straddling = [c for c in chunks if c.start < half <= c.end - 1]
    assert straddling and all((c.page, c.page_end) == (1, 2) for c in straddling)
    # Where page 2 begins inside each straddling chunk's text: the character there is the document's first of page 2.
    for chunk in straddling:
        assert [s.page for s in chunk.page_starts] == [1, 2], chunk.page_starts
        assert chunk.text[chunk.page_starts[1].offset :] == TEXT[half : chunk.end], chunk
    assert all(c.page_starts == [] for c in chunks if c not in straddling)


@pytest.mark.parametrize(
    ("payload", "fragment"),
    [
        ({"text": TEXT, "preset": "dense", "window_tokens": 100}, "either `preset` or `window_tokens`"),
        ({"text": TEXT, "window_tokens": 100, "overlap_tokens": 100}, "smaller than `window_tokens`"),
        ({"text": TEXT, "overlap_tokens": 10}, "needs `window_tokens`"),
        ({"text": ""}, "text"),
        ({"text": TEXT, "window_tokens": 8}, "window_tokens"),
        ({"text": TEXT, "preset": "huge"}, "preset"),
        ({"text": TEXT, "colour": "red"}, "colour"),
    ],
    ids=[
        "window-and-preset",
        "overlap-not-smaller",
        "overlap-alone",
        "empty-text",
        "tiny-window",
        "bad-preset",
        "extra",
    ],
)
async def test_invalid_requests_are_422_with_a_reason(client: httpx.AsyncClient, payload: dict, fragment: str) -> None:
    response = await client.post("/v1/chunk", json=payload)
    assert response.status_code == 422
    body = response.json()
    assert body["code"] == "INVALID_REQUEST" and fragment in body["error"] and body["suggestion"]
    assert TEXT[:30] not in response.text, "the payload is not echoed back"


async def test_page_span_that_ends_before_it_starts_is_422(client: httpx.AsyncClient) -> None:
    spans = [{"page": 3, "start": 50, "end": 10}]
    response = await client.post(
        "/v1/chunk/batch", json={"items": [{"text": "ok"}, {"text": TEXT, "page_spans": spans}]}
    )
    assert response.status_code == 422
    assert response.json()["code"] == "INVALID_PAGE_SPANS"
    assert response.json()["error"].startswith("items[1]: Invalid page_spans: page span of page 3")


async def test_batch_keeps_the_order_and_settings_of_each_item(client: httpx.AsyncClient) -> None:
    items = [
        {"text": TEXT},
        {"text": "short note", "preset": "dense"},
        {"text": TEXT, "window_tokens": 64, "overlap_tokens": 0, "markdown": False},
        {"text": "   \n  "},
    ]
    response = await client.post("/v1/chunk/batch", json={"items": items})
    assert response.status_code == 200, response.text
    results = ChunkBatchResponse.model_validate(response.json()).results
    assert [(r.preset, r.window_tokens, r.overlap_tokens) for r in results] == [
        ("default", 200, 40),
        ("dense", 100, 30),
        ("custom", 64, 0),
        ("default", 200, 40),
    ]
    assert [c.text for c in results[1].chunks] == ["short note"]
    assert all(c.heading_path == [] for c in results[2].chunks)
    assert results[3].chunks == [] and "no non-whitespace" in results[3].warnings[0]


async def test_empty_batch_is_422(client: httpx.AsyncClient) -> None:
    response = await client.post("/v1/chunk/batch", json={"items": []})
    assert response.status_code == 422 and "items" in response.json()["error"]


async def test_text_over_the_configured_limit_is_413(settings: ChunkerSettings) -> None:
    app = create_app(settings.model_copy(update={"max_text_chars": 1000}))
    async with (
        LifespanManager(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c,
    ):
        single = await c.post("/v1/chunk", json={"text": "x" * 1001})
        batch = await c.post("/v1/chunk/batch", json={"items": [{"text": "x" * 600}, {"text": "y" * 600}]})
        presets = await c.get("/v1/presets")
    assert single.status_code == 413 and single.json()["code"] == "TEXT_TOO_LARGE"
    assert "1,001 characters" in single.json()["error"]
    assert batch.status_code == 413 and "The 2 texts have 1,200 characters" in batch.json()["error"]
    assert presets.json()["max_text_chars"] == 1000


async def test_readyz_follows_the_tokenizer(settings: ChunkerSettings) -> None:
    app = create_app(settings)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
        before = await c.get("/readyz")
        not_loaded = await c.post("/v1/chunk", json={"text": "hello"})
        async with LifespanManager(app):
            ready = await c.get("/readyz")
            health = await c.get("/healthz")
    assert before.status_code == 503 and before.json()["checks"] == {"tokenizer": "not loaded yet"}
    assert before.headers["retry-after"]
    assert not_loaded.status_code == 503 and not_loaded.json()["code"] == "DEPENDENCY_UNAVAILABLE"
    assert ready.status_code == 200 and ready.json()["checks"] == {"tokenizer": "ok"}
    assert health.status_code == 200 and health.json()["service"] == "chunker"


async def test_bearer_token_is_required_when_configured(settings: ChunkerSettings) -> None:
    app = create_app(ChunkerSettings(AUTH_TOKEN="s3cret"))
    async with (
        LifespanManager(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c,
    ):
        anonymous = await c.post("/v1/chunk", json={"text": "hello"})
        authorized = await c.post("/v1/chunk", json={"text": "hello"}, headers={"Authorization": "Bearer s3cret"})
        ready = await c.get("/readyz")
    assert anonymous.status_code == 401 and authorized.status_code == 200 and ready.status_code == 200


async def test_metrics_record_the_chunk_stage(client: httpx.AsyncClient) -> None:
    await client.post("/v1/chunk", json={"text": TEXT})
    metrics = (await client.get("/metrics")).text
    assert 'stage_duration_seconds_count{service="chunker",stage="chunk"} 1.0' in metrics


async def test_a_chunk_that_ends_where_the_next_page_starts_stays_on_its_page(client: httpx.AsyncClient) -> None:
    text = "# One\nfirst page\n# Two\nsecond page\n# Three\nno page"
    boundary = text.index("\n# Two")
    spans = [{"page": 1, "start": 0, "end": boundary}, {"page": 2, "start": boundary, "end": text.index("\n# Three")}]
    response = await client.post("/v1/chunk", json={"text": text, "page_spans": spans})
    body = ChunkResponse.model_validate(response.json())
    assert [(c.text, c.page, c.page_end) for c in body.chunks] == [
        ("# One\nfirst page", 1, 1),
        ("# Two\nsecond page", 2, 2),
        ("# Three\nno page", None, None),
    ]
    assert body.warnings == ["1 of 3 chunks start outside every page span; their page is null"]
