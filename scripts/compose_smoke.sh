#!/usr/bin/env bash
# End-to-end smoke test of the compose deployment: build, start, wait for health, ingest a
# text through the MCP endpoint, search it back, tear everything down (volumes included).
#   scripts/compose_smoke.sh            (make compose-smoke)
# Needs a Docker engine with compose v2.24+ and the repository's .venv (for the MCP client).
# KEEP_UP=1 leaves the stack running for inspection.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

PROJECT="${COMPOSE_PROJECT_NAME:-ingestion-smoke}"
MCP_URL="${MCP_URL:-http://127.0.0.1:${MCP_PUBLISH_PORT:-8000}/mcp}"
PYTHON="${PYTHON:-.venv/bin/python}"
CREATED_ENV=0

compose() {
    docker compose --project-name "$PROJECT" -f docker-compose.yml "$@"
}

cleanup() {
    local status=$?
    if [[ $status -ne 0 ]]; then
        echo "smoke: failed (exit $status); last logs:" >&2
        compose logs --no-color --tail=80 >&2 || true
    fi
    if [[ "${KEEP_UP:-0}" != "1" ]]; then
        compose down --volumes --remove-orphans >/dev/null 2>&1 || true
    fi
    if [[ $CREATED_ENV -eq 1 ]]; then
        rm -f .env
    fi
    exit "$status"
}
trap cleanup EXIT INT TERM

if [[ ! -f .env ]]; then
    # A throwaway .env with a random token, so the run exercises bearer auth end to end.
    CREATED_ENV=1
    {
        cat .env.example
        echo "AUTH_TOKEN=$("$PYTHON" -c 'import secrets; print(secrets.token_urlsafe(32))')"
        echo "MINIO_ROOT_PASSWORD=$("$PYTHON" -c 'import secrets; print(secrets.token_urlsafe(24))')"
        echo "REDIS_PASSWORD=$("$PYTHON" -c 'import secrets; print(secrets.token_urlsafe(24))')"
    } >.env
fi

echo "smoke: building images"
compose build
echo "smoke: starting (waits until every healthcheck passes)"
compose up -d --wait --wait-timeout 600

AUTH_TOKEN="$(sed -n 's/^AUTH_TOKEN=//p' .env | tail -n 1)"
export AUTH_TOKEN MCP_URL

echo "smoke: ingest + search through $MCP_URL"
"$PYTHON" - <<'PY'
import asyncio
import os
import sys
import uuid

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

URL = os.environ["MCP_URL"]
TOKEN = os.environ.get("AUTH_TOKEN", "")
MARKER = f"zebrafish-{uuid.uuid4().hex[:8]}"
TEXT = (
    f"The {MARKER} protocol describes how the ingestion pipeline converts documents to Markdown, "
    "splits them into overlapping token windows and stores dense and BM25 vectors in Milvus, "
    "so that hybrid search can find this paragraph again by its rare marker word."
)


def fail(message: str) -> None:
    print(f"smoke: FAIL: {message}", file=sys.stderr)
    sys.exit(1)


async def main() -> None:
    headers = {"Authorization": f"Bearer {TOKEN}"} if TOKEN else {}
    timeout = httpx2.Timeout(30.0, read=300.0)
    async with (
        httpx2.AsyncClient(headers=headers, timeout=timeout) as http,
        Client(streamable_http_client(URL, http_client=http)) as client,
    ):
        tools = {tool.name for tool in (await client.list_tools()).tools}
        for name in ("ingest_text", "search"):
            if name not in tools:
                fail(f"tool {name} not offered; got {sorted(tools)}")
        ingested = await client.call_tool("ingest_text", {"text": TEXT, "name": f"smoke-{MARKER}"})
        if ingested.is_error or not (ingested.structured_content or {}).get("success", False):
            fail(f"ingest_text: {ingested.structured_content or ingested.content}")
        print(f"smoke: ingested: {ingested.structured_content.get('message')}")
        found = await client.call_tool("search", {"query": f"{MARKER} protocol"})
        if found.is_error or not found.structured_content:
            fail(f"search: {found.structured_content or found.content}")
        if MARKER not in str(found.structured_content):
            fail(f"search did not return the ingested text: {found.structured_content}")
        print("smoke: search found the ingested text")

    if TOKEN:
        # The same endpoint must refuse a client without the token.
        async with httpx2.AsyncClient(timeout=timeout) as anonymous:
            response = await anonymous.post(URL, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
            if response.status_code != 401:
                fail(f"unauthenticated request got {response.status_code}, expected 401")
        print("smoke: unauthenticated request refused")


asyncio.run(main())
PY
echo "smoke: OK"
