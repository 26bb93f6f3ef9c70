"""Dockerfiles: multi-stage, non-root numeric USER, HEALTHCHECK, pinned bases, real paths."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SERVICES = {
    # dir: (entry point, port)
    "docling": ("docling-service", 8001),
    "chunker": ("chunker-service", 8002),
    "vector_gateway": ("vector-gateway", 8003),
    "ingestion_mcp": ("ingestion-mcp", 8000),
}


@pytest.mark.parametrize("service", SERVICES)
def test_dockerfile_invariants(service, checks):
    path = REPO / "services" / service / "Dockerfile"
    assert checks.dockerfile(path.read_text(), str(path.relative_to(REPO))) == []


@pytest.mark.parametrize("service", SERVICES)
def test_dockerfile_matches_the_service(service):
    entry, port = SERVICES[service]
    text = (REPO / "services" / service / "Dockerfile").read_text()
    assert f"EXPOSE {port}" in text
    assert f"'{port}'" in text, "HEALTHCHECK default port"
    assert f'CMD ["{entry}"]' in text
    # Every COPY from the build context names a path that exists in the repository.
    for src in re.findall(r"^COPY (?!--from)(\S+) ", text, flags=re.M):
        if src != "constraints.txt":  # written by the lead at the root; checked below when present
            assert (REPO / src).exists(), src
    pyproject = REPO / "services" / service / "pyproject.toml"
    if pyproject.exists():
        scripts = tomllib.loads(pyproject.read_text())["project"].get("scripts", {})
        assert entry in scripts, f"{pyproject}: no [project.scripts] {entry}"


@pytest.mark.parametrize("service", SERVICES)
def test_torch_is_the_pinned_cpu_build_or_absent(service):
    """Every default image refuses torch slipping in (issue 27: the chunker carried 1.8-2 GB of torch for a
    tokenizer, the gateway torch though it starts torch-free); where a stage does install torch (the gateway's
    ONNX export, docling's model variants, the GPU variant), the pinned CPU build goes in before anything that asks
    for it, so nothing resolves a CUDA build from PyPI."""
    text = (REPO / "services" / service / "Dockerfile").read_text()
    assert "find_spec('torch')" in text, "images without torch must refuse one slipping in"
    if "torch==" in text:
        assert "ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu" in text
        assert "ARG TORCH_VERSION=2.13.0" in text
        for wants_torch in re.finditer(r"\[torch\]|\[models-local\]", text):
            assert "torch==" in text[: wants_torch.start()], f"{wants_torch[0]} installed before the pinned torch"


@pytest.mark.parametrize("service", SERVICES)
def test_pip_itself_is_pinned_in_the_venv(service):
    """Bookworm's pip 23.0 left the lxml[html_clean] extra unresolved: trafilatura failed to import (issue 27)."""
    text = (REPO / "services" / service / "Dockerfile").read_text()
    assert re.search(r"^ARG PIP_VERSION=\d+\.\d+", text, flags=re.M)
    assert '/opt/venv/bin/python -m pip install -q "pip==${PIP_VERSION}"' in text


def test_mcp_image_has_git():
    assert re.search(r"apt-get install[^\n]*\bgit\b", (REPO / "services/ingestion_mcp/Dockerfile").read_text())


def test_dockerignore_keeps_the_context_small():
    ignored = (REPO / ".dockerignore").read_text().split()
    for entry in (".venv", ".git", "data", "tests", ".env", "**/__pycache__"):
        assert entry in ignored


def test_constraints_file_when_present():
    constraints = REPO / "constraints.txt"
    if not constraints.exists():
        pytest.skip("constraints.txt not written yet (the images need it)")
    assert re.search(r"^torch==2\.13\.0", constraints.read_text(), flags=re.M)


def test_the_mcp_image_can_run_the_queue_worker():
    """compose and openshift/ run `ingestion-mcp-worker` from the ingestion-mcp image: it needs the queue extra."""
    text = (REPO / "services" / "ingestion_mcp" / "Dockerfile").read_text()
    assert '"./services/ingestion_mcp[queue]"' in text
