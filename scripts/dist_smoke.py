"""Drive an installed ingestion-mcp as a user would, with nothing but the installed packages (no checkout).

    VENV/bin/python dist_smoke.py --pdf FILE --work DIR [--query Q --expect WORD]

With the venv's own `ingestion-mcp` on a fresh data folder: first start over stdio (timed to the ready line),
ingest the PDF, search it (a hit from it with a page); then a second start over streamable HTTP on the same folder,
the same search (what the first process stored), ingest a text, search it; then the installed embedder's precision
and rate against fp32 (texts/s on 200 passages of the PDF; no model file derived). Refuses to run where torch is
importable (the user's install has none). Prints one JSON line of figures; exits 1 on any failed step. It is copied
alone into the clean container of scripts/check_dist.sh, and run by tests/packaging against a venv made from dist/.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

READY = "ingestion-mcp is ready"
TEXT = ("Lighthouse keepers on the northern coast log the wind, the swell and the visibility every evening at six, "
        "and trim the lamp's wick before the first ship passes the headland.")  # fmt: skip


def fail(message: str) -> None:
    print(f"dist_smoke: FAILED: {message}", file=sys.stderr)
    raise SystemExit(1)


def server_env(work: Path, pdf: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("INGESTION_MCP_", "DOCLING_", "CHUNKER_"))}
    env = {k: v for k, v in env.items() if not k.startswith("VECTOR_GATEWAY")}
    return env | {"INGESTION_MCP_DATA_DIR": str(work / "data"), "INGESTION_MCP_ALLOWED_ROOTS": str(pdf.parent)}


def payload(answer: Any) -> dict[str, Any]:
    if answer.is_error:
        fail(f"tool error: {answer.content}")
    return dict(answer.structured_content or json.loads(answer.content[0].text))


async def wait_for(log: Path, needle: str, started: float, timeout_s: float) -> float:
    while time.monotonic() - started < timeout_s:
        if needle in log.read_text(errors="replace"):
            return time.monotonic() - started
        await asyncio.sleep(0.1)
    fail(f"no {needle!r} within {timeout_s:.0f} s; its stderr ends:\n{log.read_text(errors='replace')[-3000:]}")
    return 0.0


async def search(client: Client, query: str) -> list[dict[str, Any]]:
    found = payload(await client.call_tool("search", {"query": query, "top_k": 5}))
    return list(found.get("results") or [])


async def over_stdio(bin_dir: Path, work: Path, pdf: Path, query: str, expect: str) -> dict[str, Any]:
    log = work / "stdio.stderr"
    params = StdioServerParameters(command=str(bin_dir / "ingestion-mcp"), env=server_env(work, pdf), cwd=str(work))
    started = time.monotonic()
    with log.open("w") as errlog:
        async with Client(stdio_client(params, errlog=errlog)) as client:
            ready_s = await wait_for(log, READY, started, 600)
            began = time.monotonic()
            made = payload(await client.call_tool("ingest_document", {"file_path": str(pdf), "collection": "smoke"}))
            ingest_s = time.monotonic() - began
            if made.get("status") != "indexed" or not made.get("chunks_created"):
                fail(f"ingest_document answered {made}")
            hits = await search(client, query)
            ours = [h for h in hits if h.get("source") == str(pdf) and expect.lower() in h.get("text", "").lower()]
            if not ours or not ours[0].get("page"):
                fail(f"search {query!r} found no passage of {pdf.name} with {expect!r} and a page: {hits}")
    return {"stdio_first_start_to_ready_s": round(ready_s, 2), "pdf_ingest_s": round(ingest_s, 2),
            "pdf_chunks": made["chunks_created"], "stdio_hit_page": ours[0]["page"]}  # fmt: skip


def free_port() -> int:
    # scripts.service_stack.free_port's twin, on purpose: this file is copied alone into a clean container.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def over_http(bin_dir: Path, work: Path, pdf: Path, query: str, expect: str) -> dict[str, Any]:
    port = free_port()
    log = work / "http.stderr"
    command = [str(bin_dir / "ingestion-mcp"), "--transport", "streamable-http", "--port", str(port)]
    started = time.monotonic()
    with log.open("w") as errlog:
        process = subprocess.Popen(command, env=server_env(work, pdf), cwd=work, stdin=subprocess.DEVNULL,
                                   stdout=errlog, stderr=errlog)  # fmt: skip
        try:
            ready_s = await wait_for(log, READY, started, 600)
            async with httpx.AsyncClient(timeout=120) as http:
                if (await http.get(f"http://127.0.0.1:{port}/healthz")).status_code != 200:
                    fail("/healthz did not answer 200")
                async with Client(streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http)) as client:
                    kept = [h for h in await search(client, query) if h.get("source") == str(pdf)]
                    if not kept:
                        fail(f"after a restart over HTTP, search {query!r} no longer finds {pdf.name}")
                    text = {"text": TEXT, "name": "lighthouse", "collection": "smoke"}
                    if payload(await client.call_tool("ingest_text", text)).get("status") != "indexed":
                        fail("ingest_text over HTTP did not index")
                    if not [h for h in await search(client, "when do keepers log the swell") if "swell" in h["text"]]:
                        fail("the text ingested over HTTP is not found")
        finally:
            process.terminate()
            process.wait(timeout=60)
    return {"http_second_start_to_ready_s": round(ready_s, 2), "http_hit_page": kept[0].get("page")}


def embedding_rate(pdf: Path, work: Path, rounds: int = 3) -> dict[str, Any]:
    """The installed embedder as the server runs it (the precision ``auto`` picks on this CPU, the model's own files,
    an empty cache) against fp32, in alternate timed passes after a warm-up, on 200 passages of the PDF's text (40-120
    words each): texts/s, medians. Fails if a model file was derived (the distribution ships both)."""
    import statistics

    import pypdfium2
    from vector_gateway.embedder import create_embedder
    from vector_gateway.settings import GatewaySettings

    document = pypdfium2.PdfDocument(str(pdf))
    words = " ".join(page.get_textpage().get_text_range() for page in document).split()
    texts = [" ".join(words[(i * 37) % len(words) :][: 40 + (i * 13) % 80]) for i in range(200)]
    cache = work / "embed-cache"
    unused = str(work / "unused.db")
    embedders = {precision: create_embedder(GatewaySettings(milvus_uri=unused, embedding_cache_dir=cache,
                                                            embedding_precision=precision))
                 for precision in ("auto", "fp32")}  # fmt: skip
    rates: dict[str, list[float]] = {name: [] for name in embedders}
    for embedder in embedders.values():
        embedder.embed_documents(texts[:20])
    for _ in range(rounds):
        for name, embedder in embedders.items():
            began = time.perf_counter()
            embedder.embed_documents(texts)
            rates[name].append(len(texts) / (time.perf_counter() - began))
    if cache.exists() and any(cache.rglob("*")):
        fail(f"the embedder derived model files: {sorted(str(p) for p in cache.rglob('*'))}")
    auto, fp32 = statistics.median(rates["auto"]), statistics.median(rates["fp32"])
    return {"precision": getattr(embedders["auto"], "precision", "fp32"), "texts_per_s": round(auto, 1),
            "fp32_texts_per_s": round(fp32, 1), "ratio_to_fp32": round(auto / fp32, 2)}  # fmt: skip


async def main(args: argparse.Namespace) -> None:
    if importlib.util.find_spec("torch") is not None or importlib.util.find_spec("sentence_transformers"):
        fail("torch or sentence-transformers is installed here: the user's install has neither")
    try:  # URL and HTML ingest (trafilatura needs lxml's html_clean, which old pips leave out)
        importlib.import_module("trafilatura")
    except ImportError as exc:
        fail(f"trafilatura does not import: {exc}")
    bin_dir = Path(sys.executable).parent
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    pdf = args.pdf.resolve()
    figures = await over_stdio(bin_dir, work, pdf, args.query, args.expect)
    figures |= await over_http(bin_dir, work, pdf, args.query, args.expect)
    figures |= embedding_rate(pdf, work)
    print(json.dumps({"ok": True, "python": sys.version.split()[0]} | figures))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pdf", type=Path, required=True)
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--query", default="reconfigure a package after changing the default grub settings")
    parser.add_argument("--expect", default="grub")
    asyncio.run(main(parser.parse_args()))
