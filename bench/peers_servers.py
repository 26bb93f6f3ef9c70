"""The servers bench.peers drives, each through its own MCP tools: ingestion-mcp (int8 or fp32) and chroma-mcp.

Each gives how it is launched (a fresh data folder, offline), how a corpus goes in the way an agent would put it
(ingestion-mcp: ``sync_folder`` of one text file per document, or ``ingest_batch`` of texts; chroma-mcp:
``chroma_add_documents`` in batches of 100, the document's title and text as one string), and how a query comes back
as corpus ids, best first (``top_k``/``n_results`` 10, as returned: several chunks of one document count once).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters

from .data import Doc
from .metrics import fold_to_documents

ROOT = Path(__file__).resolve().parents[1]
SRC_DIRS = ("services/ingestion_mcp/src", "services/docling/src", "services/chunker/src",
            "services/vector_gateway/src", "libs/contracts/src", "libs/servicekit/src")  # fmt: skip
SERVICE_URLS = ("DOCLING_SERVICE_URL", "CHUNKER_SERVICE_URL", "VECTOR_GATEWAY_URL", "VECTOR_GATEWAY_MILVUS_URI")
COLLECTION = "peers"
CHROMA_BATCH = 100
OURS_BATCH = 100  # ingest_batch items per call (the tool takes up to 200)
POLL_S = 0.2
# What chromadb's ONNXMiniLM_L6_V2 looks for under ~/.cache/chroma/onnx_models/all-MiniLM-L6-v2/onnx before it
# downloads anything: the model and the tokenizer files.
CHROMA_MODEL_DIR = Path(".cache/chroma/onnx_models/all-MiniLM-L6-v2/onnx")
CHROMA_FILES = ("config.json", "special_tokens_map.json", "tokenizer_config.json", "tokenizer.json", "vocab.txt")


class ToolError(RuntimeError):
    pass


async def call(session: ClientSession, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A tool's answer as a dict: its structured content, else its text read as JSON (chroma-mcp's tools answer
    text), else {"text": the text}."""
    answer = await session.call_tool(tool, arguments)
    if answer.is_error:
        raise ToolError(f"{tool} failed: {str(answer.content)[:500]}")
    if answer.structured_content is not None:
        return answer.structured_content
    text = answer.content[0].text if answer.content and hasattr(answer.content[0], "text") else ""
    try:
        parsed = json.loads(text)
    except ValueError:
        return {"text": text}
    return parsed if isinstance(parsed, dict) else {"text": parsed}


@dataclass
class Server:
    """One system under test: its name, launch and the two things the bench asks of it."""

    name: str
    command: list[str]
    env: dict[str, str] = field(default_factory=dict)

    def params(self, scratch: Path) -> StdioServerParameters:
        raise NotImplementedError

    async def ingest(self, session: ClientSession, docs: list[Doc], folder: Path) -> dict[str, Any]:
        raise NotImplementedError

    async def ranked(self, session: ClientSession, query: str) -> list[str]:
        raise NotImplementedError

    async def warm(self, session: ClientSession) -> None:
        """The first call after the handshake, on the empty store (it waits for what the server loads)."""
        raise NotImplementedError


@dataclass
class Ours(Server):
    precision: str = "int8"
    path: str = "sync"  # sync: sync_folder of the files; batch: ingest_batch of texts

    docs: Path | None = None  # the folder of the corpus' files, where the server may read
    model_cache: Path | None = None  # the model's files as the user's install ships them (model_cache())
    stems: dict[str, str] = field(default_factory=dict)  # document id -> its file's name without .txt (bench.peers)

    def params(self, scratch: Path) -> StdioServerParameters:
        env = {**os.environ, "INGESTION_MCP_DATA_DIR": str(scratch / "data"), "INGESTION_MCP_ALLOWED_ROOTS":
               str(self.docs or scratch), "HF_HUB_OFFLINE": "1", "VECTOR_GATEWAY_EMBEDDING_PRECISION": self.precision,
               "PYTHONPATH": os.pathsep.join(str(ROOT / d) for d in SRC_DIRS)}  # fmt: skip
        if self.model_cache is not None:
            env["VECTOR_GATEWAY_EMBEDDING_CACHE_DIR"] = str(self.model_cache)
        for name in SERVICE_URLS:
            env.pop(name, None)
        args = ["-m", "ingestion_mcp.cli.server_command"]
        return StdioServerParameters(command=sys.executable, args=args, env=env | self.env)

    async def ingest(self, session: ClientSession, docs: list[Doc], folder: Path) -> dict[str, Any]:
        if self.path == "sync":
            synced = await call(session, "sync_folder", {"folder": str(folder), "collection": COLLECTION})
            return await self._finished(session, synced)
        done = 0
        for start in range(0, len(docs), OURS_BATCH):
            items = [{"text": f"{d.title}\n\n{d.text}", "name": self._stem(d), "source": self._stem(d)}
                     for d in docs[start : start + OURS_BATCH]]  # fmt: skip
            queued = await call(session, "ingest_batch", {"items": items, "collection": COLLECTION})
            answer = await self._finished(session, queued)
            done += int(answer.get("succeeded") or 0)
        return {"succeeded": done}

    @staticmethod
    async def _finished(session: ClientSession, answer: dict[str, Any]) -> dict[str, Any]:
        """The job's result when the call answered with a job (it outlived the tool's wait), polled as an agent."""
        while job_id := answer.get("job_id"):
            await anyio.sleep(POLL_S)
            job = (await call(session, "get_job_status", {"job_id": job_id})).get("job") or {}
            if job.get("status") not in ("running", "queued"):
                return dict(job.get("result") or {"error": job.get("error"), "status": job.get("status")})
        return answer

    async def warm(self, session: ClientSession) -> None:
        await call(session, "search", {"query": "warm-up", "top_k": 10})  # every collection: none yet

    async def ranked(self, session: ClientSession, query: str) -> list[str]:
        answer = await call(session, "search", {"query": query, "collection": COLLECTION, "top_k": 10})
        stems = (Path(hit["source"]).stem for hit in answer.get("results") or [])
        return fold_to_documents(self._ids.get(stem, stem) for stem in stems)

    def _stem(self, doc: Doc) -> str:
        return self.stems.get(doc.doc_id, doc.doc_id)

    @cached_property
    def _ids(self) -> dict[str, str]:
        """File name -> document id (made once: ranked() is inside the timed search)."""
        return {stem: doc_id for doc_id, stem in self.stems.items()}


@dataclass
class Chroma(Server):
    model_dir: Path | None = None  # where the MiniLM ONNX file and tokenizer are taken from (ours)

    def params(self, scratch: Path) -> StdioServerParameters:
        home = scratch / "home"
        place_minilm(home, self.model_dir)
        env = {**os.environ, "HOME": str(home), "HF_HUB_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False"}
        args = [*self.command[1:], "--client-type", "persistent", "--data-dir", str(scratch / "chroma")]
        return StdioServerParameters(command=self.command[0], args=args, env=env | self.env)

    async def ingest(self, session: ClientSession, docs: list[Doc], folder: Path) -> dict[str, Any]:
        await call(session, "chroma_create_collection", {"collection_name": COLLECTION})
        for start in range(0, len(docs), CHROMA_BATCH):
            batch = docs[start : start + CHROMA_BATCH]
            await call(session, "chroma_add_documents", {
                "collection_name": COLLECTION, "documents": [f"{d.title}\n\n{d.text}" for d in batch],
                "ids": [d.doc_id for d in batch], "metadatas": [{"source": d.doc_id} for d in batch],
            })  # fmt: skip
        count = await call(session, "chroma_get_collection_count", {"collection_name": COLLECTION})
        return {"succeeded": count.get("text")}

    async def warm(self, session: ClientSession) -> None:
        await call(session, "chroma_list_collections", {})  # chroma loads its model with the first documents

    async def ranked(self, session: ClientSession, query: str) -> list[str]:
        answer = await call(session, "chroma_query_documents",
                            {"collection_name": COLLECTION, "query_texts": [query], "n_results": 10})  # fmt: skip
        ids = answer.get("ids") or [[]]
        return [str(i) for i in ids[0]]


def place_minilm(home: Path, onnx_dir: Path | None) -> None:
    """The MiniLM files chromadb would download, placed where it looks for them under ``home``: our fp32 ONNX export
    of the bundled all-MiniLM-L6-v2 and its tokenizer files, so the peer runs the same model offline."""
    target = home / CHROMA_MODEL_DIR
    if (target / "model.onnx").is_file():
        return
    if onnx_dir is None:
        raise SystemExit("no MiniLM ONNX file to give the peer: run the gateway once (it exports the model)")
    from vector_gateway.embedder import bundled_model_dir

    tokenizer_dir = bundled_model_dir()
    target.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(onnx_dir / "model.onnx", target / "model.onnx")
    for name in CHROMA_FILES:
        shutil.copyfile(tokenizer_dir / name, target / name)


_PREPARE = """
import sys
from vector_gateway.embedder import create_embedder
from vector_gateway.settings import GatewaySettings
for precision in ("fp32", "int8"):
    create_embedder(GatewaySettings(embedding_cache_dir=sys.argv[1], embedding_precision=precision))
"""


def model_cache() -> Path:
    """The folder that holds the bundled model's ONNX export, its manifest (light.json) and its int8 variant, made
    once before any server is timed (in a process of its own: making them loads torch). A user's install ships these
    files (the ingestion-mcp-minilm wheel), so its server starts torch-free; a server given a fresh data folder and
    no such folder would make them again at every start, with torch loaded (about 1 GB more at rest), which is no
    user's case."""
    from vector_gateway.onnx_export import default_cache_dir

    cache = default_cache_dir()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": os.pathsep.join(str(ROOT / d) for d in SRC_DIRS)}
    subprocess.run([sys.executable, "-c", _PREPARE, str(cache)], check=True, env=env, capture_output=True)
    return cache


def fp32_export(cache: Path) -> Path:
    """The folder of the gateway's fp32 ONNX export of the bundled model in ``cache`` (model_cache)."""
    from vector_gateway.embedder import bundled_model_dir
    from vector_gateway.onnx_export import onnx_file

    return onnx_file(bundled_model_dir(), cache).parent
