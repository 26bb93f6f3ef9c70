"""Invariants of the distributed mode (issue 20): a broker that keeps what it acknowledged, workers scaled on
the queue, one environment for server and worker, fetched files every replica sees, gateways on the broker,
grace periods that fit.

Each function returns a list of violations (empty = fine), for the real manifests and for the broken ones
in test_invariants_catch.py. conftest.py hands them to the tests through the `checks` fixture.
"""

from __future__ import annotations

import re
import shlex
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import urlsplit

# McpSettings defaults (services/ingestion_mcp/src/ingestion_mcp/settings.py), for a manifest that leaves them out.
JOB_GRACE_DEFAULT_S = 25.0
MAX_CONCURRENT_JOBS_DEFAULT = 2
DATA_DIR_DEFAULT = "./data"
# After the job grace: a storing write commits, the rest of the jobs go back on the queue, the process exits.
GRACE_MARGIN_S = 15.0
# Kubernetes' and Docker's defaults when a manifest sets no grace period.
K8S_GRACE_DEFAULT_S = 30.0
COMPOSE_GRACE_DEFAULT = "10s"
# The Custom Metrics Autoscaler (KEDA on OpenShift) runs its operator, which calls the scalers, here.
KEDA_NAMESPACE = "openshift-keda"
# The only keys the MCP server has and its worker has not (compose): what it listens on.
SERVER_ONLY_ENV = frozenset({"INGESTION_MCP_TRANSPORT", "INGESTION_MCP_HOST", "INGESTION_MCP_PORT"})
MCP_PREFIX = "INGESTION_MCP_"
NAME = "app.kubernetes.io/name"


def by_kind(objs: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in objs if o["kind"] == kind}


def _pod(obj: dict[str, Any]) -> dict[str, Any]:
    return obj["spec"]["template"]["spec"]


def _labels(obj: dict[str, Any]) -> dict[str, str]:
    return obj["spec"]["template"]["metadata"].get("labels") or {}


def container_env(objs: list[dict[str, Any]], container: dict[str, Any]) -> dict[str, str]:
    """A container's environment as Kubernetes builds it: envFrom ConfigMaps, then env (a secret as a marker)."""
    configmaps = by_kind(objs, "ConfigMap")
    env: dict[str, str] = {}
    for source in container.get("envFrom", []):
        name = (source.get("configMapRef") or {}).get("name")
        env.update((configmaps.get(name) or {}).get("data") or {})
    for item in container.get("env", []):
        ref = (item.get("valueFrom") or {}).get("secretKeyRef") or {}
        env[item["name"]] = item["value"] if "value" in item else f"<secret {ref.get('name')}/{ref.get('key')}>"
    return env


def documents_dir(env: dict[str, str]) -> str:
    """INGESTION_MCP_DOCUMENTS_DIR, or its default <data_dir>/documents."""
    data_dir = env.get("INGESTION_MCP_DATA_DIR", DATA_DIR_DEFAULT)
    return env.get("INGESTION_MCP_DOCUMENTS_DIR") or str(PurePosixPath(data_dir) / "documents")


def _covering(path: str, mounts: dict[str, Any]) -> str | None:
    """The deepest mount point that holds `path`: the one whose files a process sees there."""
    inside = [m for m in mounts if PurePosixPath(path).is_relative_to(PurePosixPath(m))]
    return max(inside, key=lambda m: len(PurePosixPath(m).parts), default=None)


def _flag(argv: list[str], name: str) -> str | None:
    return argv[argv.index(name) + 1] if name in argv[:-1] else None


# --- Redis persistence ---------------------------------------------------------------------


def redis_persistence_violations(argv: list[str], where: str) -> list[str]:
    """An append-only file, fsynced on every write or every second: acknowledged jobs survive a restart."""
    out = []
    if _flag(argv, "--appendonly") != "yes":
        out.append(f"{where}: Redis without --appendonly yes loses acknowledged jobs on a restart")
    if _flag(argv, "--appendfsync") not in ("always", "everysec"):
        out.append(f"{where}: no --appendfsync always|everysec (say how much a crash may lose)")
    return out


def k8s_redis_violations(objs: list[dict[str, Any]]) -> list[str]:
    out = []
    servers = 0
    for obj in objs:
        if obj["kind"] not in ("Deployment", "StatefulSet"):
            continue
        for container in _pod(obj)["containers"]:
            argv = [*container.get("command", []), *container.get("args", [])]
            if argv and PurePosixPath(argv[0]).name in ("redis-server", "valkey-server"):
                servers += 1
                out += redis_persistence_violations(argv, f"{obj['kind']}/{obj['metadata']['name']}")
    return out if servers else ["no redis-server container in the render"]


def compose_redis_violations(compose: dict[str, Any]) -> list[str]:
    out = []
    servers = 0
    for name, svc in (compose.get("services") or {}).items():
        command = svc.get("command") or []
        argv = shlex.split(command) if isinstance(command, str) else list(command)
        if argv and argv[0] in ("redis-server", "valkey-server"):
            servers += 1
            out += redis_persistence_violations(argv, f"compose {name}")
    return out if servers else ["compose: no redis-server service"]


_FENCE = re.compile(r"^```.*?$(?P<body>.*?)^```", re.MULTILINE | re.DOTALL)
# A shell line that runs the server (after a prompt or sudo), not one that merely names it.
_STARTS_REDIS = re.compile(
    r"^\s*(\$\s+)?((sudo|exec|nohup)\s+)*(\S*(redis|valkey)-server(\s|$)|(docker|podman)\s+run\s.*\b(redis|valkey)\b)"
)


def doc_redis_violations(text: str, where: str) -> list[str]:
    """Every `redis-server` a document tells a reader to run is persistent, unless it says it is a throwaway."""
    out = []
    for block in _FENCE.finditer(text):
        for line in block["body"].splitlines():
            command, _, comment = line.partition("#")
            if not _STARTS_REDIS.match(command) or "throwaway" in comment.lower():
                continue
            argv = shlex.split(command.replace("&", " "))
            out += redis_persistence_violations(argv, f"{where}: `{line.strip()}`")
    return out


# --- workers scaled on the queue's depth (KEDA) --------------------------------------------


def _workers(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        d for d in by_kind(objs, "Deployment").values() if _labels(d).get("app.kubernetes.io/component") == "worker"
    ]


def _targets(scaled: dict[str, Any], deployment: dict[str, Any]) -> bool:
    ref = scaled["spec"]["scaleTargetRef"]
    return (
        ref["name"] == deployment["metadata"]["name"]
        and ref.get("kind", "Deployment") == "Deployment"
        and ref.get("apiVersion", "apps/v1") == "apps/v1"
    )


def worker_scaling_violations(objs: list[dict[str, Any]]) -> list[str]:
    """Every worker Deployment is scaled by one ScaledObject on the queue's depth, never by a CPU HPA."""
    workers = _workers(objs)
    out = [] if workers else ["no worker Deployment (app.kubernetes.io/component: worker)"]
    for worker in workers:
        name = worker["metadata"]["name"]
        where = f"Deployment/{name}"
        autoscalers = by_kind(objs, "HorizontalPodAutoscaler").items()
        hpas = [h for h, o in autoscalers if o["spec"]["scaleTargetRef"]["name"] == name]
        if hpas:
            out.append(f"{where}: HorizontalPodAutoscaler {hpas} scales it on CPU (and would fight KEDA's)")
        if "replicas" in worker["spec"]:
            out.append(f"{where}: sets replicas while its ScaledObject owns the count")
        scaled = [s for s in by_kind(objs, "ScaledObject").values() if _targets(s, worker)]
        if len(scaled) != 1:
            out.append(f"{where}: {len(scaled)} ScaledObjects target it, want exactly 1")
            continue
        out += _scaled_object_violations(objs, scaled[0], worker)
    return out


def _scaled_object_violations(objs: list[dict[str, Any]], scaled: dict[str, Any], worker: dict[str, Any]) -> list[str]:
    spec, where = scaled["spec"], f"ScaledObject/{scaled['metadata']['name']}"
    low, high = spec.get("minReplicaCount", 0), spec.get("maxReplicaCount", 100)
    out = []
    if low < 1:
        out.append(f"{where}: minReplicaCount {low} < 1: a queued job would wait for a worker to start")
    if high < max(low, 2):
        out.append(f"{where}: maxReplicaCount {high} leaves nothing to scale (min {low})")
    out += [f"{where}: a {t['type']} trigger" for t in spec["triggers"] if t["type"] in ("cpu", "memory")]
    queue = [t for t in spec["triggers"] if t["type"] == "metrics-api"]
    if not queue:
        return [*out, f"{where}: no metrics-api trigger on GET /queue"]
    return out + _queue_trigger_violations(objs, scaled, queue[0], worker)


def _queue_trigger_violations(
    objs: list[dict[str, Any]], scaled: dict[str, Any], trigger: dict[str, Any], worker: dict[str, Any]
) -> list[str]:
    meta, where = trigger["metadata"], f"ScaledObject/{scaled['metadata']['name']} metrics-api"
    url = urlsplit(meta.get("url", ""))
    service = by_kind(objs, "Service").get("ingestion-mcp")
    host = f"ingestion-mcp.{scaled['metadata'].get('namespace')}.svc"
    out = []
    # KEDA calls the URL from its own namespace: a short name, or another namespace, reaches nothing.
    if url.hostname not in (host, f"{host}.cluster.local"):
        out.append(f"{where}: url host {url.hostname!r} is not {host}")
    if service is None or url.port not in [p["port"] for p in service["spec"]["ports"]]:
        out.append(f"{where}: url port {url.port} is not a port of Service/ingestion-mcp")
    if url.path != "/queue" or meta.get("valueLocation") != "depth":
        out.append(f"{where}: does not read `depth` (queued + running) from GET /queue")
    if trigger.get("metricType", "AverageValue") != "AverageValue":
        out.append(f"{where}: metricType is not AverageValue (one worker per targetValue jobs)")
    concurrency = container_env(objs, _pod(worker)["containers"][0]).get(
        f"{MCP_PREFIX}MAX_CONCURRENT_JOBS", str(MAX_CONCURRENT_JOBS_DEFAULT)
    )
    if float(meta.get("targetValue", 0)) != float(concurrency):
        out.append(f"{where}: targetValue {meta.get('targetValue')} is not what a worker runs at once ({concurrency})")
    # KEDA before 2.18 reads only `authMode`; without it the scaler calls /queue with no token and gets 401.
    if meta.get("authMode") != "bearer":
        out.append(f"{where}: authMode is not bearer (GET /queue needs AUTH_TOKEN)")
    auth = by_kind(objs, "TriggerAuthentication").get((trigger.get("authenticationRef") or {}).get("name"))
    refs = {r["parameter"]: r for r in ((auth or {}).get("spec") or {}).get("secretTargetRef", [])}
    token = refs.get("token") or refs.get("bearerToken") or {}
    if (token.get("name"), token.get("key")) != ("ingestion-auth", "AUTH_TOKEN"):
        out.append(f"{where}: its TriggerAuthentication does not give `token` from ingestion-auth/AUTH_TOKEN")
    return out


def _matches(selector: dict[str, Any] | None, labels: dict[str, str]) -> bool:
    if selector is None:
        return False
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr["key"], expr["operator"], expr.get("values") or []
        ok = {
            "In": labels.get(key) in values,
            "NotIn": labels.get(key) not in values,
            "Exists": key in labels,
            "DoesNotExist": key not in labels,
        }[op]
        if not ok:
            return False
    return True


def _admits(objs: list[dict[str, Any]], pod_labels: dict[str, str], port: object, peer: dict[str, Any]) -> bool:
    """Whether the NetworkPolicies let `peer` (namespace labels + pod labels) reach `port` of such a pod."""
    policies = [
        p
        for p in by_kind(objs, "NetworkPolicy").values()
        if "Ingress" in p["spec"].get("policyTypes", ["Ingress"]) and _matches(p["spec"]["podSelector"], pod_labels)
    ]
    if not policies:
        return True  # no policy isolates the pod
    rules = [rule for policy in policies for rule in policy["spec"].get("ingress") or []]
    return any(
        (not rule.get("ports") or port in [p.get("port") for p in rule["ports"]])
        and (not rule.get("from") or any(_peer_matches(source, peer) for source in rule["from"]))
        for rule in rules
    )


def _peer_matches(source: dict[str, Any], peer: dict[str, Any]) -> bool:
    """One `from` entry: no namespaceSelector means the policy's own namespace."""
    if "namespaceSelector" in source:
        if peer.get("namespace") is None or not _matches(source["namespaceSelector"], peer["namespace"]):
            return False
    elif peer.get("namespace") is not None:
        return False
    return "podSelector" not in source or _matches(source["podSelector"], peer.get("pod") or {})


def keda_reach_violations(objs: list[dict[str, Any]]) -> list[str]:
    """The NetworkPolicies let KEDA's namespace reach the port its metrics-api trigger calls."""
    out = []
    services, deployments = by_kind(objs, "Service"), by_kind(objs, "Deployment")
    peer = {"namespace": {"kubernetes.io/metadata.name": KEDA_NAMESPACE}, "pod": {}}
    for scaled in by_kind(objs, "ScaledObject").values():
        for trigger in scaled["spec"]["triggers"]:
            if trigger["type"] != "metrics-api":
                continue
            url = urlsplit(trigger["metadata"].get("url", ""))
            spec = (services.get((url.hostname or "").split(".")[0]) or {}).get("spec") or {}
            ports = [p for p in spec.get("ports", []) if p["port"] == url.port]
            if not ports:
                out.append(f"ScaledObject/{scaled['metadata']['name']}: {url.geturl()} names no Service port")
                continue
            target = ports[0].get("targetPort", url.port)
            for dep in deployments.values():
                if not _matches({"matchLabels": spec["selector"]}, _labels(dep)):
                    continue
                container_ports = [p for c in _pod(dep)["containers"] for p in c.get("ports", [])]
                named = next((p for p in container_ports if target in (p.get("name"), p["containerPort"])), {})
                names = (named.get("name"), named.get("containerPort"))
                if not any(_admits(objs, _labels(dep), port, peer) for port in names):
                    where = f"Deployment/{dep['metadata']['name']}"
                    out.append(f"{where}: no NetworkPolicy lets {KEDA_NAMESPACE} reach port {target}")
    return out


# --- the broker: gateways use it, the NetworkPolicy lets every client in -------------------


def k8s_broker_violations(objs: list[dict[str, Any]]) -> list[str]:
    """vector-gateway has the MCP server's broker URL, and every pod with a broker URL may reach Redis."""
    deployments = by_kind(objs, "Deployment")
    envs = {n: container_env(objs, _pod(d)["containers"][0]) for n, d in deployments.items()}
    out = []
    mcp_url = envs.get("ingestion-mcp", {}).get(f"{MCP_PREFIX}BROKER_URL")
    gateway_url = envs.get("vector-gateway", {}).get("VECTOR_GATEWAY_BROKER_URL")
    if not mcp_url or gateway_url != mcp_url:
        out.append(f"vector-gateway: VECTOR_GATEWAY_BROKER_URL {gateway_url!r} is not the MCP broker {mcp_url!r}")
    redis = by_kind(objs, "StatefulSet").get("redis")
    if redis is None:
        return [*out, "no StatefulSet/redis"]
    for name, env in envs.items():
        for key, value in env.items():
            if not key.endswith("BROKER_URL"):
                continue
            names = [e["name"] for e in _pod(deployments[name])["containers"][0].get("env", [])]
            if "$(REDIS_PASSWORD)" in value and names.index("REDIS_PASSWORD") > names.index(key):
                out.append(f"Deployment/{name}: REDIS_PASSWORD comes after {key} ($(VAR) needs it first)")
            if not _admits(objs, _labels(redis), "redis", {"pod": _labels(deployments[name])}):
                out.append(f"Deployment/{name}: has {key} but no NetworkPolicy lets it reach Redis")
    return out


def compose_broker_violations(compose: dict[str, Any]) -> list[str]:
    services = compose["services"]
    gateway, mcp = services["vector-gateway"], services["ingestion-mcp"]
    out = []
    url = gateway.get("environment", {}).get("VECTOR_GATEWAY_BROKER_URL")
    if not url or url != mcp["environment"].get(f"{MCP_PREFIX}BROKER_URL"):
        out.append(f"compose vector-gateway: VECTOR_GATEWAY_BROKER_URL {url!r} is not the MCP server's broker")
    if (gateway.get("depends_on") or {}).get("redis") != {"condition": "service_healthy"}:
        out.append("compose vector-gateway: does not wait for a healthy redis")
    return out


# --- grace periods -------------------------------------------------------------------------


def k8s_grace_violations(objs: list[dict[str, Any]]) -> list[str]:
    """A worker's pod outlives INGESTION_MCP_JOB_GRACE_S by the margin after SIGTERM."""
    out = []
    for worker in _workers(objs):
        env = container_env(objs, _pod(worker)["containers"][0])
        grace = float(env.get(f"{MCP_PREFIX}JOB_GRACE_S", JOB_GRACE_DEFAULT_S))
        period = _pod(worker).get("terminationGracePeriodSeconds", K8S_GRACE_DEFAULT_S)
        if period < grace + GRACE_MARGIN_S:
            where = f"Deployment/{worker['metadata']['name']}"
            out.append(f"{where}: terminationGracePeriodSeconds {period} < {grace:g} + {GRACE_MARGIN_S:g}")
    return out


_DURATION = re.compile(r"(\d+(?:\.\d+)?)(h|ms|us|m|s)")
_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6}


def duration_s(value: str) -> float:
    """A compose duration (`1m30s`, `60s`) in seconds."""
    parts = _DURATION.findall(value)
    assert parts and "".join(n + u for n, u in parts) == value, f"not a compose duration: {value!r}"
    return sum(float(n) * _SECONDS[u] for n, u in parts)


def compose_grace_violations(compose: dict[str, Any], interpolate: Any) -> list[str]:
    worker = compose["services"]["ingestion-worker"]
    env = worker.get("environment") or {}
    grace = float(interpolate(str(env.get(f"{MCP_PREFIX}JOB_GRACE_S", JOB_GRACE_DEFAULT_S))))
    period = duration_s(str(worker.get("stop_grace_period", COMPOSE_GRACE_DEFAULT)))
    if period < grace + GRACE_MARGIN_S:
        return [f"compose ingestion-worker: stop_grace_period {period:g}s < {grace:g} + {GRACE_MARGIN_S:g}"]
    return []


# --- one environment for server and worker (compose) ---------------------------------------


def compose_env_violations(compose: dict[str, Any]) -> list[str]:
    """The worker's environment is the server's minus what the server listens on; the same env_file."""
    services = compose["services"]
    server, worker = services["ingestion-mcp"], services["ingestion-worker"]
    want = {k: v for k, v in (server.get("environment") or {}).items() if k not in SERVER_ONLY_ENV}
    got = worker.get("environment") or {}
    out = [
        f"compose ingestion-worker: {key} is {got.get(key)!r}, the server has {want.get(key)!r}"
        for key in sorted(set(want) | set(got))
        if want.get(key) != got.get(key)
    ]
    if server.get("env_file") != worker.get("env_file"):
        out.append("compose ingestion-worker: env_file differs from the server's")
    return out


# --- fetched documents on storage every replica and worker shares ---------------------------


def k8s_shared_documents_violations(objs: list[dict[str, Any]], *, rwx: bool) -> list[str]:
    """Every MCP replica and worker sees INGESTION_MCP_DOCUMENTS_DIR on one writable claim, at one path."""
    pvcs = by_kind(objs, "PersistentVolumeClaim")
    seen: dict[str, tuple[str, str | None]] = {}
    out = []
    for name, dep in by_kind(objs, "Deployment").items():
        container = _pod(dep)["containers"][0]
        env = container_env(objs, container)
        if not any(k.startswith(MCP_PREFIX) for k in env):
            continue
        path = documents_dir(env)
        mounts = {m["mountPath"]: m for m in container.get("volumeMounts", [])}
        mount = mounts.get(_covering(path, mounts) or "")
        volume = next((v for v in _pod(dep).get("volumes", []) if mount and v["name"] == mount["name"]), {})
        claim = (volume.get("persistentVolumeClaim") or {}).get("claimName")
        seen[name] = (path, claim)
        if claim is None:
            out.append(f"Deployment/{name}: {path} is not on a PersistentVolumeClaim (a worker's files stay there)")
            continue
        if (mount or {}).get("readOnly") or volume["persistentVolumeClaim"].get("readOnly"):
            out.append(f"Deployment/{name}: {path} is mounted read-only")
        modes = (pvcs.get(claim) or {}).get("spec", {}).get("accessModes", [])
        if rwx and "ReadWriteMany" not in modes:
            out.append(f"PersistentVolumeClaim/{claim}: {modes} is not ReadWriteMany (replicas on other nodes)")
    if len(seen) < 2:
        out.append(f"documents: want the MCP server and its workers, found {sorted(seen)}")
    if len(set(seen.values())) > 1:
        out.append(f"documents: not one claim at one path: {seen}")
    return list(dict.fromkeys(out))


def _compose_mounts(svc: dict[str, Any]) -> dict[str, tuple[str, str | None, bool]]:
    """target -> (type, source, read-only) for a compose service's volumes and tmpfs."""
    mounts: dict[str, tuple[str, str | None, bool]] = {}
    for entry in svc.get("volumes") or []:
        if isinstance(entry, str):
            source, target, *mode = entry.split(":")
            kind = "bind" if source.startswith((".", "/", "$", "~")) else "volume"
            mounts[target] = (kind, source, "ro" in mode)
        else:
            mounts[entry["target"]] = (entry.get("type", "volume"), entry.get("source"), bool(entry.get("read_only")))
    tmpfs = svc.get("tmpfs") or []
    for entry in [tmpfs] if isinstance(tmpfs, str) else tmpfs:
        mounts[entry.split(":")[0]] = ("tmpfs", None, False)
    return mounts


def compose_shared_documents_violations(compose: dict[str, Any]) -> list[str]:
    """The server and its worker see INGESTION_MCP_DOCUMENTS_DIR on one writable named volume, at one path."""
    seen = {}
    out = []
    for name in ("ingestion-mcp", "ingestion-worker"):
        svc = compose["services"][name]
        path = documents_dir(svc.get("environment") or {})
        mounts = _compose_mounts(svc)
        kind, source, read_only = mounts.get(
            _covering(path, mounts) or "", ("the container's own filesystem", None, False)
        )
        seen[name] = (path, source)
        if kind != "volume" or source not in (compose.get("volumes") or {}):
            where = f"{kind} {source}" if source else kind
            out.append(f"compose {name}: {path} is on {where}, not a named volume both services mount")
        elif read_only:
            out.append(f"compose {name}: {path} is mounted read-only")
    if len(set(seen.values())) > 1:
        out.append(f"compose: documents not on one volume at one path: {seen}")
    return out
