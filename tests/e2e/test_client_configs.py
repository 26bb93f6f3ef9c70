"""Every client configuration in docs/clients.md, parsed as its client parses it and run: each stdio configuration's
command and environment started as the server a real MCP client (the SDK's) lists and searches; each HTTP one's URL
and header reaching a server that requires that token; ChatGPT's server environment served with OAuth (a test
issuer's key file standing in for the issuer's URL). The client applications themselves cannot run here."""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from scripts.service_stack import free_port
from scripts.token_kit import Issuer

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

DOC = Path(__file__).resolve().parents[2] / "docs" / "clients.md"
BLOCK = re.compile(r"^```(\w+) client=(\S+) transport=(\S+)\n(.*?)^```", re.MULTILINE | re.DOTALL)
CLIENTS = {"claude-code", "claude-desktop", "cursor", "vscode", "gemini-cli", "codex", "chatgpt", "goose"}
SERVER = Path(sys.executable).parent / "ingestion-mcp"
TOKEN = "client-matrix-token"
# How each client writes "the token from the environment" (or VS Code's prompted input) in a header.
TOKEN_REFERENCES = re.compile(r"\$\{env:AUTH_TOKEN\}|\$\{AUTH_TOKEN\}|\$AUTH_TOKEN\b|\$\{input:ingestion-token\}")
NOTE = "Lighthouse keepers log the swell and the visibility every evening at six, then trim the lamp's wick."


@dataclass(frozen=True)
class Stdio:
    command: str
    args: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    startup_timeout_s: float | None = None  # Codex's startup_timeout_sec (10 s when absent)


@dataclass(frozen=True)
class Http:
    url: str
    authorization: str | None
    # The variables the client expands in a header: None for any of the environment's; Goose only its own (envs,
    # env_keys: crates/goose/src/agents/extension.rs, ExtensionConfig::resolve).
    expands: frozenset[str] | None = None
    startup_timeout_s: float | None = None  # Codex's startup_timeout_sec (10 s when absent)


def blocks() -> list[tuple[str, str, str, str]]:
    return [match.groups() for match in BLOCK.finditer(DOC.read_text())]


def claude_code(argv: list[str]) -> Stdio | Http:
    """`claude mcp add [--transport T] [--env K=V]... [--header H]... NAME [URL] [-- COMMAND ARGS...]`."""
    assert argv[:3] == ["claude", "mcp", "add"], argv
    rest, command = (argv[3 : argv.index("--")], argv[argv.index("--") + 1 :]) if "--" in argv else (argv[3:], [])
    parser = argparse.ArgumentParser(exit_on_error=False)
    parser.add_argument("--transport", choices=["stdio", "http", "sse"], default="stdio")
    parser.add_argument("--env", "-e", action="append", default=[])
    parser.add_argument("--header", "-H", action="append", default=[])
    parser.add_argument("name")
    parser.add_argument("url", nargs="?")
    parsed = parser.parse_args(rest)
    if parsed.transport == "http":
        headers = dict(h.split(": ", 1) for h in parsed.header)
        return Http(parsed.url, headers.get("Authorization"))
    env = tuple(sorted(tuple(pair.split("=", 1)) for pair in parsed.env))
    return Stdio(command[0], tuple(command[1:]), env)  # type: ignore[arg-type]  # pairs of two


def from_entry(entry: dict[str, Any], *, command: str = "command", url_keys: tuple[str, ...] = ("url",),
               env: str = "env") -> Stdio | Http:  # fmt: skip
    url = next((entry[key] for key in url_keys if key in entry), None)
    if url is not None:
        return Http(url, (entry.get("headers") or {}).get("Authorization"))
    pairs = tuple(sorted((str(k), str(v)) for k, v in (entry.get(env) or {}).items()))
    return Stdio(entry[command], tuple(entry.get("args") or ()), pairs)


def launch(client: str, language: str, text: str) -> Stdio | Http | dict[str, str]:
    """What a configuration starts or reaches, read the way its client reads it."""
    if client == "chatgpt":
        return dict(line.split("=", 1) for line in text.splitlines() if line.strip())
    if client == "claude-code":
        return claude_code(shlex.split(text))
    data = {"json": json.loads, "toml": tomllib.loads, "yaml": yaml.safe_load}[language](text)
    if client == "vscode":
        entry = data["servers"]["ingestion"]
        assert entry["type"] in ("stdio", "http"), entry
        return from_entry(entry)
    if client == "codex":
        entry = data["mcp_servers"]["ingestion"]
        startup = entry.get("startup_timeout_sec")
        if "url" in entry:
            return Http(entry["url"], f"Bearer ${entry['bearer_token_env_var']}", startup_timeout_s=startup)
        return replace(from_entry(entry), startup_timeout_s=startup)
    if client == "goose":
        entry = data["extensions"]["ingestion"]
        assert entry["type"] in ("stdio", "streamable_http") and entry["enabled"] is True, entry
        spec = from_entry(entry, command="cmd", url_keys=("uri",), env="envs")
        own = frozenset(entry.get("env_keys") or ()) | frozenset(entry.get("envs") or {})
        return replace(spec, expands=own) if isinstance(spec, Http) else spec
    return from_entry(data["mcpServers"]["ingestion"], url_keys=("url", "httpUrl"))


def test_every_client_has_its_configurations_and_each_parses() -> None:
    found = {(client, transport): launch(client, language, text) for language, client, transport, text in blocks()}
    assert {client for client, _ in found} == CLIENTS
    assert {client for client, transport in found if transport == "stdio"} == CLIENTS - {"chatgpt"}
    assert {client for client, transport in found if transport == "http"} == CLIENTS - {"claude-desktop"}
    for (client, transport), spec in found.items():
        expected = dict if client == "chatgpt" else Stdio if transport == "stdio" else Http
        assert isinstance(spec, expected), (client, transport, spec)


def test_every_stdio_command_is_an_absolute_path_and_codex_waits_for_a_cold_start() -> None:
    """Apps start servers without the shell's PATH, and a venv's bin/ is on none (issue 50): a bare command would not
    start. Codex gives 10 s to start and list tools unless told; the server's first start can take longer."""
    found = [(c, launch(c, lang, text)) for lang, c, transport, text in blocks() if c != "chatgpt"]
    for client, spec in found:
        if isinstance(spec, Stdio):
            assert spec.command == "/home/me/.local/bin/ingestion-mcp", (client, spec)
    codex = [spec for client, spec in found if client == "codex"]
    assert len(codex) == 2 and all((spec.startup_timeout_s or 10) >= 60 for spec in codex), codex


def resolved(spec: Stdio, home: Path) -> Stdio:
    """The documented placeholders made real: /home/me is a temporary folder, the command the installed one."""
    assert Path(spec.command).name == "ingestion-mcp" and spec.args == (), spec
    env = tuple((k, v.replace("/home/me", str(home))) for k, v in spec.env)
    assert {k for k, _ in env} == {"INGESTION_MCP_ALLOWED_ROOTS", "INGESTION_MCP_DATA_DIR"}, spec
    return Stdio(str(SERVER), (), env, spec.startup_timeout_s)


def clean_env(extra: dict[str, str]) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("INGESTION_MCP_", "DOCLING_", "CHUNKER_"))}
    keep = {k: v for k, v in keep.items() if not k.startswith("VECTOR_GATEWAY") and k != "AUTH_TOKEN"}
    # The development model's baked export (root conftest), as the user's install ships its own.
    keep |= {k: v for k, v in os.environ.items() if k == "VECTOR_GATEWAY_EMBEDDING_CACHE_DIR"}
    return keep | extra


async def test_each_stdio_configuration_starts_a_server_that_ingests_and_searches(tmp_path: Path) -> None:
    specs = {launch(c, lang, text) for lang, c, transport, text in blocks() if transport == "stdio"}
    distinct = {resolved(spec, tmp_path) for spec in specs if isinstance(spec, Stdio)}
    assert len(specs) >= 2 and distinct  # Claude Desktop's absolute path and everyone's PATH lookup
    (tmp_path / "Documents").mkdir()
    for spec in distinct:
        params = StdioServerParameters(command=spec.command, args=list(spec.args), env=clean_env(dict(spec.env)))
        with (tmp_path / "stderr.log").open("w") as errlog:
            async with Client(stdio_client(params, errlog=errlog)) as client:
                names = {tool.name for tool in (await client.list_tools()).tools}
                assert {"ingest_document", "search", "get_document_outline"} <= names
                made = await client.call_tool("ingest_text", {"text": NOTE, "name": "lighthouse"})
                assert not made.is_error, made.content
                found = await client.call_tool("search", {"query": "when is the swell logged"})
                assert "swell" in json.dumps(found.structured_content), found.content
        assert (tmp_path / ".ingestion-mcp").is_dir()  # the index went where the configuration said


def wait_ready(log: Path, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 300
    while "ingestion-mcp is ready" not in log.read_text(errors="replace"):
        assert process.poll() is None and time.monotonic() < deadline, log.read_text(errors="replace")[-3000:]
        time.sleep(0.2)


def as_sent(spec: Http) -> str:
    """The Authorization header as the client sends it: the token where the client expands the reference."""
    assert spec.authorization
    if spec.expands is not None and "AUTH_TOKEN" not in spec.expands:
        return spec.authorization  # Goose without AUTH_TOKEN in env_keys: the text as written
    return TOKEN_REFERENCES.sub(TOKEN, spec.authorization)


def test_goose_expands_a_header_variable_only_when_the_extension_names_it() -> None:
    (text,) = [text for _, c, transport, text in blocks() if c == "goose" and transport == "http"]
    spec = launch("goose", "yaml", text)
    assert isinstance(spec, Http) and as_sent(spec) == f"Bearer {TOKEN}"
    bare = yaml.safe_load(text)
    del bare["extensions"]["ingestion"]["env_keys"]
    unexpanded = launch("goose", "yaml", yaml.safe_dump(bare))
    assert isinstance(unexpanded, Http) and as_sent(unexpanded) == "Bearer ${AUTH_TOKEN}"


async def test_each_http_configuration_reaches_a_server_that_requires_its_token(tmp_path: Path) -> None:
    specs = [launch(c, lang, text) for lang, c, transport, text in blocks() if transport == "http" and c != "chatgpt"]
    port = free_port()
    env = clean_env({"AUTH_TOKEN": TOKEN, "INGESTION_MCP_DATA_DIR": str(tmp_path / "data"),
                     "INGESTION_MCP_ALLOWED_ROOTS": str(tmp_path)})  # fmt: skip
    log = tmp_path / "http.log"
    with log.open("w") as out:
        process = subprocess.Popen([str(SERVER), "--transport", "streamable-http", "--port", str(port)], env=env,
                                   stdout=out, stderr=out)  # fmt: skip
        try:
            wait_ready(log, process)
            for spec in specs:
                assert isinstance(spec, Http) and spec.url == "http://127.0.0.1:8000/mcp", spec
                assert spec.authorization and TOKEN_REFERENCES.search(spec.authorization), spec
                header = as_sent(spec)
                url = spec.url.replace(":8000/", f":{port}/")
                async with (
                    httpx.AsyncClient(headers={"Authorization": header}, timeout=60) as http,
                    Client(streamable_http_client(url, http_client=http)) as client,
                ):
                    assert "search" in {tool.name for tool in (await client.list_tools()).tools}
            async with httpx.AsyncClient() as http:  # the token is really required
                refused = await http.post(f"http://127.0.0.1:{port}/mcp", json={"jsonrpc": "2.0", "id": 1})
                assert refused.status_code == 401
        finally:
            process.terminate()
            process.wait(timeout=60)


async def test_chatgpts_server_environment_serves_search_and_fetch_behind_oauth(tmp_path: Path) -> None:
    (documented,) = [launch(c, lang, text) for lang, c, _, text in blocks() if c == "chatgpt"]
    assert isinstance(documented, dict)
    audience, issuer = documented["INGESTION_MCP_OAUTH_AUDIENCE"], documented["INGESTION_MCP_OAUTH_ISSUER"]
    tokens = Issuer(issuer, audience)
    tokens.keys.write_jwks(tmp_path / "jwks.json")
    (tmp_path / "policy.toml").write_text('[[rules]]\nscope = "docs"\nright = "read"\ncollections = ["*"]\n')
    port = free_port()
    env = dict(documented)
    del env["INGESTION_MCP_OAUTH_JWKS_URL"]  # the issuer is not reachable here: its key set as a file
    env |= {"INGESTION_MCP_OAUTH_JWKS_FILE": str(tmp_path / "jwks.json"), "INGESTION_MCP_PORT": str(port),
            "INGESTION_MCP_HOST": "127.0.0.1", "INGESTION_MCP_ACCESS_POLICY": str(tmp_path / "policy.toml"),
            "INGESTION_MCP_ALLOWED_ROOTS": str(tmp_path), "INGESTION_MCP_DATA_DIR": str(tmp_path / "data")}  # fmt: skip
    token = tokens.token("reader", scope="docs")
    base = f"http://127.0.0.1:{port}"
    log = tmp_path / "chatgpt.log"
    with log.open("w") as out:
        process = subprocess.Popen([str(SERVER)], env=clean_env(env), stdout=out, stderr=out)
        try:
            wait_ready(log, process)
            async with httpx.AsyncClient(timeout=60) as http:
                metadata = (await http.get(f"{base}/.well-known/oauth-protected-resource/mcp")).json()
                assert metadata["resource"] == audience and metadata["authorization_servers"] == [issuer]
                assert (await http.post(f"{base}/mcp", json={"jsonrpc": "2.0", "id": 1})).status_code == 401
            async with (
                httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http,
                Client(streamable_http_client(f"{base}/mcp", http_client=http)) as client,
            ):
                assert {tool.name for tool in (await client.list_tools()).tools} == {"search", "fetch"}
                answer = await client.call_tool("search", {"query": "anything"})
                assert json.loads(answer.content[0].text) == {"results": []}
        finally:
            process.terminate()
            process.wait(timeout=60)
