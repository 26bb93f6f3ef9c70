# The few verbs a newcomer needs. Every target installs what it needs first.
SHELL := /bin/bash
VENV := .venv/bin
export HF_HUB_OFFLINE := 1
# Where `make install` bakes the development model's ONNX export (vector_gateway.onnx_bake): the embedded server
# would otherwise derive it again in each new data folder (docs/privacy.md). The user's install ships it made.
export VECTOR_GATEWAY_EMBEDDING_CACHE_DIR ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/vector-gateway/onnx

.PHONY: install run run-stdio test lint format bench bench-quick bench-quiet load chaos compose-smoke fixtures screenshots dist publish check-dist

install:
	@scripts/install.sh

run: install  ## MCP server over streamable HTTP on http://127.0.0.1:8000/mcp, embedded services (logs as text, for a person)
	INGESTION_MCP_JSON_LOGS=$${INGESTION_MCP_JSON_LOGS:-false} $(VENV)/ingestion-mcp --transport streamable-http

run-stdio: install  ## MCP server over stdio (what MCP clients launch; logs as text, for a person)
	INGESTION_MCP_JSON_LOGS=$${INGESTION_MCP_JSON_LOGS:-false} $(VENV)/ingestion-mcp

dist: install  ## wheels + sdists of every distribution and the model distribution (twine-checked), dist/server.json (registry schema), the .mcpb bundle (npx mcpb): docs/packaging.md
	$(VENV)/python -m scripts.build_dist

publish:  ## maintainers: upload what `make dist` built to PyPI (TWINE_USERNAME=__token__ TWINE_PASSWORD=pypi-...), each distribution after those it requires, then the registry entry (mcp-publisher); docs/packaging.md
	for name in contracts servicekit minilm converter chunker gateway server; do \
	  $(VENV)/python -m twine upload dist/ingestion_mcp_$${name}-*.whl dist/ingestion_mcp_$${name}-*.tar.gz || exit 1; \
	done
	mcp-publisher publish dist/server.json

check-dist: dist  ## a clean Debian bookworm container (podman), no checkout, no torch: install dist/ + PyPI, ingest a PDF, search, over stdio and HTTP; the offline journey as a user without root under strace (JOURNEY=0: not)
	scripts/check_dist.sh

test: install  ## the whole test suite (what CI runs)
	$(VENV)/pytest -q

lint: install  ## ruff (lint + format) and mypy (the paths and settings are in pyproject.toml)
	$(VENV)/ruff check . && $(VENV)/ruff format --check . && $(VENV)/mypy

format: install
	$(VENV)/ruff format . && $(VENV)/ruff check --fix .

bench: install  ## retrieval quality (SciFact + dbpedia-5k, ~1 h on 2 cores), PDF fidelity, ingest throughput, search latency -> bench/results/latest.*; scale: milvus-lite, milvus-server and lance at 100k chunks through the MCP search tool (open, p50/p95, RSS of every process, nDCG@10 of both sets per engine, ratios to milvus-lite; bench.scale --rows 100000,300000,1000000 for the issue-31 sizes) -> bench/results/scale.json, docs/scale.png; console page latency -> bench/results/console_latency.json; big PDFs (10-500 pages, scans, a 95 MB photo PDF; idle tree) through the MCP tool -> bench/results/pdf_scale.json, docs/pdf_scale.png; embedder start, torch-free vs full -> bench/results/embedder_start.json; OCR models tiny vs small on office and varied scans -> bench/results/ocr_models.json; ONNX = torch vectors on 1,000 SciFact abstracts (300 in the suite); folder sync (sync_folder: 1,000 mixed files first/unchanged/edited, save -> searchable while watched, 10,000 small files in bounded memory) -> bench/results/sync.json
	$(VENV)/python -m bench.run
	$(VENV)/python -m bench.scale --quality
	$(VENV)/python -m bench.console_latency
	$(VENV)/python -m bench.pdf_scale
	$(VENV)/python -m bench.embedder_start
	$(VENV)/python -m bench.ocr_models --out bench/results/ocr_models.json
	ONNX_EQUALITY_PASSAGES=1000 $(VENV)/pytest -q services/vector_gateway/tests/test_onnx_embedder.py -k scifact_passages
	$(VENV)/python -m bench.sync
	$(VENV)/python -m bench.memory_return

bench-quick: install  ## the same on a small SciFact subset (a few minutes) -> bench/results/quick.*
	$(VENV)/python -m bench.run --quick --stem quick

bench-quiet: install  ## `make bench` started once the machine is quiet (1-minute load <= QUIET_LOAD, default 1.0), its cores and load before and after recorded -> bench/results/conditions.json; one benchmark: python -m bench.quiet -- python -m bench.X (docs/benchmarks.md)
	$(VENV)/python -m bench.quiet --max-load $${QUIET_LOAD:-1.0} --out bench/results/conditions.json -- $(MAKE) bench

load: install  ## loopback load test: N MCP clients (ingest + search) through a round-robin balancer to 2 MCP replicas + a queue worker on Redis (TOPOLOGY=embedded: one in-process server)
	$(VENV)/python scripts/load_test.py --clients $${CLIENTS:-8} --duration $${DURATION:-120} --topology $${TOPOLOGY:-queue}

chaos: install  ## the fault suite: every fault on a loopback topology (Redis AOF, milvus-lite server, 2 gateways, 2 MCP replicas, 2 workers) -> bench/results/chaos.{json,md}
	$(VENV)/python -m bench.chaos

compose-smoke: install  ## podman (+ podman-compose) or Docker: build every image, start the stack (milvus-lite stand-in), drive it through MCP over HTTP, restart and kill parts, OAuth, tear down; AIRGAP=1 HOST_PIP=1 where no registry is reachable (docs/deployment.md)
	scripts/compose_smoke.sh

fixtures: install  ## regenerate the real test documents in tests/fixtures
	$(VENV)/python tests/fixtures/make_fixtures.py

screenshots: install  ## the console's pages in headless Chromium (apt: chromium chromium-driver) -> docs/screenshots/*.png
	REFRESH_SCREENSHOTS=1 $(VENV)/pytest -q -p no:cacheprovider tests/browser
