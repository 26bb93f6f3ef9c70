"""Issue 28: a plain start (no setting touched, so the log level stays WARNING) writes audit records on stderr,
each one JSON line whose fields are the record's own (not a JSON string inside "msg")."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]


async def test_a_plain_start_writes_structured_audit_records(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("INGESTION_MCP_", "DOCLING_", "CHUNKER_"))}
    # Only the development model's baked export is kept (root conftest: it is not exported again per data folder).
    env = {k: v for k, v in env.items() if not k.startswith("VECTOR_GATEWAY") or k.endswith("EMBEDDING_CACHE_DIR")} | {
        "INGESTION_MCP_DATA_DIR": str(tmp_path / "data"),
        "HF_HUB_OFFLINE": "1",
    }
    server = ["-m", "ingestion_mcp.cli.server_command"]
    params = StdioServerParameters(command=sys.executable, args=server, env=env, cwd=str(tmp_path))
    stderr = tmp_path / "stderr.log"
    with stderr.open("w") as errlog:
        async with Client(stdio_client(params, errlog=errlog)) as client:
            made = await client.call_tool("create_collection", {"name": "plain-audit"})
            assert not made.is_error, made.content
            gone = await client.call_tool("delete_collection", {"name": "plain-audit", "confirm": True})
            assert not gone.is_error, gone.content
    lines = [json.loads(line) for line in stderr.read_text().splitlines() if line.startswith("{")]
    audit = [line for line in lines if line.get("logger") == "ingestion_mcp.audit"]
    assert [(line.get("action"), line.get("result")) for line in audit] == [
        ("create_collection", "ok"),
        ("delete_collection", "ok"),
    ], stderr.read_text()[-3000:]
    for line in audit:
        assert line["tool"] == line["action"] and line["collection"] == "plain-audit" and line["request_id"], line
        assert {"subject", "document"} <= line.keys() and "None" not in line["msg"], line
