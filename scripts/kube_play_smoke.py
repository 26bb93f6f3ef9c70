"""The rendered OpenShift dev overlay's workloads started with `podman kube play`: every Deployment podman can play,
under an arbitrary UID (1000650000), its probe endpoints asked from inside each pod.

    .venv/bin/python scripts/kube_play_smoke.py        (after scripts/build_images.sh; podman only)

What podman 4.3 cannot play is listed, not hidden: the Milvus custom resource (the Milvus Operator's), KEDA's
ScaledObject, HPAs, PDBs, NetworkPolicies and Routes (no cluster), the Redis StatefulSet (podman 4.3 plays Pods,
Deployments, PVCs and ConfigMaps), and the Secret: its secretKeyRef entries become literal test values here
(podman 4.3 reads a podman secret as JSON and failed on both `data` and `stringData`). podman turns an httpGet
probe into `curl` inside the container, and the images carry no curl, so the probe paths are asked with Python.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
PLAYED = ("chunker", "docling", "vector-gateway", "ingestion-mcp")
SECRET_VALUES = {"AUTH_TOKEN": "kube-play-token", "MILVUS_TOKEN": "", "REDIS_PASSWORD": "kube-play-redis"}
UID = 1000650000


def podman(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ}
    env.setdefault("CONTAINERS_CONF", str(REPO / "scripts" / "podman" / "containers.conf"))
    result = subprocess.run(["podman", *args], capture_output=True, text=True, check=False, env=env, timeout=300)
    if check and result.returncode != 0:
        raise SystemExit(f"podman {' '.join(args[:2])} exited {result.returncode}: {result.stderr[-2000:]}")
    return result


def workloads(prefix: str) -> tuple[list[dict], list[str]]:
    rendered = subprocess.run(["kubectl", "kustomize", str(REPO / "openshift" / "overlays" / "dev")],
                              capture_output=True, text=True, check=True).stdout  # fmt: skip
    keep, skipped = [], []
    for doc in yaml.safe_load_all(rendered):
        kind, name = doc["kind"], doc["metadata"]["name"]
        if kind in ("ConfigMap", "PersistentVolumeClaim"):
            keep.append(doc)
        elif kind == "Deployment" and name in PLAYED:
            spec = doc["spec"]["template"]["spec"]
            spec.setdefault("securityContext", {})["runAsUser"] = UID  # OpenShift's SCC assigns one; pick one
            for container in spec["containers"]:
                container["image"] = container["image"].replace("quay.io/ingestion-mcp", prefix)
                for env in container.get("env", []):
                    ref = (env.get("valueFrom") or {}).get("secretKeyRef")
                    if ref:
                        env.pop("valueFrom")
                        env["value"] = SECRET_VALUES[ref["key"]]
            keep.append(doc)
        else:
            skipped.append(f"{kind}/{name}")
    return keep, skipped


def ask(container: str, port: int, path: str) -> int:
    code = (f"import urllib.request as u, urllib.error as e\ntry: print(u.urlopen('http://127.0.0.1:{port}{path}', "
            "timeout=4).status)\nexcept e.HTTPError as x: print(x.code)")  # fmt: skip
    answer = podman("exec", container, "python", "-c", code, check=False)
    return int(answer.stdout.strip() or 0)


def main() -> int:
    keep, skipped = workloads(os.environ.get("IMAGE_PREFIX", "localhost/ingestion"))
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as handle:
        yaml.safe_dump_all(keep, handle)
    failures = 0
    claims = [d["metadata"]["name"] for d in keep if d["kind"] == "PersistentVolumeClaim"]
    try:
        podman("kube", "down", handle.name, check=False)  # what an interrupted run left
        podman("volume", "rm", "-f", *claims, check=False)
        podman("kube", "play", handle.name)
        print(f"{'workload':<16} {'uid':<11} {'liveness /healthz':<18} readiness /readyz")
        for deployment in (d for d in keep if d["kind"] == "Deployment"):
            name = deployment["metadata"]["name"]
            container = deployment["spec"]["template"]["spec"]["containers"][0]
            port = next(p["containerPort"] for p in container["ports"])
            live = ready = 0
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and (live != 200 or ready not in (200, 503)):
                live, ready = ask(f"{name}-pod-0-{container['name']}", port, "/healthz"), 0
                if live == 200:
                    ready = ask(f"{name}-pod-0-{container['name']}", port, "/readyz")
                time.sleep(1)
            uid = podman("exec", f"{name}-pod-0-{container['name']}", "id", "-u").stdout.strip()
            failures += live != 200 or uid != str(UID)
            print(f"{name:<16} {uid:<11} {live:<18} {ready}")
        print("not played:", ", ".join(skipped))
    finally:
        podman("kube", "down", handle.name, check=False)
        podman("volume", "rm", "-f", *claims, check=False)
        Path(handle.name).unlink()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
