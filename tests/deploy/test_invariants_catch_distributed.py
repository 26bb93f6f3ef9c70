"""The issue-20 invariants (deploy_distributed.py) fail on manifests broken the way an operator found them:
none of them is vacuous."""

from __future__ import annotations

import copy

import pytest

# --- issue 20: each distributed-mode invariant fails on a manifest broken the way an operator found it ----


def find(objs, kind, name):
    return next(o for o in objs if o["kind"] == kind and o["metadata"]["name"].startswith(name))


def pod(objs, name):
    return find(objs, "Deployment", name)["spec"]["template"]["spec"]


def mcp_config(objs):
    return find(objs, "ConfigMap", "ingestion-mcp-config")["data"]


def trigger(objs):
    return find(objs, "ScaledObject", "ingestion-worker")["spec"]["triggers"][0]


def redis_args(objs):
    return find(objs, "StatefulSet", "redis")["spec"]["template"]["spec"]["containers"][0]["args"]


def volume(objs, deployment, name):
    return next(v for v in pod(objs, deployment)["volumes"] if v["name"] == name)


def mount(objs, deployment, name):
    return next(m for m in pod(objs, deployment)["containers"][0]["volumeMounts"] if m["name"] == name)


def to_empty_dir(vol):
    vol.pop("persistentVolumeClaim")
    vol["emptyDir"] = {}


def cpu_hpa(objs):
    hpa = copy.deepcopy(find(objs, "HorizontalPodAutoscaler", "chunker"))
    hpa["metadata"]["name"] = hpa["spec"]["scaleTargetRef"]["name"] = "ingestion-worker"
    objs.append(hpa)


def drop(objs, kind, name):
    objs.remove(find(objs, kind, name))


def env_without(objs, deployment, name):
    container = pod(objs, deployment)["containers"][0]
    container["env"] = [e for e in container["env"] if e["name"] != name]


K8S_DISTRIBUTED = {
    # Redis keeps what it acknowledged.
    "redis appendonly no": (
        "redis",
        lambda o: redis_args(o).__setitem__(redis_args(o).index("--appendonly") + 1, "no"),
    ),
    "redis no appendonly": ("redis", lambda o: redis_args(o).remove("--appendonly")),
    "redis no appendfsync": ("redis", lambda o: redis_args(o).remove("--appendfsync")),
    "redis fsync never": ("redis", lambda o: redis_args(o).__setitem__(redis_args(o).index("always"), "no")),
    # Workers scale on the queue's depth.
    "cpu hpa kept": ("scaling", cpu_hpa),
    "no scaledobject": ("scaling", lambda o: drop(o, "ScaledObject", "ingestion-worker")),
    "scale to zero": (
        "scaling",
        lambda o: find(o, "ScaledObject", "ingestion-worker")["spec"].update(minReplicaCount=0),
    ),
    "cpu trigger": ("scaling", lambda o: trigger(o).update(type="cpu")),
    "queued not depth": ("scaling", lambda o: trigger(o)["metadata"].update(valueLocation="queued")),
    "short url": ("scaling", lambda o: trigger(o)["metadata"].update(url="http://ingestion-mcp:8000/queue")),
    "other namespace": (
        "scaling",
        lambda o: trigger(o)["metadata"].update(url="http://ingestion-mcp.ingestion-dev.svc:8000/queue"),
    ),
    "wrong port": (
        "scaling",
        lambda o: trigger(o)["metadata"].update(url="http://ingestion-mcp.ingestion.svc:8080/queue"),
    ),
    "authModes only": (
        "scaling",
        lambda o: trigger(o)["metadata"].update(authModes=trigger(o)["metadata"].pop("authMode")),
    ),
    "target off": ("scaling", lambda o: trigger(o)["metadata"].update(targetValue="10")),
    "token key": (
        "scaling",
        lambda o: find(o, "TriggerAuthentication", "ingestion-mcp-queue")["spec"]["secretTargetRef"][0].update(
            key="REDIS_PASSWORD"
        ),
    ),
    "replicas set": ("scaling", lambda o: find(o, "Deployment", "ingestion-worker")["spec"].update(replicas=2)),
    # KEDA may reach /queue.
    "no keda policy": ("keda", lambda o: drop(o, "NetworkPolicy", "ingestion-mcp-from-keda")),
    "keda namespace": (
        "keda",
        lambda o: find(o, "NetworkPolicy", "ingestion-mcp-from-keda")["spec"]["ingress"][0]["from"][0][
            "namespaceSelector"
        ].update(matchLabels={"kubernetes.io/metadata.name": "keda"}),
    ),
    # The gateways get the broker and may reach it.
    "gateway no broker": ("broker", lambda o: env_without(o, "vector-gateway", "VECTOR_GATEWAY_BROKER_URL")),
    "gateway other db": (
        "broker",
        lambda o: next(
            e for e in pod(o, "vector-gateway")["containers"][0]["env"] if e["name"] == "VECTOR_GATEWAY_BROKER_URL"
        ).update(value="redis://:$(REDIS_PASSWORD)@redis:6379/1"),
    ),
    "gateway fenced off": (
        "broker",
        lambda o: find(o, "NetworkPolicy", "redis-from-ingestion")["spec"]["ingress"][0]["from"][0]["podSelector"][
            "matchExpressions"
        ][0]["values"].remove("vector-gateway"),
    ),
    "password after url": ("broker", lambda o: pod(o, "vector-gateway")["containers"][0]["env"].reverse()),
    # Grace periods fit.
    "pod grace short": ("grace", lambda o: pod(o, "ingestion-worker").update(terminationGracePeriodSeconds=30)),
    "pod grace default": ("grace", lambda o: pod(o, "ingestion-worker").pop("terminationGracePeriodSeconds")),
    "job grace long": ("grace", lambda o: mcp_config(o).update(INGESTION_MCP_JOB_GRACE_S="120")),
    # fetch_file's files on one shared claim.
    "mcp emptydir": ("documents", lambda o: to_empty_dir(volume(o, "ingestion-mcp", "data"))),
    "documents in tmp": ("documents", lambda o: mcp_config(o).update(INGESTION_MCP_DOCUMENTS_DIR="/tmp/documents")),
    "rwo claim": (
        "documents",
        lambda o: find(o, "PersistentVolumeClaim", "ingestion-data")["spec"].update(accessModes=["ReadWriteOnce"]),
    ),
    "worker other path": ("documents", lambda o: mount(o, "ingestion-worker", "data").update(mountPath="/srv/data")),
    "read-only claim": (
        "documents",
        lambda o: volume(o, "ingestion-worker", "data")["persistentVolumeClaim"].update(readOnly=True),
    ),
}


def k8s_distributed_check(checks, kind, objs):
    d = checks.distributed
    return {
        "redis": d.k8s_redis_violations,
        "scaling": d.worker_scaling_violations,
        "keda": d.keda_reach_violations,
        "broker": d.k8s_broker_violations,
        "grace": d.k8s_grace_violations,
        "documents": lambda objs: d.k8s_shared_documents_violations(objs, rwx=True),
    }[kind](objs)


@pytest.mark.parametrize("breakage", K8S_DISTRIBUTED)
def test_distributed_k8s_invariants_catch(rendered, checks, breakage):
    kind, mutate = K8S_DISTRIBUTED[breakage]
    objs = copy.deepcopy(rendered["prod"])
    assert k8s_distributed_check(checks, kind, objs) == []
    mutate(objs)
    assert k8s_distributed_check(checks, kind, objs) != []


def service(compose, name):
    return compose["services"][name]


COMPOSE_DISTRIBUTED = {
    "redis appendonly no": (
        "redis",
        lambda c: service(c, "redis").update(command=["redis-server", "--appendonly", "no"]),
    ),
    "redis default fsync": (
        "redis",
        lambda c: service(c, "redis").update(command=["redis-server", "--appendonly", "yes"]),
    ),
    "redis no flags": ("redis", lambda c: service(c, "redis").update(command="redis-server --save ''")),
    # The drift the operator found: the worker's own block, a key short, a value apart.
    "worker key missing": (
        "env",
        lambda c: service(c, "ingestion-worker")["environment"].pop("INGESTION_MCP_ALLOWED_ORIGINS"),
    ),
    "worker extra key": (
        "env",
        lambda c: service(c, "ingestion-worker")["environment"].update(INGESTION_MCP_SYNC_WAIT_S="10"),
    ),
    "worker value apart": (
        "env",
        lambda c: service(c, "ingestion-worker")["environment"].update(DEFAULT_COLLECTION="other"),
    ),
    "worker own env_file": ("env", lambda c: service(c, "ingestion-worker").update(env_file=["worker.env"])),
    "mcp tmpfs data": (
        "documents",
        lambda c: service(c, "ingestion-mcp").update(tmpfs=["/tmp", "/home/app", "/var/lib/ingestion-mcp"]),
    ),
    "worker own volume": (
        "documents",
        lambda c: service(c, "ingestion-worker").update(volumes=["worker-data:/var/lib/ingestion-mcp"]),
    ),
    "documents elsewhere": (
        "documents",
        lambda c: service(c, "ingestion-mcp")["environment"].update(INGESTION_MCP_DOCUMENTS_DIR="/srv/documents"),
    ),
    "documents read-only": (
        "documents",
        lambda c: service(c, "ingestion-worker").update(volumes=["ingestion-data:/var/lib/ingestion-mcp:ro"]),
    ),
    "gateway no broker": (
        "broker",
        lambda c: service(c, "vector-gateway")["environment"].pop("VECTOR_GATEWAY_BROKER_URL"),
    ),
    "gateway other broker": (
        "broker",
        lambda c: service(c, "vector-gateway")["environment"].update(VECTOR_GATEWAY_BROKER_URL="redis://redis:6379/1"),
    ),
    "gateway before redis": ("broker", lambda c: service(c, "vector-gateway")["depends_on"].pop("redis")),
    "stop grace short": ("grace", lambda c: service(c, "ingestion-worker").update(stop_grace_period="30s")),
    "stop grace default": ("grace", lambda c: service(c, "ingestion-worker").pop("stop_grace_period")),
    "job grace long": (
        "grace",
        lambda c: service(c, "ingestion-worker")["environment"].update(INGESTION_MCP_JOB_GRACE_S="50"),
    ),
}


def compose_distributed_check(checks, kind, compose):
    d = checks.distributed
    return {
        "redis": d.compose_redis_violations,
        "env": d.compose_env_violations,
        "documents": d.compose_shared_documents_violations,
        "broker": d.compose_broker_violations,
        "grace": lambda c: d.compose_grace_violations(c, checks.interpolate),
    }[kind](compose)


@pytest.mark.parametrize("breakage", COMPOSE_DISTRIBUTED)
def test_distributed_compose_invariants_catch(compose, checks, breakage):
    kind, mutate = COMPOSE_DISTRIBUTED[breakage]
    broken = copy.deepcopy(compose)
    assert compose_distributed_check(checks, kind, broken) == []
    mutate(broken)
    assert compose_distributed_check(checks, kind, broken) != []


@pytest.mark.parametrize(
    "snippet",
    [
        'redis-server --port 6379 --save "" &',
        "$ sudo redis-server --appendonly yes",
        "valkey-server --appendfsync always",
        "docker run -d -p 6379:6379 docker.io/library/redis:7.4.2",
    ],
)
def test_doc_redis_invariant_catches(checks, snippet):
    assert checks.distributed.doc_redis_violations(f"```bash\n{snippet}\n```\n", "doc") != []
    persistent = "redis-server --appendonly yes --appendfsync always"
    assert checks.distributed.doc_redis_violations(f"```bash\n{persistent}\n```\n", "doc") == []
    throwaway = f"{snippet}  # throwaway: a test broker"
    assert checks.distributed.doc_redis_violations(f"```bash\n{throwaway}\n```\n", "doc") == []
