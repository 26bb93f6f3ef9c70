"""The compose deployment, run for real: build every image, start the stack, drive it through a real MCP client over
HTTP, break it, tear it down. Prints a table (step, ok, seconds) and exits non-zero on any failure.

    make compose-smoke                 (scripts/compose_smoke.sh: podman + podman-compose here, docker compose v2 too)
    .venv/bin/python scripts/compose_smoke.py [--no-build | --build-only] [--keep-up] [--engine podman|docker]

The stack is docker-compose.yml with docker-compose.milvus-lite.yml over it: `milvus-lite server` stands in for
Milvus standalone (a test stand-in; etcd and MinIO are left out, their images cannot be had without a registry).
Every app container runs with an arbitrary UID (APP_UID=1000650000, group 0) and a read-only root filesystem.

Steps: build; start and wait for every health check (podman runs no health checks by itself without systemd: this
script runs them); ingest a text, a PDF, a scanned PDF and a DOCX over MCP with the bearer token; search with page
citations; a long job through Redis to the worker, the worker stopped and started mid-job (the job ends once); Redis,
the gateway and the stand-in Milvus restarted (searches answer again, nothing lost); UID and read-only checks; OAuth
mode with the access policy mounted and a real RS256 token; tear down (volumes included).
Env: ENGINE, AIRGAP=1 and HOST_PIP=1 (passed to scripts/build_images.sh), SMOKE_PROJECT, KEEP_UP=1.
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import sys
import tempfile
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

# After the line above: run as a script, the repository is not on the path before it.
from scripts.compose_checks import Checks  # noqa: E402
from scripts.compose_stack import APP_UID, PODMAN_CONF, SERVICES, Smoke, run  # noqa: E402
from scripts.service_stack import free_port  # noqa: E402


# -- documents --------------------------------------------------------------------------------------
def stage_documents(folder: Path) -> None:
    from bench.office_scans import office_report

    folder.mkdir(parents=True, exist_ok=True)
    for name in ("sample.pdf", "sample.docx", "sample.html"):  # HTML: trafilatura must import (pinned pip)
        shutil.copy(REPO / "tests" / "fixtures" / name, folder / name)
    scan, _ = office_report(2, 200)
    (folder / "scan.pdf").write_bytes(scan)
    long_scan, _ = office_report(40, 150, seed=27)  # ~15-30 s of OCR: long enough to stop the worker under it
    (folder / "long-scan.pdf").write_bytes(long_scan)
    (folder / "long-scan-2.pdf").write_bytes(office_report(40, 150, seed=28)[0])
    folder.chmod(0o755)
    for path in folder.iterdir():
        path.chmod(0o644)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--engine", default=os.environ.get("ENGINE") or shutil.which("podman") or "docker")
    parser.add_argument("--no-build", action="store_true", help="use the images already built")
    parser.add_argument(
        "--build-only", action="store_true", help="check the disk, build every image, stop (CI's images stage)"
    )
    parser.add_argument("--keep-up", action="store_true", default=os.environ.get("KEEP_UP") == "1")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="compose-smoke-"))
    token = secrets.token_urlsafe(32)
    smoke = Smoke(
        engine=args.engine, project=os.environ.get("SMOKE_PROJECT", f"smoke{uuid.uuid4().hex[:6]}"),
        env_file=REPO / ".env", documents=work / "documents", port=free_port(), token=token,
    )  # fmt: skip
    created_env = not smoke.env_file.exists()
    if not created_env:
        print(
            "compose_smoke: a .env is already there; the smoke writes its own: move yours away first", file=sys.stderr
        )
        return 2
    smoke.env = {**os.environ, "APP_UID": APP_UID, "MCP_PUBLISH_PORT": str(smoke.port),
                 "DOCUMENTS_DIR": str(smoke.documents), "COMPOSE_PROJECT_NAME": smoke.project}  # fmt: skip
    if os.environ.get("AIRGAP") == "1":  # no registry: Debian's redis-server, built by build_images.sh
        smoke.env.setdefault("REDIS_IMAGE", "localhost/ingestion/redis:bookworm")
    if smoke.podman and PODMAN_CONF.exists() and "CONTAINERS_CONF" not in os.environ:
        smoke.env["CONTAINERS_CONF"] = str(PODMAN_CONF)
    env_text = (REPO / ".env.example").read_text() + "\n" + "\n".join([
        f"AUTH_TOKEN={token}",
        f"REDIS_PASSWORD={secrets.token_urlsafe(24)}",
        f"MINIO_ROOT_PASSWORD={secrets.token_urlsafe(24)}",
        f"MCP_PUBLISH_PORT={smoke.port}",
        # Short sync wait: the long job is followed by get_job_status, as an agent would.
        "INGESTION_MCP_SYNC_WAIT_S=3",
    ]) + "\n"  # fmt: skip
    smoke.env_file.write_text(env_text)
    url = f"http://127.0.0.1:{smoke.port}/mcp"
    try:
        run_steps(smoke, url, build=not args.no_build, build_only=args.build_only)
    finally:
        if not all(s.ok for s in smoke.steps):
            for service in SERVICES:
                try:
                    logs = run([smoke.engine, "logs", "--tail", "40", smoke.container(service)], env=smoke.env,
                               check=False)  # fmt: skip
                    print(f"--- {service} ---\n{logs.stdout[-4000:]}{logs.stderr[-4000:]}", file=sys.stderr)
                except Exception:  # noqa: BLE001 - a service that never started has no logs
                    continue
        if not args.keep_up:
            down = ("down", "--volumes", "--remove-orphans", "-t", "10")
            smoke.step("tear down (volumes too)", lambda: smoke.compose(*down, check=False) and None)
            smoke.env_file.unlink(missing_ok=True)
            shutil.rmtree(work, ignore_errors=True)
    print()
    print(f"{'step':<58} {'ok':<4} {'seconds':>8}")
    for s in smoke.steps:
        print(f"{s.name:<58} {'ok' if s.ok else 'FAIL':<4} {s.seconds:>8.1f}")
    failed = [s.name for s in smoke.steps if not s.ok]
    for s in smoke.steps:  # why, in the table itself: a CI log keeps only its tail, after every service's log
        if not s.ok:
            print(f"FAIL {s.name}: {s.detail[:1500]}")
    print(f"compose smoke: {len(smoke.steps) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed or not smoke.steps else 0


def run_steps(smoke: Smoke, url: str, *, build: bool, build_only: bool = False) -> None:
    checks = Checks(smoke, url)
    if not build_only and not smoke.step("stage documents (text, PDF, scanned PDF, DOCX, 40-page scan)",
                                         lambda: stage_documents(smoke.documents)):  # fmt: skip
        return
    if build and not smoke.step("disk: room to build every image", checks.room):
        return
    if build and not smoke.step("build every image", checks.build):
        return
    if build_only:
        return
    if not smoke.step("start the stack (milvus-lite stand-in)", lambda: smoke.compose("up", "-d", *SERVICES) and None):
        return
    if not smoke.step("every health check passes", lambda: smoke.wait_healthy(SERVICES)):
        return
    smoke.step("app containers: arbitrary UID, read-only root, no torch", checks.containers)
    smoke.step("gateway under Docker's tmpfs (no copy-up): baked export", checks.no_copy_up)
    smoke.astep("MCP: ingest text, PDF, scanned PDF, DOCX (bearer token)", checks.ingest)
    smoke.astep("MCP: search cites page 2 of the PDF; no token is refused", checks.search)
    smoke.astep("sync_folder watch=true: host edit and deletion followed", checks.watched_folder)
    smoke.astep("job through Redis; worker stopped (SIGTERM) + started mid-job", checks.worker_restart)
    smoke.astep("job through Redis; worker killed (SIGKILL) + started mid-job", checks.worker_kill)
    for service in ("redis", "vector-gateway", "milvus"):
        smoke.astep(f"restart {service}: searches answer again, nothing lost",
                    lambda service=service: checks.restart(service))  # fmt: skip
    smoke.astep("OAuth mode: policy mounted, RS256 token, rights enforced", checks.oauth)


if __name__ == "__main__":
    sys.exit(main())
