"""Each image's size, and how fast it starts under Docker's and Kubernetes' mount semantics (an empty tmpfs over
/home/app, no copy-up; read-only root; an arbitrary UID): seconds to /readyz (/healthz for ingestion-mcp, whose
readiness needs the other services) and the container's memory then. docs/deployment.md "Images" reports them.

    .venv/bin/python scripts/image_figures.py [--prefix localhost/ingestion] [--runs 3]

Podman only (`notmpcopyup`); each image is started alone, the gateway on an in-container Milvus Lite path.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import time
from pathlib import Path

CONF = Path(__file__).resolve().parent / "podman" / "containers.conf"
IMAGES = {  # image name: (port, probe path, extra environment)
    "docling-service": (8001, "/readyz", {}),
    "chunker-service": (8002, "/readyz", {}),
    "vector-gateway": (8003, "/readyz", {"VECTOR_GATEWAY_MILVUS_URI": "/tmp/milvus.db"}),
    # Its own liveness only: a token (HTTP on 0.0.0.0 refuses to start without one) and services that are not there.
    "ingestion-mcp": (
        8000,
        "/healthz",
        {
            "AUTH_TOKEN": "figures",
            "DOCLING_SERVICE_URL": "http://127.0.0.1:9",
            "CHUNKER_SERVICE_URL": "http://127.0.0.1:9",
            "VECTOR_GATEWAY_URL": "http://127.0.0.1:9",
        },
    ),
}


def podman(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CONTAINERS_CONF": os.environ.get("CONTAINERS_CONF", str(CONF))}
    return subprocess.run(["podman", *args], capture_output=True, text=True, check=check, env=env)


def start_once(image: str, port: int, path: str, env: dict[str, str]) -> tuple[float | None, float]:
    name = f"figures-{os.getpid()}"
    flags = [f"-e={k}={v}" for k, v in env.items()]
    podman("run", "-d", "--name", name, "--read-only", "--tmpfs", "/tmp", "--tmpfs", "/home/app:notmpcopyup",
           "--user", "1000650000:0", "--cap-drop", "ALL", *flags, image)  # fmt: skip
    probe = f"import urllib.request as u; u.urlopen('http://127.0.0.1:{port}{path}', timeout=4)"
    started = time.monotonic()
    ready: float | None = None
    try:
        while time.monotonic() - started < 180:
            if podman("exec", name, "python", "-c", probe, check=False).returncode == 0:
                ready = time.monotonic() - started
                break
            time.sleep(0.25)
        stats = json.loads(podman("stats", "--no-stream", "--format", "json", name).stdout)
        memory = _bytes(stats[0]["mem_usage"].split("/")[0])
    finally:
        podman("rm", "-f", name, check=False)
    return ready, memory / 1e6


def _bytes(text: str) -> float:
    text = text.strip()
    for suffix, factor in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3), ("B", 1)):
        if text.endswith(suffix):
            return float(text.removesuffix(suffix)) * factor
    return float(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prefix", default="localhost/ingestion")
    parser.add_argument("--tag", default="0.1.0")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--only", nargs="*", default=list(IMAGES))
    args = parser.parse_args()
    print(f"| image | size MB | ready s (median of {args.runs}) | memory MB when ready |")
    print("|---|---|---|---|")
    for name in args.only:
        port, path, env = IMAGES[name]
        image = f"{args.prefix}/{name}:{args.tag}"
        found = podman("image", "inspect", "--format", "{{.Size}}", image, check=False)
        if found.returncode != 0:
            print(f"| {image} | not built | | |")
            continue
        runs = [start_once(image, port, path, env) for _ in range(args.runs)]
        ready = [r for r, _ in runs if r is not None]
        shown = f"not ready ({len(ready)}/{len(runs)})"
        if len(ready) == len(runs):
            shown = f"{statistics.median(ready):.1f}"
        print(f"| {image} | {int(found.stdout) / 1e6:.0f} | {shown} | {statistics.median(m for _, m in runs):.0f} |")


if __name__ == "__main__":
    main()
