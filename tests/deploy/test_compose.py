"""docker-compose.yml and its dev override: Compose Specification schema and invariants."""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path

import jsonschema
import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]


def compose_schema() -> dict:
    # check-jsonschema vendors the Compose Specification schema (--builtin-schema vendor.compose-spec).
    ref = resources.files("check_jsonschema.builtin_schemas.vendor").joinpath("compose-spec.json")
    return json.loads(ref.read_text())


@pytest.mark.parametrize("name", ["docker-compose.yml", "docker-compose.dev.yml"])
def test_compose_files_match_the_compose_spec(name):
    document = yaml.safe_load((REPO / name).read_text())
    schema = compose_schema()
    validator = jsonschema.validators.validator_for(schema)(schema)
    errors = [f"{'.'.join(map(str, e.path))}: {e.message}" for e in validator.iter_errors(document)]
    assert errors == []


def test_compose_invariants(compose, checks):
    assert checks.compose(compose) == []


def test_dev_override_only_touches_known_services(compose):
    dev = yaml.safe_load((REPO / "docker-compose.dev.yml").read_text())
    assert set(dev["services"]) <= set(compose["services"])
    for name, svc in dev["services"].items():
        if "build" in svc:
            assert svc["build"] == {"target": "dev"}, name
            for mount in svc["volumes"]:
                assert (REPO / mount["source"]).resolve().is_relative_to(REPO), name
                assert mount["read_only"] is True, name


def test_milvus_standalone_wiring(compose):
    services = compose["services"]
    milvus = services["milvus"]
    assert milvus["command"] == ["milvus", "run", "standalone"]
    assert milvus["environment"]["ETCD_ENDPOINTS"] == "etcd:2379"
    assert milvus["environment"]["MINIO_ADDRESS"] == "minio:9000"
    assert services["vector-gateway"]["depends_on"]["milvus"]["condition"] == "service_healthy"
    uri = services["vector-gateway"]["environment"]["VECTOR_GATEWAY_MILVUS_URI"]
    assert "http://milvus:19530" in uri
    assert services["vector-gateway"]["environment"]["VECTOR_GATEWAY_INDEX_ENGINE"] == "milvus"  # Lance: laptops
    named = {v.split(":", 1)[0] for svc in services.values() for v in svc.get("volumes", []) if isinstance(v, str)}
    assert named <= set(compose["volumes"]), "stateful services use named volumes"
    assert {"etcd-data", "minio-data", "milvus-data"} <= named


def test_only_the_mcp_endpoint_is_published(compose):
    published = {name for name, svc in compose["services"].items() if svc.get("ports")}
    assert published == {"ingestion-mcp"}


def test_env_example_documents_every_variable(compose, env_example, checks):
    """Every ${VAR} compose interpolates, and the plan's names, appear in .env.example."""
    text = (REPO / "docker-compose.yml").read_text()
    used = set(re.findall(r"\$\{([A-Z][A-Z0-9_]*)", text))
    plan = {"DOCLING_SERVICE_URL", "CHUNKER_SERVICE_URL", "VECTOR_GATEWAY_URL", "AUTH_TOKEN", "DEFAULT_COLLECTION"}
    assert (used | plan) - set(env_example) == set()
    assert env_example["DEFAULT_COLLECTION"] == "rag_gateway"
    # The example must not carry a usable token.
    assert env_example["AUTH_TOKEN"] == ""


def test_mcp_service_urls_resolve_to_compose_services(compose, checks):
    env = compose["services"]["ingestion-mcp"]["environment"]
    for var, target in {
        "DOCLING_SERVICE_URL": ("docling", "DOCLING_PORT"),
        "CHUNKER_SERVICE_URL": ("chunker", "CHUNKER_PORT"),
        "VECTOR_GATEWAY_URL": ("vector-gateway", "VECTOR_GATEWAY_PORT"),
    }.items():
        service, port_var = target
        port = compose["services"][service]["environment"][port_var]
        assert checks.interpolate(env[var]) == f"http://{service}:{port}"


def test_jobs_flow_through_redis_to_the_worker(compose, checks):
    services = compose["services"]
    redis, worker, mcp = services["redis"], services["ingestion-worker"], services["ingestion-mcp"]
    # REDIS_IMAGE: Debian's redis-server where no registry is reachable (scripts/base_image.sh redis).
    assert redis["image"].startswith("${REDIS_IMAGE:-docker.io/library/redis:7.")
    command = redis["command"]
    assert checks.distributed.compose_redis_violations(compose) == [], "acknowledged jobs survive a restart"
    assert command[command.index("--maxmemory-policy") + 1] == "noeviction"
    assert "redis-data:/data" in redis["volumes"]
    assert "ports" not in redis, "the broker is never published"
    url = mcp["environment"]["INGESTION_MCP_BROKER_URL"]
    assert worker["environment"]["INGESTION_MCP_BROKER_URL"] == url
    assert checks.interpolate(url, {"REDIS_PASSWORD": "pw"}) == "redis://:pw@redis:6379/0"
    assert worker["command"] == ["ingestion-mcp-worker"] and worker["image"] == mcp["image"]
    for service in (mcp, worker):
        assert service["depends_on"]["redis"] == {"condition": "service_healthy"}
    documents = [v for v in worker["volumes"] if isinstance(v, dict) and v["target"] == "/data/documents"]
    assert documents and documents[0]["read_only"] is True


# --- issue 20: the distributed mode rides out faults ----------------------------------------


@pytest.mark.parametrize("name", ["docker-compose.yml", "docker-compose.dev.yml"])
def test_the_worker_has_the_servers_environment(name, checks):
    """One source (an x- anchor) for both: the worker's environment is the server's minus what the server
    listens on, so a setting cannot reach one and miss the other."""
    document = yaml.safe_load((REPO / name).read_text())
    assert checks.distributed.compose_env_violations(document) == []
    server = document["services"]["ingestion-mcp"]["environment"]
    only_server = set(server) - set(document["services"]["ingestion-worker"]["environment"])
    assert only_server <= checks.distributed.SERVER_ONLY_ENV


def test_fetched_documents_are_on_a_volume_the_server_and_workers_share(compose, checks):
    assert checks.distributed.compose_shared_documents_violations(compose) == []
    env = compose["services"]["ingestion-worker"]["environment"]
    assert env["INGESTION_MCP_DOCUMENTS_DIR"] == "/var/lib/ingestion-mcp/documents"
    assert "ingestion-data" in compose["volumes"]


def test_the_gateway_gets_the_broker(compose, checks):
    assert checks.distributed.compose_broker_violations(compose) == []
    url = compose["services"]["vector-gateway"]["environment"]["VECTOR_GATEWAY_BROKER_URL"]
    assert checks.interpolate(url, {"REDIS_PASSWORD": "pw"}) == "redis://:pw@redis:6379/0"


def test_the_worker_stops_within_its_grace(compose, checks):
    assert checks.distributed.compose_grace_violations(compose, checks.interpolate) == []
    assert checks.distributed.duration_s("1m30s") == 90


# --- issue 22: many users, least privilege ---------------------------------------------------


def test_oauth_settings_reach_server_and_worker_and_stay_off_by_default(compose, checks):
    """The OAuth settings are passed through from .env by the shared environment (unset = static token) and
    both services mount the example access policy."""

    def read(path):
        return (REPO / path).read_text()

    assert checks.access.compose_oauth_violations(compose, read) == []
    volumes = compose["services"]["ingestion-mcp"]["volumes"]
    (policy,) = [v for v in volumes if isinstance(v, dict) and "toml" in v["target"]]
    assert policy["target"] == "/etc/ingestion-mcp/access-policy.toml" and policy["type"] == "bind"


# --- issue 27: the compose file runs under docker compose v2 and podman-compose ---------------------------------


class _TaggedLoader(yaml.SafeLoader):
    """Reads compose's !reset / !override tags as their plain values (what the YAML holds under them)."""


def _tagged(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> object:
    if isinstance(node, yaml.MappingNode):
        return loader.construct_mapping(node, deep=True)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    return loader.construct_scalar(node)  # type: ignore[arg-type]  # a ScalarNode here: the two cases above took the rest


_TaggedLoader.add_multi_constructor("!", _tagged)


def test_compose_uses_only_what_podman_compose_honours(compose):
    """Before (issue 27): the env_file path/required form (a TypeError in podman-compose 1.0) and a service-level
    `configs` entry for the access policy (never mounted by podman-compose: OAuth mode could not start)."""
    assert "configs" not in compose
    for name, svc in compose["services"].items():
        assert "configs" not in svc, name
        assert all(isinstance(item, str) for item in svc.get("env_file") or []), f"{name}: env_file long form"
    app = [name for name, svc in compose["services"].items() if svc.get("build")]
    for name in app:  # any UID in group 0, read-only root: what OpenShift and the smoke run them as
        svc = compose["services"][name]
        assert svc["user"] == "${APP_UID:-1001}:0" and svc["read_only"] is True, name


def test_the_milvus_lite_stand_in_replaces_standalone_without_etcd_or_minio():
    text = (REPO / "docker-compose.milvus-lite.yml").read_text()
    assert text.startswith("# TEST STAND-IN"), "named as a test stand-in at the top"
    override = yaml.load(text, Loader=_TaggedLoader)
    milvus = override["services"]["milvus"]
    assert milvus["command"][:2] == ["milvus-lite", "server"] and "19530" in milvus["command"]
    assert "!reset" in text.split("depends_on:")[1].splitlines()[0], "etcd and MinIO must not be started"
    assert "!override" in text.split("healthcheck:")[1].splitlines()[0], "podman-compose appends merged lists"
    assert set(override["services"]) == {"milvus"}
