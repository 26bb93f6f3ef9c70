#!/usr/bin/env bash
# The compose deployment run for real (make compose-smoke): build every image, start the stack with the milvus-lite
# stand-in, drive it through a real MCP client over HTTP, break it, tear it down; a table of steps at the end.
# Podman (with podman-compose from .venv) where installed, else Docker with compose v2. See scripts/compose_smoke.py.
#   AIRGAP=1    build the Debian bookworm base from this machine's apt sources first (scripts/base_image.sh)
#   HOST_PIP=1  pip inside the builds sees this machine's pip configuration and wheel folders (podman)
#   KEEP_UP=1   leave the stack running
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
exec "${PYTHON:-.venv/bin/python}" scripts/compose_smoke.py "$@"
