"""The invariant checks fail on deliberately broken manifests: none of them is vacuous."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
SCHEMAS = Path(__file__).resolve().parent / "schemas"
ROUTE = "route.openshift.io_v1_route.json"
MILVUS = "milvus.io_v1beta1_milvus.json"
SCALED = "keda.sh_v1alpha1_scaledobject.json"
TRIGGER_AUTH = "keda.sh_v1alpha1_triggerauthentication.json"


def deployment(rendered, name="vector-gateway"):
    objs = rendered["prod"]
    return copy.deepcopy(next(o for o in objs if o["kind"] == "Deployment" and o["metadata"]["name"] == name))


def container(dep):
    return dep["spec"]["template"]["spec"]["containers"][0]


BREAKAGES = {
    "root user": lambda d: container(d)["securityContext"].update(runAsNonRoot=False),
    "pinned uid": lambda d: d["spec"]["template"]["spec"]["securityContext"].update(runAsUser=0),
    "escalation": lambda d: container(d)["securityContext"].pop("allowPrivilegeEscalation"),
    "caps kept": lambda d: container(d)["securityContext"]["capabilities"].update(drop=["NET_RAW"]),
    "no seccomp": lambda d: d["spec"]["template"]["spec"]["securityContext"].pop("seccompProfile"),
    "no startup probe": lambda d: container(d).pop("startupProbe"),
    "liveness on readyz": lambda d: container(d)["livenessProbe"]["httpGet"].update(path="/readyz"),
    "no readiness": lambda d: container(d).pop("readinessProbe"),
    "no limits": lambda d: container(d)["resources"].pop("limits"),
    "no cpu request": lambda d: container(d)["resources"]["requests"].pop("cpu"),
    "latest": lambda d: container(d).update(image="quay.io/x/vector-gateway:latest"),
    "untagged": lambda d: container(d).update(image="quay.io/x/vector-gateway"),
    "inlined token": lambda d: container(d)["env"].append({"name": "AUTH_TOKEN", "value": "s3cret"}),
}


@pytest.mark.parametrize("breakage", BREAKAGES)
def test_k8s_invariants_catch(rendered, checks, breakage):
    dep = deployment(rendered)
    assert checks.security(dep) + checks.workload(dep) == []
    BREAKAGES[breakage](dep)
    assert checks.security(dep) + checks.workload(dep) != []


WORKER_BREAKAGES = {
    "no liveness": lambda d: container(d).pop("livenessProbe"),
    "empty probe": lambda d: container(d)["readinessProbe"]["exec"].update(command=[]),
    "root": lambda d: container(d)["securityContext"].update(runAsNonRoot=False),
    "latest": lambda d: container(d).update(image="quay.io/x/ingestion-mcp:latest"),
}


@pytest.mark.parametrize("breakage", WORKER_BREAKAGES)
def test_invariants_catch_a_broken_worker(rendered, checks, breakage):
    dep = deployment(rendered, "ingestion-worker")
    assert checks.security(dep) + checks.workload(dep) == []
    WORKER_BREAKAGES[breakage](dep)
    assert checks.security(dep) + checks.workload(dep) != []


def test_rendered_secret_is_caught(checks):
    secret = {"kind": "Secret", "metadata": {"name": "ingestion-auth"}, "stringData": {"AUTH_TOKEN": "x"}}
    assert checks.secrets([secret]) != []
    cm = {"kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"AUTH_TOKEN": "x"}}
    assert checks.secrets([cm]) != []


def test_kubernetes_validate_catches_a_typo(rendered):
    dep = deployment(rendered)
    container(dep)["readinessProbe"]["httpGett"] = container(dep)["readinessProbe"].pop("httpGet")
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(dep, "1.30.0", strict=True)


@pytest.mark.parametrize(
    ("schema", "kind", "mutate"),
    [
        (ROUTE, "Route", lambda o: o["spec"]["tls"].update(termination="edgy")),
        (ROUTE, "Route", lambda o: o["spec"].update(tlss={})),
        (MILVUS, "Milvus", lambda o: o["spec"].update(mode="distributed")),
        (MILVUS, "Milvus", lambda o: o["spec"]["components"].update(image="milvusdb/milvus")),
        (MILVUS, "Milvus", lambda o: o["spec"]["dependencies"].update(msgStreamType="rocksmq")),
        (MILVUS, "Milvus", lambda o: o["spec"]["components"].update(standalone={"replicas": 1})),
        (SCALED, "ScaledObject", lambda o: o["spec"].update(minReplicas=1)),
        (SCALED, "ScaledObject", lambda o: o["spec"].update(maxReplicaCount=0)),
        (SCALED, "ScaledObject", lambda o: o["spec"]["triggers"][0]["metadata"].update(valueLocaton="depth")),
        (SCALED, "ScaledObject", lambda o: o["spec"]["triggers"][0]["metadata"].pop("targetValue")),
        (SCALED, "ScaledObject", lambda o: o["spec"]["triggers"][0]["metadata"].update(targetValue=2)),
        (SCALED, "ScaledObject", lambda o: o["spec"]["triggers"][0].update(metricType="Average")),
        (SCALED, "ScaledObject", lambda o: o["spec"]["triggers"][0]["authenticationRef"].update(kind="Secret")),
        (SCALED, "ScaledObject", lambda o: o["spec"]["scaleTargetRef"].pop("name")),
        (TRIGGER_AUTH, "TriggerAuthentication", lambda o: o["spec"].update(secretTargetRefs=[])),
        (TRIGGER_AUTH, "TriggerAuthentication", lambda o: o["spec"]["secretTargetRef"][0].pop("key")),
    ],
)
def test_vendored_schemas_catch(rendered, schema, kind, mutate):
    obj = copy.deepcopy(next(o for o in rendered["prod"] if o["kind"] == kind))
    validator = jsonschema.Draft202012Validator(json.loads((SCHEMAS / schema).read_text()))
    assert list(validator.iter_errors(obj)) == []
    mutate(obj)
    assert list(validator.iter_errors(obj)) != []


COMPOSE_BREAKAGES = {
    "no healthcheck": lambda c: c["services"]["chunker"].pop("healthcheck"),
    "healthz not readyz": lambda c: c["services"]["chunker"]["healthcheck"].update(
        test=["CMD", "python", "-c", "urllib('/healthz')"]
    ),
    "started not healthy": lambda c: c["services"]["ingestion-mcp"]["depends_on"]["docling"].update(
        condition="service_started"
    ),
    "list depends_on": lambda c: c["services"]["vector-gateway"].update(depends_on=["milvus"]),
    "latest": lambda c: c["services"]["milvus"].update(image="milvusdb/milvus:latest"),
    "untagged default": lambda c: c["services"]["docling"].update(image="${REG:-x}/docling-service"),
    "inlined secret": lambda c: c["services"]["minio"]["environment"].update(MINIO_ROOT_PASSWORD="minioadmin"),
    "defaulted secret": lambda c: c["services"]["minio"]["environment"].update(MINIO_ROOT_PASSWORD="${P:-minioadmin}"),
    "no env_file": lambda c: c["services"]["ingestion-mcp"].pop("env_file"),
    "no memory limit": lambda c: c["services"]["etcd"].pop("deploy"),
}


@pytest.mark.parametrize("breakage", COMPOSE_BREAKAGES)
def test_compose_invariants_catch(compose, checks, breakage):
    broken = copy.deepcopy(compose)
    COMPOSE_BREAKAGES[breakage](broken)
    assert checks.compose(broken) != []


DOCKERFILE_BREAKAGES = {
    "single stage": lambda t: re.sub(r"COPY --from=\S+ (\S+) \S+", r"COPY . \1", t),
    "root user": lambda t: t.replace("USER 1001\nEXPOSE", "USER root\nEXPOSE").replace("USER 1001\nCMD", "USER 0\nCMD"),
    "named user": lambda t: t.replace("USER 1001", "USER app"),
    "no healthcheck": lambda t: t.replace("HEALTHCHECK", "# HEALTHCHECK").replace('    CMD ["python"', "#"),
    "unpinned base": lambda t: t.replace("python:3.11.13-slim-bookworm", "python"),
    "latest base": lambda t: t.replace("python:3.11.13-slim-bookworm", "python:latest"),
    "unconstrained": lambda t: t.replace("pip install -c constraints.txt ./libs", "pip install ./libs"),
}


@pytest.mark.parametrize("breakage", DOCKERFILE_BREAKAGES)
def test_dockerfile_invariants_catch(checks, breakage):
    text = (REPO / "services/vector_gateway/Dockerfile").read_text()
    assert checks.dockerfile(text, "ok") == []
    broken = DOCKERFILE_BREAKAGES[breakage](text)
    assert broken != text
    assert checks.dockerfile(broken, "broken") != []


def test_yaml_fixture_sanity():
    # The broken-manifest tests above only mean something if the real files parse.
    assert yaml.safe_load((REPO / "docker-compose.yml").read_text())["services"]
