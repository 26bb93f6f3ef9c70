"""The issue-22 invariants (deploy_access.py) fail on manifests broken the way a hurried change would break
them: none of them is vacuous."""

from __future__ import annotations

import copy

import pytest
import yaml


def find(objs, kind, name):
    return next(o for o in objs if o["kind"] == kind and o["metadata"]["name"].startswith(name))


def drop(objs, kind, name):
    objs.remove(find(objs, kind, name))


def rule(objs, name, index=0):
    return find(objs, "NetworkPolicy", name)["spec"]["ingress"][index]


def mount(objs, deployment):
    container = find(objs, "Deployment", deployment)["spec"]["template"]["spec"]["containers"][0]
    return next(m for m in container["volumeMounts"] if m["name"] == "access-policy")


def policy_text(objs):
    return find(objs, "ConfigMap", "ingestion-access-policy")["data"]


NETWORK_BREAKAGES = {
    "no default deny": lambda o: drop(o, "NetworkPolicy", "default-deny-ingress"),
    "backends unselected": lambda o: drop(o, "NetworkPolicy", "backends-from-ingestion-mcp"),
    "milvus unselected": lambda o: drop(o, "NetworkPolicy", "milvus-from-vector-gateway"),
    "etcd unselected": lambda o: drop(o, "NetworkPolicy", "milvus-etcd-from-milvus"),
    "backends from anywhere": lambda o: rule(o, "backends-from-ingestion-mcp").pop("from"),
    "redis from every namespace": lambda o: rule(o, "redis-from-ingestion")["from"].append({"namespaceSelector": {}}),
    "milvus from the namespace": lambda o: rule(o, "milvus-from-vector-gateway")["from"].append({"podSelector": {}}),
    "milvus from the internet": lambda o: rule(o, "milvus-from-vector-gateway")["from"].append(
        {"ipBlock": {"cidr": "0.0.0.0/0"}}
    ),
    "allow-all policy": lambda o: o.append(
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": {"name": "allow-all"},
            "spec": {"podSelector": {}, "policyTypes": ["Ingress"], "ingress": [{}]},
        }
    ),
}


@pytest.mark.parametrize("breakage", NETWORK_BREAKAGES)
def test_network_invariants_catch(rendered, checks, breakage):
    objs = copy.deepcopy(rendered["prod"])
    assert checks.access.network_violations(objs) == []
    NETWORK_BREAKAGES[breakage](objs)
    assert checks.access.network_violations(objs) != []


REACH_BREAKAGES = {
    "router cut off": lambda o: rule(o, "ingestion-mcp-from-router")["from"].pop(0),
    "gateway cut off milvus": lambda o: rule(o, "milvus-from-vector-gateway")["from"][0]["podSelector"].update(
        matchLabels={"app.kubernetes.io/part-of": "ingestion-mcp"}
    ),
    "worker cut off the backends": lambda o: rule(o, "backends-from-ingestion-mcp")["from"][0]["podSelector"][
        "matchExpressions"
    ][0].update(values=["ingestion-mcp"]),
    "milvus port for anyone here": lambda o: rule(o, "milvus-from-vector-gateway")["from"][0].update(
        podSelector={"matchExpressions": [{"key": "app.kubernetes.io/name", "operator": "Exists"}]}
    ),
    "worker opened": lambda o: find(o, "NetworkPolicy", "ingestion-worker-no-ingress")["spec"].update(
        ingress=[{"from": [{"podSelector": {"matchLabels": {"app.kubernetes.io/name": "ingestion-mcp"}}}]}]
    ),
}


@pytest.mark.parametrize("breakage", REACH_BREAKAGES)
def test_reach_invariants_catch(rendered, checks, breakage):
    objs = copy.deepcopy(rendered["prod"])
    assert checks.access.reach_violations(objs) == []
    REACH_BREAKAGES[breakage](objs)
    assert checks.access.reach_violations(objs) != []


OAUTH_BREAKAGES = {
    "no issuer": lambda o: find(o, "ConfigMap", "ingestion-mcp-config")["data"].pop("INGESTION_MCP_OAUTH_ISSUER"),
    "no jwks": lambda o: find(o, "ConfigMap", "ingestion-mcp-config")["data"].pop("INGESTION_MCP_OAUTH_JWKS_URL"),
    "two jwks sources": lambda o: find(o, "ConfigMap", "ingestion-mcp-config")["data"].update(
        INGESTION_MCP_OAUTH_JWKS_FILE="/etc/ingestion-mcp/jwks.json"
    ),
    "http issuer": lambda o: find(o, "ConfigMap", "ingestion-mcp-config")["data"].update(
        INGESTION_MCP_OAUTH_ISSUER="http://keycloak/realms/ingestion"
    ),
    "audience not the endpoint": lambda o: find(o, "ConfigMap", "ingestion-mcp-config")["data"].update(
        INGESTION_MCP_OAUTH_AUDIENCE="https://ingestion-mcp.apps.example.com"
    ),
    "audience on another host": lambda o: find(o, "ConfigMap", "ingestion-mcp-config")["data"].update(
        INGESTION_MCP_OAUTH_AUDIENCE="https://mcp.example.org/mcp"
    ),
    "no metadata route": lambda o: drop(o, "Route", "ingestion-mcp-metadata"),
    "metadata on another host": lambda o: find(o, "Route", "ingestion-mcp-metadata")["spec"].update(
        host="x.example.com"
    ),
    "worker without the policy": lambda o: mount(o, "ingestion-worker").update(mountPath="/etc/other"),
    "policy file renamed": lambda o: find(o, "ConfigMap", "ingestion-mcp-config")["data"].update(
        INGESTION_MCP_ACCESS_POLICY="/etc/ingestion-mcp/policy.toml"
    ),
    "policy not TOML": lambda o: policy_text(o).update({"access-policy.toml": "rules: [{right: read}]\n"}),
    "unknown right": lambda o: policy_text(o).update(
        {"access-policy.toml": '[[rules]]\nscope = "a"\nright = "owner"\ncollections = ["*"]\n'}
    ),
    "scope and group": lambda o: policy_text(o).update(
        {"access-policy.toml": '[[rules]]\nscope = "a"\ngroup = "g"\nright = "read"\ncollections = ["*"]\n'}
    ),
    "no collections": lambda o: policy_text(o).update(
        {"access-policy.toml": '[[rules]]\nscope = "a"\nright = "read"\ncollections = []\n'}
    ),
}


@pytest.mark.parametrize("breakage", OAUTH_BREAKAGES)
def test_oauth_invariants_catch(rendered_oauth, checks, breakage):
    objs = copy.deepcopy(rendered_oauth)
    assert checks.access.oauth_violations(objs) == []
    OAUTH_BREAKAGES[breakage](objs)
    assert checks.access.oauth_violations(objs) != []


def test_static_mode_invariant_catches_oauth_in_a_default_overlay(rendered, checks):
    objs = copy.deepcopy(rendered["dev"])
    find(objs, "ConfigMap", "ingestion-mcp-config")["data"]["INGESTION_MCP_OAUTH_ISSUER"] = "https://idp/realms/x"
    assert checks.access.static_mode_violations(objs) != []


COMPOSE_BREAKAGES = {
    "issuer defaulted": lambda c: c["ingestion-worker"]["environment"].update(
        INGESTION_MCP_OAUTH_ISSUER="${INGESTION_MCP_OAUTH_ISSUER:-}"
    ),
    "audience missing on the worker": lambda c: c["ingestion-worker"]["environment"].pop(
        "INGESTION_MCP_OAUTH_AUDIENCE"
    ),
    "no policy on the server": lambda c: c["ingestion-mcp"].update(
        volumes=[v for v in c["ingestion-mcp"]["volumes"] if not (isinstance(v, dict) and "toml" in v["target"])]
    ),
    "policy as a service config": lambda c: c["ingestion-mcp"].update(
        configs=[{"source": "access-policy", "target": "/etc/ingestion-mcp/access-policy.toml"}]
    ),
}


@pytest.mark.parametrize("breakage", COMPOSE_BREAKAGES)
def test_compose_oauth_invariants_catch(compose, checks, breakage):
    broken = copy.deepcopy(compose)
    for svc in ("ingestion-mcp", "ingestion-worker"):
        broken["services"][svc]["environment"] = dict(broken["services"][svc]["environment"])
    COMPOSE_BREAKAGES[breakage](broken["services"])

    def read(path):
        return "[[rules]]\nscope = 's'\nright = 'read'\ncollections = ['*']\n"

    assert checks.access.compose_oauth_violations(broken, read) != []


def test_compose_catches_a_broken_policy_file(compose, checks):
    assert checks.access.compose_oauth_violations(compose, lambda path: yaml.safe_dump({"rules": []})) != []
