#!/usr/bin/env bash
# Install everything the project needs into .venv (created when missing). Safe to re-run:
# it does nothing when the package definitions have not changed since the last install.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
# shellcheck disable=SC1091
. .venv/bin/activate

stamp=.venv/.install-stamp
digest=$(cat VERSION constraints.txt requirements-dev.txt libs/*/pyproject.toml services/*/pyproject.toml | sha256sum | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$digest" ]; then
  exit 0
fi

export PIP_DISABLE_PIP_VERSION_CHECK=1
# pip itself pinned (the images pin the same one: older pips leave extras such as lxml[html_clean] unresolved).
python -m pip install -q "pip==26.3"
# The distributions' names before they became ingestion-mcp-* (docs/packaging.md): a venv made before keeps them as
# editable installs of the same folders beside the new ones; removed once (pip skips the names it does not find).
python -m pip uninstall -y -q chunker-service docling-service ingestion-contracts ingestion-servicekit vector-gateway \
  2>/dev/null || true
# The services the server embeds are installed one by one (not ingestion-mcp-server[embedded], the user's torch-free set,
# whose model distribution `make dist` builds from this environment): here with torch, to export and test the model.
# torch first, pinned: anything unpinned pulls a multi-GB CUDA build (see shared/ENVIRONMENT.md).
python -m pip install -q "torch==2.13.0"
python -m pip install -q -c constraints.txt \
  -e libs/contracts -e libs/servicekit \
  -e services/docling -e services/chunker -e "services/vector_gateway[torch,lance]" \
  -e "services/ingestion_mcp[queue]" \
  -r requirements-dev.txt
# The embedding model's ONNX export, made offline from the bundled model (the gateway would make it on first start).
python -m vector_gateway.onnx_bake >/dev/null
# A new file renamed into place: a stamp hard-linked into other copies of the venv is never written through.
echo "$digest" > "$stamp.new" && mv "$stamp.new" "$stamp"
