"""Shared helpers for the deployment checks: loading, rendering and the invariants themselves.

The invariant functions return a list of violations (empty = fine) so the tests can run them on
the real manifests and on deliberately broken ones (test_invariants_catch.py).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml

# The issue-20 and issue-22 invariants live beside this file (conftest is not importable under importlib mode).
sys.path.insert(0, str(Path(__file__).resolve().parent))
import deploy_access as access
import deploy_distributed as distributed

REPO = Path(__file__).resolve().parents[2]
OPENSHIFT = REPO / "openshift"
OVERLAYS = ("dev", "prod")
# prod with the OAuth component (openshift/components/oauth): rendered and checked on its own.
OAUTH_OVERLAY = "prod-oauth"
SCHEMAS = Path(__file__).resolve().parent / "schemas"
COMPOSE_FILES = ("docker-compose.yml", "docker-compose.dev.yml")
SERVICE_DIRS = ("docling", "chunker", "vector_gateway", "ingestion_mcp")
# OpenShift 4.17 ships Kubernetes 1.30: validate against that API.
K8S_VERSION = "1.30.0"
# Kinds kubernetes-validate has no schema for, validated against our vendored schemas instead.
VENDORED_SCHEMAS = {
    ("route.openshift.io/v1", "Route"): "route.openshift.io_v1_route.json",
    ("milvus.io/v1beta1", "Milvus"): "milvus.io_v1beta1_milvus.json",
    ("keda.sh/v1alpha1", "ScaledObject"): "keda.sh_v1alpha1_scaledobject.json",
    ("keda.sh/v1alpha1", "TriggerAuthentication"): "keda.sh_v1alpha1_triggerauthentication.json",
}
SECRET_NAME = re.compile(r"(TOKEN|PASSWORD|SECRET|API_KEY|ACCESS_KEY)", re.IGNORECASE)
WORKLOAD_KINDS = {"Deployment", "StatefulSet", "DaemonSet", "Job", "CronJob"}


# --- loading -------------------------------------------------------------------------------


def render(overlay: str) -> list[dict[str, Any]]:
    """`kubectl kustomize` an overlay (offline) and return its objects."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.fail("kubectl is required for the deployment checks (kubectl kustomize renders offline)")
    proc = subprocess.run(
        [kubectl, "kustomize", str(OPENSHIFT / "overlays" / overlay)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, f"kustomize {overlay} failed:\n{proc.stderr}"
    return [doc for doc in yaml.safe_load_all(proc.stdout) if doc]


_INTERPOLATION = re.compile(r"\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-?+])(?P<arg>[^}]*))?\}")


def interpolate(value: str, env: dict[str, str] | None = None) -> str:
    """Resolve compose `${VAR}`, `${VAR:-default}` and `${VAR:?error}` the way compose would."""
    env = env or {}

    def sub(match: re.Match[str]) -> str:
        name, op, arg = match["name"], match["op"], match["arg"] or ""
        if name in env and (env[name] or not (op or "").startswith(":")):
            return env[name]
        if op in (":-", "-"):
            return arg
        if op in (":?", "?"):
            return f"<required:{name}>"
        return ""

    return _INTERPOLATION.sub(sub, value)


def load_yaml(path: Path) -> dict[str, Any]:
    with path.open() as fh:
        return yaml.safe_load(fh)


def read_env_example() -> dict[str, str]:
    """Assignments in .env.example, commented-out ones included (they document the variable)."""
    names: dict[str, str] = {}
    for line in (REPO / ".env.example").read_text().splitlines():
        match = re.match(r"^#?\s*([A-Z][A-Z0-9_]*)=(.*)$", line.strip())
        if match:
            names[match[1]] = match[2]
    return names


# --- invariants: images --------------------------------------------------------------------


def image_violations(image: str | None, where: str) -> list[str]:
    if not image:
        return [f"{where}: no image"]
    name = image.split("@", 1)[0]
    last = name.rsplit("/", 1)[-1]
    if "@sha256:" in image:
        return []
    if ":" not in last:
        return [f"{where}: image {image!r} has no tag"]
    if last.rsplit(":", 1)[1] == "latest":
        return [f"{where}: image {image!r} uses :latest"]
    return []


# --- invariants: Kubernetes ----------------------------------------------------------------


def pod_spec(obj: dict[str, Any]) -> dict[str, Any] | None:
    kind = obj.get("kind")
    if kind == "CronJob":
        return obj["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    if kind in WORKLOAD_KINDS:
        return obj["spec"]["template"]["spec"]
    if kind == "Pod":
        return obj["spec"]
    return None


def security_violations(obj: dict[str, Any]) -> list[str]:
    """restricted-v2 SCC: non-root, no pinned UID, no escalation, drop ALL, RuntimeDefault seccomp."""
    spec = pod_spec(obj)
    if spec is None:
        return []
    out: list[str] = []
    where = f"{obj['kind']}/{obj['metadata']['name']}"
    pod_sc = spec.get("securityContext") or {}
    if pod_sc.get("runAsUser") is not None or pod_sc.get("fsGroup") is not None:
        out.append(f"{where}: pins runAsUser/fsGroup (the restricted SCC assigns them)")
    if (pod_sc.get("seccompProfile") or {}).get("type") != "RuntimeDefault":
        out.append(f"{where}: pod seccompProfile is not RuntimeDefault")
    for container in [*spec.get("initContainers", []), *spec.get("containers", [])]:
        cwhere = f"{where}/{container['name']}"
        sc = container.get("securityContext") or {}
        if sc.get("runAsNonRoot", pod_sc.get("runAsNonRoot")) is not True:
            out.append(f"{cwhere}: runAsNonRoot is not true")
        if sc.get("runAsUser") is not None:
            out.append(f"{cwhere}: pins runAsUser")
        if sc.get("allowPrivilegeEscalation") is not False:
            out.append(f"{cwhere}: allowPrivilegeEscalation is not false")
        if sc.get("privileged"):
            out.append(f"{cwhere}: privileged")
        if "ALL" not in ((sc.get("capabilities") or {}).get("drop") or []):
            out.append(f"{cwhere}: capabilities do not drop ALL")
        if (sc.get("capabilities") or {}).get("add"):
            out.append(f"{cwhere}: adds capabilities")
    return out


def probe_violations(container: dict[str, Any], where: str) -> list[str]:
    """Three probes on every container: an HTTP service's GET /healthz (startup, liveness) and /readyz
    (readiness); a container without an `http` port (broker, worker) probes with a command."""
    http = any(port.get("name") == "http" for port in container.get("ports", []))
    out: list[str] = []
    for probe, path in {"startupProbe": "/healthz", "livenessProbe": "/healthz", "readinessProbe": "/readyz"}.items():
        spec = container.get(probe) or {}
        if http:
            got = (spec.get("httpGet") or {}).get("path")
            if got != path:
                out.append(f"{where}: {probe} should GET {path}, has {got!r}")
        elif not (spec.get("exec") or {}).get("command"):
            out.append(f"{where}: no {probe} command (a container without an http port probes with exec)")
    return out


def workload_violations(obj: dict[str, Any]) -> list[str]:
    """Probes, requests and limits, pinned images, no inlined secrets, writable paths mounted."""
    spec = pod_spec(obj)
    if spec is None:
        return []
    out: list[str] = []
    where = f"{obj['kind']}/{obj['metadata']['name']}"
    for container in spec.get("containers", []):
        cwhere = f"{where}/{container['name']}"
        out += image_violations(container.get("image"), cwhere)
        out += probe_violations(container, cwhere)
        resources = container.get("resources") or {}
        for section in ("requests", "limits"):
            for resource in ("cpu", "memory"):
                if resource not in (resources.get(section) or {}):
                    out.append(f"{cwhere}: no {section}.{resource}")
        for env in container.get("env", []):
            if SECRET_NAME.search(env["name"]) and "value" in env:
                out.append(f"{cwhere}: secret-looking {env['name']} inlined (use secretKeyRef)")
        if (container.get("securityContext") or {}).get("readOnlyRootFilesystem"):
            mounts = {m["mountPath"] for m in container.get("volumeMounts", [])}
            if "/tmp" not in mounts:
                out.append(f"{cwhere}: read-only root filesystem without a /tmp volume")
    return out


def secret_violations(objs: list[dict[str, Any]]) -> list[str]:
    """No Secret object and no secret data in the rendered output: it is created out of band."""
    out = [f"Secret/{o['metadata']['name']} rendered from git" for o in objs if o["kind"] == "Secret"]
    for obj in objs:
        if obj["kind"] == "ConfigMap":
            out += [
                f"ConfigMap/{obj['metadata']['name']}: {key} looks like a secret"
                for key in (obj.get("data") or {})
                if SECRET_NAME.search(key)
            ]
    return out


# --- invariants: compose -------------------------------------------------------------------

_SECRET_REF = re.compile(r"\$\{[A-Z0-9_]+(:?\?[^}]*)?\}")
APP_SERVICES = ("docling", "chunker", "vector-gateway", "ingestion-mcp")


def compose_violations(compose: dict[str, Any]) -> list[str]:
    out: list[str] = []
    services = compose.get("services") or {}
    for name, svc in services.items():
        out += image_violations(interpolate(svc.get("image", "")), f"compose {name}")
        test = (svc.get("healthcheck") or {}).get("test")
        if not test or (svc.get("healthcheck") or {}).get("disable"):
            out.append(f"compose {name}: no healthcheck")
        deps = svc.get("depends_on") or {}
        if isinstance(deps, list):
            out.append(f"compose {name}: depends_on without condition: service_healthy")
        else:
            out += [
                f"compose {name}: depends_on {dep} is not service_healthy"
                for dep, cond in deps.items()
                if (cond or {}).get("condition") != "service_healthy"
            ]
        env = svc.get("environment") or {}
        items = env.items() if isinstance(env, dict) else (e.partition("=")[::2] for e in env)
        for key, value in items:
            # A secret may only be a plain or required (${VAR:?msg}) reference, never a default.
            inlined = value not in (None, "") and not _SECRET_REF.fullmatch(str(value))
            if SECRET_NAME.search(key) and inlined:
                out.append(f"compose {name}: {key} inlined (put it in .env)")
        if not ((svc.get("deploy") or {}).get("resources") or {}).get("limits", {}).get("memory"):
            out.append(f"compose {name}: no memory limit")
    for name in APP_SERVICES:
        svc = services.get(name)
        if svc is None:
            out.append(f"compose: service {name} missing")
            continue
        test = " ".join(svc.get("healthcheck", {}).get("test") or [])
        if "/readyz" not in test:
            out.append(f"compose {name}: healthcheck does not hit /readyz")
        files = [f["path"] if isinstance(f, dict) else f for f in svc.get("env_file") or []]
        if ".env" not in files:
            out.append(f"compose {name}: secrets do not come from env_file .env")
    return out


# --- invariants: Dockerfiles ---------------------------------------------------------------


def dockerfile_violations(text: str, where: str) -> list[str]:
    lines = [ln.strip() for ln in re.sub(r"\\\n", " ", text).splitlines()]
    lines = [ln for ln in lines if ln and not ln.startswith("#")]
    out: list[str] = []
    froms = [ln for ln in lines if ln.upper().startswith("FROM ")]
    if len(froms) < 2 or not any("--from=" in ln for ln in lines if ln.upper().startswith("COPY ")):
        out.append(f"{where}: not a multi-stage build (FROM ... AS builder, COPY --from=builder)")
    args = dict(
        re.match(r"ARG\s+(\w+)=?(.*)", ln).groups()  # type: ignore[union-attr]  # the filter keeps only lines that match
        for ln in lines
        if re.match(r"ARG\s+\w+", ln)
    )
    for ln in froms:
        image = ln.split()[1]
        image = re.sub(r"\$\{?(\w+)\}?", lambda m: args.get(m[1], ""), image)
        stage_names = {f.split()[-1] for f in froms if " AS " in f.upper()}
        if image not in stage_names:
            out += image_violations(image, f"{where} {ln}")
    users = [ln.split(None, 1)[1] for ln in lines if ln.upper().startswith("USER ")]
    if not users or users[-1].split(":")[0] in ("0", "root"):
        out.append(f"{where}: final USER is missing or root")
    elif not users[-1].split(":")[0].isdigit():
        out.append(f"{where}: USER {users[-1]} is not numeric (runAsNonRoot cannot verify names)")
    healthchecks = [ln for ln in lines if ln.upper().startswith("HEALTHCHECK ")]
    if not healthchecks or "NONE" in healthchecks[-1].upper().split():
        out.append(f"{where}: no HEALTHCHECK")
    elif "/healthz" not in healthchecks[-1]:
        out.append(f"{where}: HEALTHCHECK does not hit /healthz")
    if not any(ln.upper().startswith("EXPOSE ") for ln in lines):
        out.append(f"{where}: no EXPOSE")
    commands = [part for ln in lines for part in re.split(r"&&|;", ln)]  # one RUN chains several installs
    if any(re.search(r"pip install(?!.*-c constraints)", cmd) and "./services/" in cmd for cmd in commands):
        out.append(f"{where}: services installed without -c constraints.txt")
    return out


# --- fixtures ------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def rendered() -> dict[str, list[dict[str, Any]]]:
    return {overlay: render(overlay) for overlay in OVERLAYS}


@pytest.fixture(scope="session")
def rendered_oauth() -> list[dict[str, Any]]:
    return render(OAUTH_OVERLAY)


@pytest.fixture(scope="session")
def checks() -> SimpleNamespace:
    """The invariant functions, for tests (conftest is not importable under importlib mode)."""
    return SimpleNamespace(
        security=security_violations,
        workload=workload_violations,
        secrets=secret_violations,
        compose=compose_violations,
        dockerfile=dockerfile_violations,
        image=image_violations,
        interpolate=interpolate,
        distributed=distributed,
        access=access,
    )


@pytest.fixture(scope="session")
def compose() -> dict[str, Any]:
    return load_yaml(REPO / "docker-compose.yml")


@pytest.fixture(scope="session")
def env_example() -> dict[str, str]:
    return read_env_example()


def vendored_schema(api_version: str, kind: str) -> dict[str, Any] | None:
    name = VENDORED_SCHEMAS.get((api_version, kind))
    return json.loads((SCHEMAS / name).read_text()) if name else None


def iter_objects(rendered: dict[str, list[dict[str, Any]]]) -> Iterator[tuple[str, dict[str, Any]]]:
    for overlay, objs in rendered.items():
        for obj in objs:
            yield overlay, obj


@pytest.fixture(scope="session")
def schemas() -> SimpleNamespace:
    return SimpleNamespace(vendored=vendored_schema, names=VENDORED_SCHEMAS, k8s_version=K8S_VERSION)
