"""The OpenShift manifests render, validate against their schemas and keep the invariants."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest

REPO = Path(__file__).resolve().parents[2]
OVERLAYS = ("dev", "prod")
APP_DEPLOYMENTS = {"docling", "chunker", "vector-gateway", "ingestion-mcp", "ingestion-worker"}
# Scaled by KEDA on the queue's depth (keda.yaml); the others by a CPU HorizontalPodAutoscaler.
QUEUE_SCALED = {"ingestion-worker"}


def by_kind(objs, kind):
    return {o["metadata"]["name"]: o for o in objs if o["kind"] == kind}


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_object_validates(rendered, schemas, overlay):
    errors = []
    for obj in rendered[overlay]:
        where = f"{overlay}: {obj['kind']}/{obj['metadata']['name']}"
        schema = schemas.vendored(obj["apiVersion"], obj["kind"])
        if schema:
            validator = jsonschema.Draft202012Validator(schema)
            errors += [f"{where}: {'.'.join(map(str, e.path))}: {e.message}" for e in validator.iter_errors(obj)]
            continue
        try:
            kubernetes_validate.validate(obj, schemas.k8s_version, strict=True)
        except kubernetes_validate.ValidationError as exc:
            errors.append(f"{where}: {'.'.join(map(str, exc.path))}: {exc.message}")
        except kubernetes_validate.SchemaNotFoundError:
            errors.append(f"{where}: no schema (add one under tests/deploy/schemas/)")
    assert errors == []


def test_vendored_schemas_are_valid_schemas(schemas):
    for api_version, kind in schemas.names:
        jsonschema.Draft202012Validator.check_schema(schemas.vendored(api_version, kind))


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_restricted_scc_and_workload_invariants(rendered, checks, overlay):
    objs = rendered[overlay]
    problems = [p for o in objs for p in checks.security(o) + checks.workload(o)]
    problems += checks.secrets(objs)
    assert problems == []
    assert set(by_kind(objs, "Deployment")) == APP_DEPLOYMENTS


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_references_resolve(rendered, overlay):
    """ConfigMaps, PVCs, Services, HPAs, ScaledObjects and PDBs point at objects that exist in the render."""
    objs = rendered[overlay]
    deployments = by_kind(objs, "Deployment")
    configmaps, pvcs = by_kind(objs, "ConfigMap"), by_kind(objs, "PersistentVolumeClaim")
    for name, dep in (deployments | by_kind(objs, "StatefulSet")).items():
        pod = dep["spec"]["template"]["spec"]
        for container in pod["containers"]:
            for src in container.get("envFrom", []):
                assert src["configMapRef"]["name"] in configmaps, name
            for env in container.get("env", []):
                ref = (env.get("valueFrom") or {}).get("secretKeyRef")
                if ref:
                    assert ref["name"] == "ingestion-auth", f"{name}: secrets come from ingestion-auth"
        for volume in pod.get("volumes", []):
            if "persistentVolumeClaim" in volume:
                assert volume["persistentVolumeClaim"]["claimName"] in pvcs, name
        labels = dep["spec"]["template"]["metadata"]["labels"]
        assert all(labels.get(k) == v for k, v in dep["spec"]["selector"]["matchLabels"].items()), name
    for name, svc in by_kind(objs, "Service").items():
        matches = [
            d
            for d in (deployments | by_kind(objs, "StatefulSet")).values()
            if all(d["spec"]["template"]["metadata"]["labels"].get(k) == v for k, v in svc["spec"]["selector"].items())
        ]
        assert matches, f"Service/{name} selects no Deployment"
    hpas = by_kind(objs, "HorizontalPodAutoscaler")
    assert set(hpas) == APP_DEPLOYMENTS - QUEUE_SCALED, "every stateless service autoscales on CPU"
    scaled = {s["spec"]["scaleTargetRef"]["name"] for s in by_kind(objs, "ScaledObject").values()}
    assert scaled == QUEUE_SCALED, "the workers autoscale on the queue"
    for name, hpa in hpas.items():
        assert hpa["spec"]["scaleTargetRef"]["name"] in deployments
        assert "replicas" not in deployments[hpa["spec"]["scaleTargetRef"]["name"]]["spec"], (
            f"{name}: Deployment sets replicas while its HPA owns the count"
        )
    assert set(by_kind(objs, "PodDisruptionBudget")) == APP_DEPLOYMENTS


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_gateway_points_at_the_milvus_operator_service(rendered, overlay):
    objs = rendered[overlay]
    (milvus,) = by_kind(objs, "Milvus").values()
    config = next(c for n, c in by_kind(objs, "ConfigMap").items() if n.startswith("vector-gateway-config"))
    assert config["data"]["VECTOR_GATEWAY_MILVUS_URI"] == f"http://{milvus['metadata']['name']}-milvus:19530"
    assert config["data"]["VECTOR_GATEWAY_INDEX_ENGINE"] == "milvus"  # Lance is the laptop's embedded default
    assert milvus["spec"]["mode"] == {"dev": "standalone", "prod": "cluster"}[overlay]
    for dep in ("etcd", "storage"):
        assert milvus["spec"]["dependencies"][dep].get("external", False) is False


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_mcp_wiring_matches_the_plan(rendered, overlay):
    objs = rendered[overlay]
    config = next(c for n, c in by_kind(objs, "ConfigMap").items() if n.startswith("ingestion-mcp-config"))["data"]
    services = by_kind(objs, "Service")
    for var, svc in {
        "DOCLING_SERVICE_URL": "docling",
        "CHUNKER_SERVICE_URL": "chunker",
        "VECTOR_GATEWAY_URL": "vector-gateway",
    }.items():
        assert config[var] == f"http://{svc}:{services[svc]['spec']['ports'][0]['port']}"
    assert config["DEFAULT_COLLECTION"] == "rag_gateway"
    assert config["INGESTION_MCP_TRANSPORT"] == "streamable-http"
    assert config["INGESTION_MCP_HOST"] == "0.0.0.0"


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_route_is_edge_tls_with_redirect_and_long_timeout(rendered, overlay):
    (route,) = by_kind(rendered[overlay], "Route").values()
    assert route["spec"]["tls"] == {"termination": "edge", "insecureEdgeTerminationPolicy": "Redirect"}
    assert route["spec"]["to"]["name"] == "ingestion-mcp"
    assert route["spec"]["path"] == "/mcp"
    timeout = route["metadata"]["annotations"]["haproxy.router.openshift.io/timeout"]
    assert timeout.endswith("m") and int(timeout[:-1]) >= 5


def test_prod_uses_docling_models(rendered):
    config = next(c for n, c in by_kind(rendered["prod"], "ConfigMap").items() if n.startswith("docling-config"))
    assert config["data"]["DOCLING_ARTIFACTS_PATH"] == "/models/docling"
    (docling,) = (d for n, d in by_kind(rendered["prod"], "Deployment").items() if n == "docling")
    mounts = {m["mountPath"]: m for m in docling["spec"]["template"]["spec"]["containers"][0]["volumeMounts"]}
    assert mounts["/models/docling"]["readOnly"] is True


def _env(container):
    return {e["name"]: e for e in container.get("env", [])}


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_broker_is_pinned_persistent_and_private(rendered, checks, overlay):
    objs = rendered[overlay]
    (redis,) = by_kind(objs, "StatefulSet").values()
    assert checks.security(redis) + checks.workload(redis) == []
    container = redis["spec"]["template"]["spec"]["containers"][0]
    assert container["image"].startswith("docker.io/library/redis:7.")
    args = container["args"]
    assert checks.distributed.k8s_redis_violations(objs) == [], "acknowledged jobs must survive a broker restart"
    assert args[args.index("--maxmemory-policy") + 1] == "noeviction", "a full broker must not drop jobs"
    assert args[args.index("--requirepass") + 1] == "$(REDIS_PASSWORD)"
    assert _env(container)["REDIS_PASSWORD"]["valueFrom"]["secretKeyRef"]["name"] == "ingestion-auth"
    (claim,) = redis["spec"]["volumeClaimTemplates"]
    assert {"name": claim["metadata"]["name"], "mountPath": "/data"} in container["volumeMounts"]
    policies = by_kind(objs, "NetworkPolicy")
    allowed = policies["redis-from-ingestion"]["spec"]["ingress"][0]["from"][0]["podSelector"]["matchExpressions"]
    writers = ["ingestion-mcp", "ingestion-worker", "vector-gateway"]
    assert allowed == [{"key": "app.kubernetes.io/name", "operator": "In", "values": writers}]
    assert policies["ingestion-worker-no-ingress"]["spec"]["ingress"] == []


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_jobs_flow_from_the_replicas_through_the_broker_to_the_workers(rendered, overlay):
    objs = rendered[overlay]
    deployments, services = by_kind(objs, "Deployment"), by_kind(objs, "Service")
    mcp = deployments["ingestion-mcp"]["spec"]["template"]["spec"]
    worker = deployments["ingestion-worker"]["spec"]["template"]["spec"]
    port = services["redis"]["spec"]["ports"][0]["port"]
    for pod in (mcp, worker):
        env = _env(pod["containers"][0])
        assert env["INGESTION_MCP_BROKER_URL"]["value"] == f"redis://:$(REDIS_PASSWORD)@redis:{port}/0"
        names = [e["name"] for e in pod["containers"][0]["env"]]
        assert names.index("REDIS_PASSWORD") < names.index("INGESTION_MCP_BROKER_URL"), "$(VAR) needs it first"
    assert worker["containers"][0]["image"] == mcp["containers"][0]["image"]
    assert worker["containers"][0]["command"] == ["ingestion-mcp-worker"]
    assert worker["containers"][0]["envFrom"] == mcp["containers"][0]["envFrom"]
    # A path an agent names is read by whichever worker runs the job: the same read-only claim.
    claims = {v["name"]: v.get("persistentVolumeClaim") for v in worker["volumes"]}
    mcp_claims = {v["name"]: v.get("persistentVolumeClaim") for v in mcp["volumes"]}
    assert claims["documents"] == mcp_claims["documents"] == {"claimName": "documents", "readOnly": True}
    assert claims["data"] == mcp_claims["data"] == {"claimName": "ingestion-data"}
    (scaled,) = by_kind(objs, "ScaledObject").values()
    behavior = scaled["spec"]["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]
    assert behavior["scaleDown"]["stabilizationWindowSeconds"] >= 300, "a scaled-down worker hands jobs back"


# --- issue 20: the distributed mode rides out faults ----------------------------------------


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_workers_scale_on_queue_depth_not_cpu(rendered, checks, overlay):
    """One ScaledObject per worker Deployment, metrics-api on GET /queue's depth with the bearer token,
    min >= 1, no CPU HPA; KEDA's namespace may reach the MCP port."""
    objs = rendered[overlay]
    assert checks.distributed.worker_scaling_violations(objs) == []
    assert checks.distributed.keda_reach_violations(objs) == []
    (scaled,) = by_kind(objs, "ScaledObject").values()
    namespace = {"dev": "ingestion-dev", "prod": "ingestion"}[overlay]
    assert scaled["spec"]["triggers"][0]["metadata"]["url"] == f"http://ingestion-mcp.{namespace}.svc:8000/queue"


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_fetched_documents_are_on_one_claim_every_replica_mounts(rendered, checks, overlay):
    """fetch_file saves on a worker; any MCP replica lists and reads it: one claim, one path (RWX in prod;
    dev's single node shares its RWO claim)."""
    objs = rendered[overlay]
    assert checks.distributed.k8s_shared_documents_violations(objs, rwx=overlay == "prod") == []
    config = next(c for n, c in by_kind(objs, "ConfigMap").items() if n.startswith("ingestion-mcp-config"))
    assert config["data"]["INGESTION_MCP_DOCUMENTS_DIR"] == "/var/lib/ingestion-mcp/documents"


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_gateways_reach_the_broker_for_write_orders(rendered, checks, overlay):
    objs = rendered[overlay]
    assert checks.distributed.k8s_broker_violations(objs) == []
    gateway = by_kind(objs, "Deployment")["vector-gateway"]["spec"]["template"]["spec"]["containers"][0]
    assert _env(gateway)["REDIS_PASSWORD"]["valueFrom"]["secretKeyRef"] == {
        "name": "ingestion-auth",
        "key": "REDIS_PASSWORD",
    }


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_worker_grace_period_fits_the_job_grace(rendered, checks, overlay):
    objs = rendered[overlay]
    assert checks.distributed.k8s_grace_violations(objs) == []
    config = next(c for n, c in by_kind(objs, "ConfigMap").items() if n.startswith("ingestion-mcp-config"))
    assert config["data"]["INGESTION_MCP_JOB_GRACE_S"] == "25"


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_audit_records_have_their_own_sink_in_openshift_and_compose(rendered, compose, overlay):
    """Issue 28: the server and the workers write audit records whatever the log level (docs/auth.md)."""
    config = next(c for n, c in by_kind(rendered[overlay], "ConfigMap").items() if n.startswith("ingestion-mcp-config"))
    assert config["data"]["INGESTION_MCP_AUDIT_LOG"] == "stderr"
    for service in ("ingestion-mcp", "ingestion-worker"):
        assert compose["services"][service]["environment"]["INGESTION_MCP_AUDIT_LOG"] == "stderr", service


# --- issue 22: many users, least privilege ---------------------------------------------------


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_network_policies_admit_each_service_only_its_clients(rendered, checks, overlay):
    """Default deny; the router reaches the MCP port; MCP and workers the backends and Redis; only the
    gateway reaches Milvus; no internal service unselected or open to everyone."""
    objs = rendered[overlay]
    assert checks.access.network_violations(objs) == []
    assert checks.access.reach_violations(objs) == []
    policies = by_kind(objs, "NetworkPolicy")
    assert policies["default-deny-ingress"]["spec"] == {"podSelector": {}, "policyTypes": ["Ingress"], "ingress": []}
    assert all(p["spec"]["policyTypes"] == ["Ingress"] for p in policies.values()), "egress (DNS) stays untouched"


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_default_overlays_keep_the_static_token_mode(rendered, checks, overlay):
    objs = rendered[overlay]
    assert checks.access.static_mode_violations(objs) == []
    mcp = by_kind(objs, "Deployment")["ingestion-mcp"]["spec"]["template"]["spec"]["containers"][0]
    assert _env(mcp)["AUTH_TOKEN"]["valueFrom"]["secretKeyRef"] == {"name": "ingestion-auth", "key": "AUTH_TOKEN"}


def validation_errors(objs, schemas, where):
    errors = []
    for obj in objs:
        at = f"{where}: {obj['kind']}/{obj['metadata']['name']}"
        schema = schemas.vendored(obj["apiVersion"], obj["kind"])
        if schema:
            validator = jsonschema.Draft202012Validator(schema)
            errors += [f"{at}: {'.'.join(map(str, e.path))}: {e.message}" for e in validator.iter_errors(obj)]
            continue
        try:
            kubernetes_validate.validate(obj, schemas.k8s_version, strict=True)
        except kubernetes_validate.ValidationError as exc:
            errors.append(f"{at}: {'.'.join(map(str, exc.path))}: {exc.message}")
    return errors


def test_the_oauth_overlay_validates_and_keeps_the_invariants(rendered_oauth, schemas, checks):
    objs = rendered_oauth
    assert validation_errors(objs, schemas, "prod-oauth") == []
    problems = [p for o in objs for p in checks.security(o) + checks.workload(o)]
    assert problems + checks.secrets(objs) == []
    assert checks.access.network_violations(objs) + checks.access.reach_violations(objs) == []
    assert checks.distributed.keda_reach_violations(objs) + checks.distributed.k8s_broker_violations(objs) == []


def test_the_oauth_overlay_wires_issuer_audience_and_policy(rendered_oauth, checks):
    """Issuer, JWKS and audience from the MCP ConfigMap, which the workers share; the audience is the Route's
    URL; the example policy mounted read-only in the server and every worker, and a valid policy."""
    objs = rendered_oauth
    assert checks.access.oauth_violations(objs) == []
    config = next(c for n, c in by_kind(objs, "ConfigMap").items() if n.startswith("ingestion-mcp-config"))["data"]
    routes = by_kind(objs, "Route")
    route, metadata = routes["ingestion-mcp"], routes["ingestion-mcp-metadata"]
    assert config["INGESTION_MCP_OAUTH_AUDIENCE"] == f"https://{route['spec']['host']}{route['spec']['path']}"
    assert metadata["spec"]["host"] == route["spec"]["host"]
    assert metadata["spec"]["path"] == "/.well-known/oauth-protected-resource"
    assert metadata["spec"]["tls"] == route["spec"]["tls"] and metadata["spec"]["to"] == route["spec"]["to"]
    deployments = by_kind(objs, "Deployment")
    for name in ("ingestion-mcp", "ingestion-worker"):
        container = deployments[name]["spec"]["template"]["spec"]["containers"][0]
        mount = next(m for m in container["volumeMounts"] if m["name"] == "access-policy")
        assert mount["readOnly"] is True, name
        assert not any(k.startswith("INGESTION_MCP_OAUTH") for k in _env(container)), "OAuth settings come from config"


def _names(objs):
    return {
        (o["kind"], o["metadata"]["name"].rsplit("-", 1)[0] if o["kind"] == "ConfigMap" else o["metadata"]["name"])
        for o in objs
    }


def test_the_oauth_overlay_is_prod_plus_the_policy(rendered, rendered_oauth):
    added = _names(rendered_oauth) - _names(rendered["prod"])
    assert added == {("ConfigMap", "ingestion-access-policy"), ("Route", "ingestion-mcp-metadata")}
    assert _names(rendered["prod"]) <= _names(rendered_oauth)


def test_the_example_policy_loads_with_the_servers_own_reader():
    """The shipped example through access.load_policy, where the server's package is installed."""
    access = pytest.importorskip("ingestion_mcp.access.policy", reason="ingestion_mcp not installed from this checkout")
    example = REPO / "openshift/components/oauth/access-policy.toml"
    policy = access.load_policy(example)
    assert policy.scopes == ["ingestion:read", "ingestion:write"]
    editor = policy.caller({"sub": "u1", "groups": ["rag-editors"]})
    assert editor.can("write", "team-a") and not editor.can("write", "other")
    assert editor.can("read", "rag_gateway"), "every token reads the shared collection"
