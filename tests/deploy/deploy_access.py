"""Invariants of issue 22 (many users, least privilege): NetworkPolicies that let each internal service be
reached only by its clients, and the OAuth settings and access policy wired into the server and its workers.

Each function returns a list of violations (empty = fine), for the real manifests and for the broken ones in
test_invariants_catch_access.py. conftest.py hands them to the tests through the `checks` fixture.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import PurePosixPath
from typing import Any

from deploy_distributed import _admits, _labels, _matches, by_kind

NAME, INSTANCE = "app.kubernetes.io/name", "app.kubernetes.io/instance"
# The namespace label OpenShift puts on the router's namespace (openshift-ingress).
ROUTER = {"namespace": {"policy-group.network.openshift.io/ingress": ""}, "pod": {}}
ELSEWHERE = {"namespace": {"kubernetes.io/metadata.name": "elsewhere"}, "pod": {}}
STRANGER = {"pod": {NAME: "stranger"}}
BACKENDS = ("docling", "chunker", "vector-gateway")
MILVUS_PORT = 19530
OAUTH_KEYS = ("INGESTION_MCP_OAUTH_ISSUER", "INGESTION_MCP_OAUTH_AUDIENCE", "INGESTION_MCP_ACCESS_POLICY")
JWKS_KEYS = ("INGESTION_MCP_OAUTH_JWKS_URL", "INGESTION_MCP_OAUTH_JWKS_FILE")
RIGHTS = {"read", "write", "admin"}
WELL_KNOWN = "/.well-known/oauth-protected-resource"


def peer(name: str) -> dict[str, Any]:
    return {"pod": {NAME: name}}


# --- NetworkPolicies -------------------------------------------------------------------------


def internal_pods(objs: list[dict[str, Any]]) -> dict[str, dict[str, str]]:
    """The pod labels of everything but the MCP server: our workloads, and what each Milvus CR makes
    (its own pods, and the etcd, MinIO and Pulsar Helm releases the operator installs)."""
    pods = {
        f"{o['kind']}/{o['metadata']['name']}": _labels(o)
        for o in objs
        if o["kind"] in ("Deployment", "StatefulSet") and _labels(o).get(NAME) != "ingestion-mcp"
    }
    for name in by_kind(objs, "Milvus"):
        pods[f"Milvus/{name}"] = {NAME: "milvus", INSTANCE: name}
        pods[f"Milvus/{name} etcd"] = {NAME: "etcd", INSTANCE: f"{name}-etcd"}
        pods[f"Milvus/{name} minio"] = {"app": "minio", "release": f"{name}-minio"}
        pods[f"Milvus/{name} pulsar"] = {"app": "pulsar", "release": f"{name}-pulsar"}
    return pods


def _selects_all(selector: dict[str, Any] | None) -> bool:
    return selector is not None and not selector.get("matchLabels") and not selector.get("matchExpressions")


def _everyone(source: dict[str, Any]) -> str | None:
    """Why a `from` entry lets in more than named clients: any address, any namespace, any pod here."""
    cidr = (source.get("ipBlock") or {}).get("cidr")
    if cidr in ("0.0.0.0/0", "::/0"):
        return f"ipBlock {cidr}"
    if _selects_all(source.get("namespaceSelector")) and _selects_all(source.get("podSelector", {})):
        return "every namespace"
    if "namespaceSelector" not in source and _selects_all(source.get("podSelector")):
        return "every pod in the namespace"
    return None


def _ingress_policies(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        p for p in by_kind(objs, "NetworkPolicy").values() if "Ingress" in p["spec"].get("policyTypes", ["Ingress"])
    ]


def network_violations(objs: list[dict[str, Any]]) -> list[str]:
    """A default deny; each internal service selected by a policy of its own; no rule open to everyone."""
    policies = _ingress_policies(objs)
    out = []
    if not any(_selects_all(p["spec"]["podSelector"]) and not p["spec"].get("ingress") for p in policies):
        out.append("no default-deny ingress NetworkPolicy (podSelector {}, no rules)")
    for where, labels in internal_pods(objs).items():
        selecting = [p for p in policies if _matches(p["spec"]["podSelector"], labels)]
        if not any(not _selects_all(p["spec"]["podSelector"]) for p in selecting):
            out.append(f"{where}: no NetworkPolicy selects it")
        for policy in selecting:
            for rule in policy["spec"].get("ingress") or []:
                why = "no `from`" if not rule.get("from") else next(filter(None, map(_everyone, rule["from"])), None)
                if why:
                    out.append(f"NetworkPolicy/{policy['metadata']['name']}: lets {why} reach {where}")
    return out


def reach_violations(objs: list[dict[str, Any]]) -> list[str]:
    """Who reaches what: the router the MCP port; MCP and workers the backends and Redis; the gateway Milvus."""
    deployments = by_kind(objs, "Deployment")
    out = []

    def expect(what: str, labels: dict[str, str], port: object, allowed: dict, denied: dict) -> None:
        out.extend(
            f"{w} cannot reach {what} port {port}" for w, p in allowed.items() if not _admits(objs, labels, port, p)
        )
        out.extend(f"{w} reaches {what} port {port}" for w, p in denied.items() if _admits(objs, labels, port, p))

    strangers = {"a pod of another app": STRANGER, "another namespace": ELSEWHERE}
    clients = {n: peer(n) for n in ("ingestion-mcp", "ingestion-worker")}
    mcp = _labels(deployments["ingestion-mcp"])
    expect("ingestion-mcp", mcp, "http", {"the router": ROUTER}, strangers)
    for name in BACKENDS:
        expect(name, _labels(deployments[name]), "http", clients, {"the router": ROUTER, **strangers})
    redis = _labels(by_kind(objs, "StatefulSet")["redis"])
    expect("redis", redis, "redis", clients, {"the router": ROUTER, **strangers})
    for name in by_kind(objs, "Milvus"):
        others = {n: peer(n) for n in ("ingestion-mcp", "ingestion-worker", "docling", "chunker")}
        labels = {NAME: "milvus", INSTANCE: name}
        expect(f"Milvus/{name}", labels, MILVUS_PORT, {"vector-gateway": peer("vector-gateway")}, others | strangers)
    expect("ingestion-worker", _labels(deployments["ingestion-worker"]), 8000, {}, clients | strangers)
    return out


# --- OAuth and the access policy --------------------------------------------------------------


def _config(objs: list[dict[str, Any]], prefix: str) -> dict[str, str]:
    return next((c.get("data") or {} for n, c in by_kind(objs, "ConfigMap").items() if n.startswith(prefix)), {})


def static_mode_violations(objs: list[dict[str, Any]]) -> list[str]:
    """The default overlays stay in the static-token mode: no OAuth setting, the token from the Secret."""
    config = _config(objs, "ingestion-mcp-config")
    return [f"ingestion-mcp-config sets {k} (OAuth is opt-in)" for k in (*OAUTH_KEYS, *JWKS_KEYS) if k in config]


def oauth_violations(objs: list[dict[str, Any]]) -> list[str]:
    """OAuth on: issuer, JWKS and audience from the server's ConfigMap (https), the policy file mounted where
    INGESTION_MCP_ACCESS_POLICY says in the server and every worker, and that file a valid policy."""
    config = _config(objs, "ingestion-mcp-config")
    out = [f"ingestion-mcp-config: no {k}" for k in OAUTH_KEYS if not config.get(k)]
    if sum(bool(config.get(k)) for k in JWKS_KEYS) != 1:
        out.append("ingestion-mcp-config: not exactly one of INGESTION_MCP_OAUTH_JWKS_URL and _FILE")
    out += [
        f"ingestion-mcp-config: {k} is not an https URL"
        for k in ("INGESTION_MCP_OAUTH_ISSUER", "INGESTION_MCP_OAUTH_AUDIENCE", "INGESTION_MCP_OAUTH_JWKS_URL")
        if k in config and not config[k].startswith("https://")
    ]
    if not config.get("INGESTION_MCP_OAUTH_AUDIENCE", "").endswith("/mcp"):
        out.append("ingestion-mcp-config: the audience is not the MCP endpoint's URL (…/mcp)")
    out += route_violations(objs, config.get("INGESTION_MCP_OAUTH_AUDIENCE", ""))
    path = PurePosixPath(config.get("INGESTION_MCP_ACCESS_POLICY", "/"))
    for name in ("ingestion-mcp", "ingestion-worker"):
        dep = by_kind(objs, "Deployment")[name]
        text = mounted_file(objs, dep, path)
        if text is None:
            out.append(f"Deployment/{name}: {path} is not mounted from a ConfigMap")
        else:
            out += [f"{path} in Deployment/{name}: {p}" for p in policy_violations(text)]
    return out


def route_violations(objs: list[dict[str, Any]], audience: str) -> list[str]:
    """The audience is a Route's https URL, and a Route on that host serves the RFC 9728 metadata the server's
    401 points clients at (/.well-known/oauth-protected-resource/<path>)."""
    routes = list(by_kind(objs, "Route").values())
    urls = {f"https://{r['spec'].get('host')}{r['spec'].get('path', '')}": r for r in routes}
    if audience not in urls:
        return [f"the audience {audience!r} is no Route's URL ({sorted(urls)})"]
    host = urls[audience]["spec"]["host"]
    metadata = [
        r for r in routes if r["spec"].get("host") == host and WELL_KNOWN.startswith(r["spec"].get("path", "/"))
    ]
    if not metadata or any(r["spec"].get("tls", {}).get("termination") != "edge" for r in metadata):
        return [f"no edge-TLS Route on {host} serves {WELL_KNOWN}"]
    return []


def mounted_file(objs: list[dict[str, Any]], dep: dict[str, Any], path: PurePosixPath) -> str | None:
    """The text a Deployment's first container sees at `path`, when a ConfigMap volume puts it there."""
    pod = dep["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    configmaps = by_kind(objs, "ConfigMap")
    for mount in pod["containers"][0].get("volumeMounts", []):
        source = (volumes.get(mount["name"]) or {}).get("configMap")
        if not source or source["name"] not in configmaps:
            continue
        data = configmaps[source["name"]].get("data") or {}
        files = {item["path"]: item["key"] for item in source.get("items", [])} or {key: key for key in data}
        if mount.get("subPath"):
            files = {PurePosixPath(mount["mountPath"]).name: files.get(mount["subPath"], "")}
            base = PurePosixPath(mount["mountPath"]).parent
        else:
            base = PurePosixPath(mount["mountPath"])
        if path.parent == base and path.name in files and files[path.name] in data:
            return data[files[path.name]]
    return None


def policy_violations(text: str) -> list[str]:
    """The access policy file: TOML with `rules` (each one scope or group, a right, collection globs), an
    optional `default` and `groups_claim`, as services/ingestion_mcp's access.py reads it."""
    try:
        policy = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        return [f"not valid TOML: {exc}"]
    out = [f"unknown key {k!r}" for k in set(policy) - {"groups_claim", "default", "rules"}]
    if not policy.get("rules"):
        out.append("no [[rules]]")
    for table in ("default", "rules"):
        for n, rule in enumerate(policy.get(table) or [], 1):
            where = f"{table} #{n}"
            allowed = {"right", "collections"} | ({"scope", "group"} if table == "rules" else set())
            out += [f"{where}: unknown key {k!r}" for k in set(rule) - allowed]
            if rule.get("right") not in RIGHTS:
                out.append(f"{where}: right {rule.get('right')!r} is not one of {sorted(RIGHTS)}")
            patterns = rule.get("collections")
            if not isinstance(patterns, list) or not patterns or not all(str(p).strip() for p in patterns):
                out.append(f"{where}: collections must be a list of non-empty glob patterns")
            if table == "rules" and ("scope" in rule) == ("group" in rule):
                out.append(f"{where}: names exactly one of scope or group")
    return out


# --- compose -----------------------------------------------------------------------------------


def compose_oauth_violations(compose: dict[str, Any], read: Any) -> list[str]:
    """Server and worker pass the OAuth settings through from .env (unset = the static-token mode) and both
    mount the example policy, read-only, as a bind mount (podman-compose never mounts service-level `configs`);
    `read(path)` gives the text of a file the compose file names."""
    out = []
    if compose.get("configs") or any(svc.get("configs") for svc in compose["services"].values()):
        out.append("compose: `configs` are used; podman-compose ignores them (mount files as binds)")
    for name in ("ingestion-mcp", "ingestion-worker"):
        svc = compose["services"][name]
        env = svc.get("environment") or {}
        for key in (*OAUTH_KEYS, *JWKS_KEYS):
            if key not in env:
                out.append(f"compose {name}: {key} is not passed through")
            elif env[key] is not None:
                out.append(f"compose {name}: {key} has a value ({env[key]!r}); OAuth must stay off by default")
        mounted = [
            v for v in svc.get("volumes") or []
            if isinstance(v, dict) and v.get("type") == "bind" and v.get("target") == POLICY_TARGET
        ]  # fmt: skip
        if not mounted:
            out.append(f"compose {name}: no access policy mounted at {POLICY_TARGET}")
        for item in mounted:
            if item.get("read_only") is not True:
                out.append(f"compose {name}: the access policy is mounted writable")
            source = default_of(item["source"])
            out += [f"compose {name}: {source}: {p}" for p in policy_violations(read(source))]
    return out


POLICY_TARGET = "/etc/ingestion-mcp/access-policy.toml"


def default_of(value: str) -> str:
    """The path a compose value names when its variable is unset: ``${VAR:-./x}`` -> ``./x``."""
    match = re.fullmatch(r"\$\{[A-Z_]+:-(.+)\}", value)
    return match.group(1) if match else value
