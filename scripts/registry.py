"""What the MCP registry and Claude Desktop read about this server: server.json and the .mcpb bundle's folder.

Both are made from VERSION and the constants here by `make dist` (scripts/build_dist.py); the package README's
`mcp-name:` marker must name SERVER_NAME (the registry checks it on PyPI; tests/packaging checks it here).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SCHEMA_URL = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"
# The registry name: reverse-DNS of a namespace the publisher proves (io.github.<owner> by GitHub login).
# Change it, and the marker in services/ingestion_mcp/README.md, to the GitHub owner that publishes.
SERVER_NAME = "io.github.ingestion-mcp/ingestion-mcp"
PACKAGE = "ingestion-mcp-server"  # "ingestion-mcp" on PyPI is another project's
LICENSE = "Apache-2.0"  # SPDX, as every pyproject declares; LICENSE and NOTICE at the root travel with the bundle
DESCRIPTION = "Ingest PDFs, Office files and web pages; hybrid search with page citations. Offline, no torch."
# (name, description, required, secret, default) of the environment variables a client may set.
ENVIRONMENT: list[tuple[str, str, bool, bool, str | None]] = [
    (
        "INGESTION_MCP_ALLOWED_ROOTS",
        "Folders the server may read documents from, comma-separated (the only ones: "
        "'..' and escaping links are refused). Default: the folder the server starts in.",
        True,
        False,
        None,
    ),
    (
        "INGESTION_MCP_DATA_DIR",
        "Where the index, its models' caches and fetched files are kept. Default: ./data in "
        "the folder the server starts in; give a writable folder of your own.",
        False,
        False,
        None,
    ),
    (
        "INGESTION_MCP_PROFILES",
        "Tool sets to serve, comma-separated: ingestion (default), chatgpt (search/fetch), "
        "mcpvectordb, vector_store, docs_server, obsidian.",
        False,
        False,
        "ingestion",
    ),
    ("DEFAULT_COLLECTION", "Collection used when a tool names none.", False, False, "rag_gateway"),
    (
        "INGESTION_MCP_TRANSPORT",
        "stdio (what clients launch) or streamable-http (serve http://HOST:PORT/mcp).",
        False,
        False,
        "stdio",
    ),
    (
        "AUTH_TOKEN",
        "Bearer token the HTTP endpoint requires (streamable-http only; required for a non-loopback bind).",
        False,
        True,
        None,
    ),
]


def environment_variables() -> list[dict[str, Any]]:
    out = []
    for name, description, required, secret, default in ENVIRONMENT:
        entry: dict[str, Any] = {
            "name": name,
            "description": description,
            "isRequired": required,
            "isSecret": secret,
            "format": "string",
        }
        if default is not None:
            entry["default"] = default
        out.append(entry)
    return out


def render_server_json(version: str) -> dict[str, Any]:
    """server.json (registry schema 2025-12-11): the PyPI package, run over stdio with its embedded extra."""
    return {
        "$schema": SCHEMA_URL,
        "name": SERVER_NAME,
        "title": "ingestion-mcp",
        "description": DESCRIPTION,
        "version": version,
        "packages": [{
            "registryType": "pypi",
            "registryBaseUrl": "https://pypi.org",
            "identifier": PACKAGE,
            "version": version,
            # `uvx --from ingestion-mcp-server[embedded]==V ingestion-mcp`: the extra brings the services it embeds.
            "runtimeHint": "uvx",
            "runtimeArguments": [{"type": "named", "name": "--from", "value": f"{PACKAGE}[embedded]=={version}"}],
            "transport": {"type": "stdio"},
            "environmentVariables": environment_variables(),
        }],
    }  # fmt: skip


def mcpb_manifest(version: str) -> dict[str, Any]:
    """The Claude Desktop extension's manifest (MCPB 0.4, server type uv: the host installs the PyPI package)."""
    env = {
        "INGESTION_MCP_ALLOWED_ROOTS": "${user_config.allowed_root}",
        "INGESTION_MCP_DATA_DIR": "${user_config.data_dir}",
        "INGESTION_MCP_PROFILES": "ingestion",
    }
    return {
        "manifest_version": "0.4",
        "name": "ingestion-mcp",
        "display_name": "ingestion-mcp",
        "version": version,
        "description": DESCRIPTION,
        "long_description": (
            "Indexes your documents (PDF, Word, PowerPoint, Excel, HTML, Markdown, text, scans by OCR) on this "
            "machine and finds passages in them by keywords and meaning, citing document, page and section. The "
            "bundled embedding model runs on ONNX Runtime: nothing is sent anywhere, nothing is downloaded at run time."
        ),
        "author": {"name": "ingestion-mcp maintainers"},
        "license": LICENSE,
        "server": {
            "type": "uv",
            "entry_point": "src/server.py",
            "mcp_config": {
                "command": "uv", "args": ["run", "--directory", "${__dirname}", "src/server.py"], "env": env,
            },
        },
        "tools_generated": True,
        "keywords": ["documents", "pdf", "search", "rag", "retrieval", "offline"],
        "compatibility": {"platforms": ["darwin", "linux", "win32"], "runtimes": {"python": ">=3.11"}},
        "user_config": {
            "allowed_root": {
                "type": "directory", "title": "Documents folder",
                "description": "The folder the server may read documents from (its subfolders too).",
                "required": True, "default": "${HOME}/Documents",
            },
            "data_dir": {
                "type": "directory", "title": "Index folder",
                "description": "Where the index is kept (created when missing).",
                "required": True, "default": "${HOME}/.ingestion-mcp",
            },
        },
    }  # fmt: skip


def mcpb_pyproject(version: str) -> str:
    return (
        "[project]\n"
        'name = "ingestion-mcp-extension"\n'
        f'version = "{version}"\n'
        'description = "Claude Desktop extension of ingestion-mcp (the server from PyPI)."\n'
        'requires-python = ">=3.11"\n'
        f'license = "{LICENSE}"\n'
        f'dependencies = ["{PACKAGE}[embedded]=={version}"]\n'
    )


SERVER_PY = '''"""The Claude Desktop extension's entry point: ingestion-mcp over stdio (installed by the host's uv)."""

from ingestion_mcp.cli.server_command import main

if __name__ == "__main__":
    main()
'''


def render_mcpb(stage: Path, version: str) -> Path:
    """The bundle's folder: manifest.json, pyproject.toml (the host's uv installs from it), src/server.py, and the
    project's LICENSE and NOTICE."""
    shutil.rmtree(stage, ignore_errors=True)
    (stage / "src").mkdir(parents=True)
    for name in ("LICENSE", "NOTICE"):
        shutil.copyfile(ROOT / name, stage / name)
    (stage / "manifest.json").write_text(json.dumps(mcpb_manifest(version), indent=2) + "\n", encoding="utf-8")
    (stage / "pyproject.toml").write_text(mcpb_pyproject(version), encoding="utf-8")
    (stage / "src" / "server.py").write_text(SERVER_PY, encoding="utf-8")
    return stage
