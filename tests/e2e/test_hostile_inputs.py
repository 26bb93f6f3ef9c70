"""Hostile input through the real processes: a clear tool error or 4xx, and nothing written.

Files (binary .pdf, encrypted PDF, zip-bomb DOCX, non-UTF-8 text), filter-value injection and
unknown filter keys are covered in-process (services/ingestion_mcp/tests, services/docling/tests);
these are the cases that had no test, plus the upload limit against a real socket.
"""

from __future__ import annotations

import socket

import pytest
from service_stack import ServiceStack, call, collection_state, mcp_client

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]
NOTE = "The ferry timetable changes in winter: boats leave the north pier every forty minutes until dusk."


def deep(levels: int) -> dict:
    value: dict = {"leaf": 1}
    for _ in range(levels):
        value = {"inner": value}
    return value


HOSTILE_CALLS = [
    ("search", {"query": "ferry", "top_k": 0}),
    ("search", {"query": "ferry", "top_k": 100_000}),
    ("search", {"query": ""}),
    ("search", {"query": "ferry " * 20_000}),
    ("search", {"query": "ferry", "filters": {'title == "x" or true or title': "x"}}),
    ("search", {"query": "ferry", "collection": "bad name; drop"}),
    ("ingest_text", {"text": NOTE, "name": "deep", "metadata": deep(40)}),
    ("ingest_text", {"text": NOTE, "name": "big", "metadata": {"blob": "x" * 200_000}}),
    ("ingest_text", {"text": NOTE, "name": "badcoll", "collection": "Robert'); DROP--"}),
]


async def test_hostile_tool_arguments_are_refused_and_nothing_is_written(stack: ServiceStack, collection: str) -> None:
    async with mcp_client(stack) as client:
        assert (await call(client, "ingest_text", text=NOTE, name="ferry", collection=collection))["status"]
        before = collection_state(stack, collection)
        for tool, arguments in HOSTILE_CALLS:
            arguments = {"collection": collection, **arguments}
            response = await client.call_tool(tool, arguments)
            assert response.is_error, (tool, list(arguments))
            text = response.content[0].text
            assert "Traceback" not in text and len(text) < 4000, (tool, text[:300])
        assert collection_state(stack, collection) == before


def test_an_oversized_upload_is_refused_before_the_body_is_sent(stack: ServiceStack) -> None:
    """A 10 GiB Content-Length with no body: docling answers 413 at once instead of waiting for the bytes."""
    token = stack.auth_token or ""
    head = (
        "POST /v1/convert HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Bearer {token}\r\n"
        "Content-Type: multipart/form-data; boundary=xyz\r\n"
        f"Content-Length: {10 * 1024**3}\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", stack.docling.port), timeout=15) as sock:
        sock.sendall(head.encode() + b"--xyz\r\n")
        answer = ""
        for _ in range(10):  # headers and body may come in separate packets
            answer += sock.recv(4096).decode(errors="replace")
            if answer.rstrip().endswith("}"):
                break
    assert answer.startswith("HTTP/1.1 413"), answer[:200]
    assert "FILE_TOO_LARGE" in answer and token not in answer
