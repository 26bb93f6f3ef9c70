"""Bearer auth on every service, no secret in logs or answers, and one request id across all services."""

from __future__ import annotations

import json

import httpx
import pytest
from ingestion_mcp.observability import REGISTRY
from prometheus_client import generate_latest
from service_stack import ServiceProcess, ServiceStack, call, collection_state, mcp_client

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(300)]
# A request that needs the token on each service (refused before the body is even looked at).
GUARDED = {
    "docling": ("POST", "/v1/convert"),
    "chunker": ("POST", "/v1/chunk"),
    "vector gateway": ("GET", "/v1/collections"),
}


def access_lines(service: ServiceProcess) -> list[dict]:
    lines = []
    for raw in service.log_text().splitlines():
        if raw.startswith("{") and '"servicekit.access"' in raw:
            lines.append(json.loads(raw))
    return lines


def test_every_service_refuses_requests_without_the_token_except_probes(stack: ServiceStack) -> None:
    token = stack.auth_token
    assert token
    for service in stack.services:
        method, path = GUARDED[service.name]
        with httpx.Client(base_url=service.url, timeout=30) as http:
            assert http.get("/healthz").status_code == 200 and http.get("/readyz").status_code == 200
            for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Basic {token}"},
                            {"Authorization": f"Bearer {token}x"}, {"Authorization": token}):  # fmt: skip
                for m, p in ((method, path), ("GET", "/metrics"), ("GET", "/openapi.json"), ("GET", "/docs")):
                    refused = http.request(m, p, headers=headers)
                    assert refused.status_code == 401, (service.name, m, p, headers)
                    assert refused.json()["code"] == "UNAUTHORIZED" and token not in refused.text
                    assert refused.headers["www-authenticate"] == "Bearer"
            good = {"Authorization": f"Bearer {token}"}
            assert http.get("/metrics", headers=good).status_code == 200
            assert http.get("/openapi.json", headers=good).status_code == 200


async def test_a_wrong_token_fails_the_tool_with_an_instructive_error(stack: ServiceStack, collection: str) -> None:
    text = "A sufficiently long note about tide tables, harbour pilots and the lantern schedule of the pier."
    async with mcp_client(stack, auth_token="not-the-token") as client:
        failed = await call(client, "ingest_text", text=text, name="tides", collection=collection)
    assert failed["is_error"] and "bearer token" in failed["error"].lower(), failed
    assert stack.auth_token not in json.dumps(failed)
    assert collection_state(stack, collection)["documents"] == 0


async def test_one_request_id_follows_an_ingest_through_all_services(stack: ServiceStack, collection: str) -> None:
    # HTML, so the ingest goes through docling (Markdown and text files are read without it).
    note = stack.workdir / f"{collection}.html"
    note.write_text("<html><body><h1>Pier log</h1><p>The harbour master records tide tables and lantern "
                    "schedules every evening.</p></body></html>")  # fmt: skip
    async with mcp_client(stack) as client:
        made = await call(client, "ingest_document", file_path=str(note), collection=collection)
        assert made["status"] == "indexed", made
        assert not (await call(client, "search", query="lantern schedules", collection=collection))["is_error"]

    ids = [{line["request_id"] for line in access_lines(s) if line["method"] == "POST"} for s in stack.services]
    shared = ids[0] & ids[1] & ids[2]
    assert len(shared) >= 1, "no request id reached docling, chunker and the gateway alike"
    for service in stack.services:
        line = next(entry for entry in access_lines(service) if entry["request_id"] in shared)
        assert {"ts", "level", "msg", "service", "path", "status", "duration_ms"} <= set(line)
    assert stack.auth_token not in stack.logs(), "the token leaked into a service log"
    # Embedding a query or a batch draws no progress bar into the gateway's log, one per search.
    assert "Batches:" not in stack.logs()
    # Each request is logged once, by the service middleware (uvicorn's plain-text access log is off).
    assert '"POST /v1/search HTTP/1.1"' not in stack.logs()


async def test_metrics_count_requests_latencies_stages_and_jobs(stack: ServiceStack, collection: str) -> None:
    async with mcp_client(stack) as client:
        text = "Metrics note: the lighthouse lamp is cleaned weekly and the fog horn is tested at noon each day."
        assert (await call(client, "ingest_text", text=text, name="metrics", collection=collection))["status"]
        assert not (await call(client, "search", query="fog horn", collection=collection))["is_error"]
    expected = {
        "docling": ['route="/readyz"'],
        "chunker": ['route="/v1/chunk/batch"', 'stage_duration_seconds_count{service="chunker",stage="chunk"}'],
        "vector gateway": ['route="/v1/search"', 'stage="embedding"', 'stage="storing"', 'stage="search"'],
    }
    for service in stack.services:
        text = httpx.get(f"{service.url}/metrics", headers=stack.headers(), timeout=30).text
        assert "http_requests_total{" in text and "http_request_duration_seconds_bucket{" in text
        for needle in expected[service.name]:
            assert needle in text, (service.name, needle)
    mcp = generate_latest(REGISTRY).decode()
    assert 'mcp_jobs_started_total{type="ingest_text"}' in mcp and 'mcp_jobs{status="completed"}' in mcp
    assert 'mcp_tool_calls_total{outcome="ok",tool="search"}' in mcp
    assert 'ingest_stage_duration_seconds_count{stage="chunking"}' in mcp
