"""The checks of scripts/compose_smoke.py, one method a step, each raising on what does not hold."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

from scripts.compose_stack import APP_SERVICES, APP_UID, Smoke, mcp_client, run, search_hits
from scripts.service_stack import succeeded

REPO = Path(__file__).resolve().parents[1]
COLLECTION = "smoke"
# Free disk the build needs (docs/deployment.md "Disk"), measured from an empty store with every image built as CI
# builds them (LAYERS=false): podman writes each layer into the store and twice more as temporary copies in its
# ImageCopyTmpDir (TMPDIR). On one file system the peak was 6.7 GB above the start; with the copies on another (CI
# puts them in RAM), 3.9-4.4 GB where the images are kept and 2.1 GB where the copies go. A CI machine with 5.7 GB free
# failed here, and one with less failed deep in the gateway's build ("no space left on device").
ROOM_GB = {"one": 7.0, "store": 5.0, "copies": 2.5}
BUILD_ROOM_GB = os.environ.get("BUILD_ROOM_GB")  # 0 skips the check; another figure replaces the one-disk need
RECOVERY_S = 180.0
MARKERS = {  # what each document holds, searched for after every fault
    "text": "zebrafish-marker",
    "pdf": "axolotl blastema regenerates limbs",
    "docx": "hive inspection warm afternoon",
    "scan": "orchard office visited sites",
    "html": "sourdough starter rye flour",
}


def app_services() -> list[str]:

    return APP_SERVICES


async def job_of(client: Any, body: dict[str, Any], timeout_s: float = 600) -> dict[str, Any]:
    """The tool's answer, or the record of its job once ended (the call outlived the sync wait)."""

    job_id = body.get("job_id")
    if not job_id:
        return body
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        answer = await client.call_tool("get_job_status", {"job_id": job_id})
        job = (answer.structured_content or {}).get("job") or {}
        if job.get("status") in ("completed", "failed", "cancelled"):
            if job["status"] != "completed":
                raise AssertionError(f"job {job_id} ended {job['status']}: {answer.structured_content}")
            return dict(job.get("result") or {})
        await asyncio.sleep(1)
    raise AssertionError(f"job {job_id} did not end within {timeout_s:.0f} s")


def chunks(answer: dict[str, Any]) -> int | None:
    """Chunks written, from a tool's answer (chunks_created) or a job's result (chunks)."""
    value = answer.get("chunks_created", answer.get("chunks"))
    return value if isinstance(value, int) else None


class Checks:
    def __init__(self, smoke: Smoke, url: str) -> None:
        self.smoke = smoke
        self.url = url
        self.ingested: dict[str, dict[str, Any]] = {}

    def client(self, token: str | None = None) -> Any:

        return mcp_client(self.url, self.smoke.token if token is None else token)

    # -- build and containers -----------------------------------------------------------------
    def room(self) -> str:
        """Enough free disk for the build, said before it starts (set BUILD_ROOM_GB=0 to skip the check)."""
        if BUILD_ROOM_GB is not None and float(BUILD_ROOM_GB) == 0:
            return "not checked (BUILD_ROOM_GB=0)"
        store, copies = self.storage_places()
        needs: dict[int, tuple[Path, list[str], float]] = {}  # one entry per file system
        for role, place in (("store", store), ("copies", copies)):
            existing = next(p for p in (place, *place.parents) if p.exists())
            device = existing.stat().st_dev
            if device in needs:  # both on one file system
                one = float(BUILD_ROOM_GB) if BUILD_ROOM_GB is not None else ROOM_GB["one"]
                needs[device] = (existing, [*needs[device][1], str(place)], one)
            else:
                needs[device] = (existing, [str(place)], ROOM_GB[role])
        said, short = [], []
        for existing, where, need in needs.values():
            free = shutil.disk_usage(existing).free / 1e9
            said.append(f"{free:.1f} GB free at {' and '.join(where)} (needs about {need:.1f})")
            if free < need:
                short.append(said[-1])
        if short:
            engine = Path(self.smoke.engine).name
            raise AssertionError(
                f"building every image needs room where {engine} keeps images and where it writes its temporary "
                f"layer copies (TMPDIR, twice each layer); {', '.join(short)}. Free some (`{engine} image prune`; "
                "`podman system reset` removes every image), point TMPDIR at another disk or at RAM with room "
                "(/dev/shm), or build elsewhere; BUILD_ROOM_GB=0 skips this check"
            )
        return ", ".join(said)

    def storage_places(self) -> tuple[Path, Path]:
        """Where the engine keeps images, and where (podman) it writes a layer's temporary copies as it commits it."""
        wanted = "{{.Store.GraphRoot}}\n{{.Store.ImageCopyTmpDir}}" if self.smoke.podman else "{{.DockerRootDir}}"
        answer = subprocess.run([self.smoke.engine, "info", "--format", wanted], env=self.smoke.env,
                                capture_output=True, text=True, check=False)  # fmt: skip
        places = [Path(line.strip()) for line in answer.stdout.splitlines() if line.strip().startswith("/")]
        store = places[0] if places else Path("/var/lib/containers" if self.smoke.podman else "/var/lib/docker")
        if not self.smoke.podman:  # docker's daemon writes its copies under its own root, whatever TMPDIR says
            return store, store
        return store, places[1] if len(places) > 1 else Path(self.smoke.env.get("TMPDIR") or "/var/tmp")

    def build(self) -> str:
        env = {**self.smoke.env, "ENGINE": self.smoke.engine}
        result = subprocess.run([str(REPO / "scripts" / "build_images.sh")], env=env, capture_output=True, text=True,
                                timeout=3600)  # fmt: skip
        if result.returncode != 0:
            raise AssertionError(f"build_images.sh exited {result.returncode}: {result.stderr[-3000:]}")
        lines = [line.removeprefix("build_images: ") for line in result.stdout.splitlines() if "build_images:" in line]
        print("\n".join(lines))
        return "; ".join(" ".join(line.split()) for line in lines if " MB " in line)

    def containers(self) -> str:

        for service in app_services():
            uid = self.smoke.exec(service, "id", "-u").stdout.strip()
            assert uid == APP_UID, f"{service} runs as uid {uid}, not {APP_UID}"
            probe = self.smoke.exec(service, "sh", "-c", "touch /opt/probe /probe", check=False)
            assert probe.returncode != 0 and "Read-only" in probe.stderr, f"{service}: root filesystem writable"
            torch = self.smoke.exec(
                service, "python", "-c", "import importlib.util as u; print(bool(u.find_spec('torch')))"
            )
            assert torch.stdout.strip() == "False", f"{service} carries torch"
        return f"uid {APP_UID}, read-only root, no torch in {len(app_services())} app containers"

    def no_copy_up(self) -> str:
        """The gateway image under Docker's and Kubernetes' mount semantics: an empty tmpfs over /home/app (podman
        copies the image's files into a tmpfs, Docker and an emptyDir do not; `notmpcopyup` turns podman's copy
        off). Before (issue 27) the ONNX export lived under /home/app/.cache: every start exported the model again
        (ready in 11.7 s, 930 MB). Now it starts torch-free from the export baked under /opt/models."""
        image = f"{os.environ.get('IMAGE_REGISTRY', 'localhost')}/ingestion/vector-gateway:" \
                f"{os.environ.get('IMAGE_TAG', '0.1.0')}"  # fmt: skip
        name = f"{self.smoke.project}-nocopyup"
        tmpfs = "/home/app:notmpcopyup" if self.smoke.podman else "/home/app"

        run([self.smoke.engine, "run", "-d", "--name", name, "--read-only", "--tmpfs", "/tmp", "--tmpfs", tmpfs,
             "--user", f"{APP_UID}:0", "--cap-drop", "ALL", "-e", "VECTOR_GATEWAY_MILVUS_URI=/tmp/milvus.db", image],
            env=self.smoke.env)  # fmt: skip
        try:
            started = time.monotonic()
            while time.monotonic() - started < 120:
                probe = run([self.smoke.engine, "exec", name, "python", "-c",
                             "import urllib.request as u; u.urlopen('http://127.0.0.1:8003/readyz', timeout=4)"],
                            env=self.smoke.env, check=False)  # fmt: skip
                if probe.returncode == 0:
                    break
                time.sleep(0.5)
            else:
                raise AssertionError("the gateway was not ready within 120 s")
            ready_s = time.monotonic() - started
            logs = run([self.smoke.engine, "logs", name], env=self.smoke.env, check=False)
            text = logs.stdout + logs.stderr
            assert "torch-free" in text and "exporting the embedding model" not in text, text[-2000:]
            home = run([self.smoke.engine, "exec", name, "find", "/home/app", "-name", "*.onnx"], env=self.smoke.env)
            assert not home.stdout.strip(), f"an export was written under /home/app: {home.stdout}"
        finally:
            run([self.smoke.engine, "rm", "-f", name], env=self.smoke.env, check=False)
        return f"ready in {ready_s:.1f} s, torch-free from the baked export, nothing written under /home/app"

    # -- MCP ----------------------------------------------------------------------------------
    async def ingest(self) -> str:

        text = (
            f"The {MARKERS['text']} protocol describes how the ingestion pipeline converts documents, splits "
            "them into windows and stores dense and BM25 vectors, so hybrid search finds this paragraph."
        )
        async with self.client() as client:
            tools = {tool.name for tool in (await client.list_tools()).tools}
            assert {"ingest_text", "ingest_document", "search", "get_job_status"} <= tools, sorted(tools)
            answer = await succeeded(
                client, "ingest_text", {"text": text, "name": "smoke-note", "collection": COLLECTION}
            )
            self.ingested["text"] = await job_of(client, answer)
            for kind, name in (("pdf", "sample.pdf"), ("scan", "scan.pdf"), ("docx", "sample.docx"),
                               ("html", "sample.html")):  # fmt: skip
                answer = await succeeded(client, "ingest_document", {
                    "file_path": f"/data/documents/{name}", "collection": COLLECTION, "response_format": "detailed",
                })  # fmt: skip
                self.ingested[kind] = await job_of(client, answer)
        counts = {kind: chunks(body) for kind, body in self.ingested.items()}
        assert all(isinstance(n, int) and n > 0 for n in counts.values()), counts
        return ", ".join(f"{kind} {n} chunks" for kind, n in counts.items())

    async def found_everything(self, client: Any) -> None:

        for kind, query in MARKERS.items():
            hits = await search_hits(client, query, collection=COLLECTION)
            assert hits, f"nothing found for {kind} ({query!r})"
            expected = self.ingested[kind].get("doc_id")
            # Found, not necessarily first: the long scans the job steps ingest share the memo's office words, and
            # which of them ranks first depends on how each is chunked.
            if expected:
                found = [hit["source"] for hit in hits]
                assert expected in {hit["doc_id"] for hit in hits}, f"{kind}: the ingested one is not among {found}"
            assert len({(h["doc_id"], h["chunk_index"]) for h in hits}) == len(hits), f"{kind}: duplicated hits"

    async def search(self) -> str:
        import httpx2

        async with self.client() as client:
            await self.found_everything(client)
            hits = await search_hits(client, "axolotl Ambystoma mexicanum blastema", collection=COLLECTION)
            assert hits[0]["source"].endswith("sample.pdf") and hits[0]["page"] == 2, hits[0]
        async with httpx2.AsyncClient(timeout=30) as anonymous:
            response = await anonymous.post(self.url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
            assert response.status_code == 401, f"no token: {response.status_code}"
        return "PDF passage cited on page 2; every document found; no token -> 401"

    async def _job_under_fault(self, file_name: str, fault: Any) -> str:
        """Ingest ``file_name`` as a job; once a worker is converting it, ``fault()`` (stop or kill the worker, then
        start it); the job must end completed, its document listed once and searchable."""

        async with self.client() as client:
            answer = await succeeded(client, "ingest_document", {
                "file_path": f"/data/documents/{file_name}", "collection": COLLECTION, "response_format": "detailed",
            })  # fmt: skip
            job_id = answer.get("job_id")
            assert job_id, f"{file_name} finished within the sync wait: {answer}"
            deadline = time.monotonic() + 120
            job: dict[str, Any] = {}
            while time.monotonic() < deadline:  # until a worker has claimed it and works on it
                job = (await succeeded(client, "get_job_status", {"job_id": job_id}))["job"]
                if job["status"] != "running" or job["current_step"].startswith("converting page"):
                    break
                await asyncio.sleep(0.3)
            assert job["status"] == "running", f"the job ended before the fault: {job}"
            step = job["current_step"]
            started = time.monotonic()
            fault()
            fault_s = time.monotonic() - started
            result = await job_of(client, {"job_id": job_id}, timeout_s=600)
            ended_s = time.monotonic() - started
            stem = file_name.removesuffix(".pdf")
            hits = await search_hits(client, "orchard office visited", collection=COLLECTION)
            assert any(h["source"].endswith(file_name) for h in hits) or chunks(result), f"{file_name} not searchable"
            listed = await succeeded(
                client, "list_documents", {"collection": COLLECTION, "response_format": "detailed"}
            )
            names = [str(d.get("source") or d.get("name") or "") for d in listed.get("documents") or []]
            copies = sum(1 for n in names if n.endswith(file_name))
            assert copies == 1, f"{file_name} listed {copies} times: {names}"
        return (f"{stem}: fault at '{step}' ({fault_s:.0f} s), job completed {ended_s:.0f} s after it, once, "
                f"{chunks(result)} chunks")  # fmt: skip

    async def worker_restart(self) -> str:
        def stop_start() -> None:  # SIGTERM: running jobs get INGESTION_MCP_JOB_GRACE_S, then go back on the queue
            self.smoke.compose("stop", "ingestion-worker")
            self.smoke.compose("start", "ingestion-worker")

        return await self._job_under_fault("long-scan.pdf", stop_start)

    async def worker_kill(self) -> str:
        def kill_start() -> None:  # SIGKILL: the job's lease runs out and the restarted worker runs it again
            run_kill = [self.smoke.engine, "kill", "--signal", "KILL", self.smoke.container("ingestion-worker")]
            subprocess.run(run_kill, env=self.smoke.env, check=True, capture_output=True, timeout=60)
            self.smoke.compose("start", "ingestion-worker")

        return await self._job_under_fault("long-scan-2.pdf", kill_start)

    async def restart(self, service: str) -> str:

        self.smoke.compose("restart", service)
        started = time.monotonic()
        last: Exception | None = None
        while time.monotonic() - started < RECOVERY_S:
            try:
                async with self.client() as client:
                    await self.found_everything(client)
                    if service == "redis":  # the queue again: a new ingest runs through it to the worker
                        marker = f"after-redis-{uuid.uuid4().hex[:6]}"
                        answer = await succeeded(client, "ingest_text", {
                            "text": f"The {marker} note was written after Redis restarted.", "name": marker,
                            "collection": COLLECTION,
                        })  # fmt: skip
                        await job_of(client, answer)
                break
            except Exception as exc:  # noqa: BLE001 - retried until RECOVERY_S
                last = exc
                await asyncio.sleep(2)
        else:
            raise AssertionError(f"not answering {RECOVERY_S:.0f} s after restarting {service}: {innermost(last)}")
        return f"answering again after {time.monotonic() - started:.1f} s; every document found once"

    # -- OAuth --------------------------------------------------------------------------------
    async def watched_folder(self) -> str:
        """sync_folder(watch=true) on the documents volume: the sync runs on the worker, the watch in the MCP
        container; a file edited and one deleted on the host are followed without another call."""

        folder = self.smoke.documents / "synced"
        folder.mkdir(mode=0o755, exist_ok=True)
        files = {"heron.md": "# Heron\n\nA grey heron waits in the reed bed for sticklebacks.\n",
                 "otter.md": "# Otter\n\nOtter spraint on the footbridge marks its territory.\n"}  # fmt: skip
        for name, text in files.items():
            (folder / name).write_text(text)
            (folder / name).chmod(0o644)
        where = {"folder": "/data/documents/synced", "collection": "smoke_sync"}
        async with self.client() as client:
            first = await job_of(client, await succeeded(client, "sync_folder", {**where, "watch": True}))
            assert first["counts"]["added"] == 2 and first["counts"]["failed"] == 0, first
            (folder / "heron.md").write_text("# Heron\n\nThe heron flew off with a wriggling eel at dusk.\n")
            started = time.monotonic()
            while not any(
                "eel" in h["text"] for h in await search_hits(client, "heron with an eel", collection="smoke_sync")
            ):
                assert time.monotonic() - started < 90, "the edit on the host was not synced within 90 s"
                await asyncio.sleep(0.5)
            edit_s = time.monotonic() - started
            (folder / "otter.md").unlink()
            while True:
                listed = await succeeded(client, "list_documents", {"collection": "smoke_sync", "limit": 10})
                if [d["source"] for d in listed["documents"]] == ["heron.md"]:
                    break
                assert time.monotonic() - started < 180, f"the deleted file was not pruned: {listed}"
                await asyncio.sleep(0.5)
            shown = await succeeded(client, "get_collections", {"collection": "smoke_sync"})
            assert shown["synced_folders"][0]["watched"] is True, shown
            await succeeded(client, "sync_folder", {**where, "watch": False})
        return f"2 files synced by the worker; a host edit searchable in {edit_s:.1f} s; a host deletion pruned"

    async def oauth(self) -> str:
        import httpx2

        from scripts.token_kit import Issuer

        issuer, audience = "https://issuer.smoke.test/realms/team", self.url
        tokens = Issuer(issuer, audience)
        tokens.keys.write_jwks(self.smoke.documents / "jwks.json")  # mounted at /data/documents
        oauth_env = {
            "INGESTION_MCP_OAUTH_ISSUER": issuer,
            "INGESTION_MCP_OAUTH_JWKS_FILE": "/data/documents/jwks.json",
            "INGESTION_MCP_OAUTH_AUDIENCE": audience,
            "INGESTION_MCP_ACCESS_POLICY": "/etc/ingestion-mcp/access-policy.toml",
        }
        with self.smoke.env_file.open("a") as env_file:
            env_file.write("".join(f"{k}={v}\n" for k, v in oauth_env.items()))
        self.smoke.env.update(oauth_env)
        self.smoke.compose("up", "-d", "--force-recreate", "--no-deps", "ingestion-mcp")
        self.smoke.wait_healthy(["ingestion-mcp"], timeout_s=180)

        token = tokens.token
        reader = token("reader", scope="ingestion:read")
        nobody = token("nobody", scope="profile")
        async with self.client(reader) as client:
            hits = await search_hits(client, MARKERS["pdf"], collection=COLLECTION)
            assert hits and hits[0]["source"].endswith("sample.pdf"), "the reader cannot read the collection"
            answer = await client.call_tool(
                "ingest_text", {"text": "not allowed", "name": "x", "collection": COLLECTION}
            )
            assert answer.is_error or (answer.structured_content or {}).get("success") is False, "reader wrote"
        async with self.client(nobody) as client:
            answer = await client.call_tool("search", {"query": MARKERS["pdf"], "collection": COLLECTION})
            body = answer.structured_content or {}
            assert not body.get("results"), f"a caller without rights read {COLLECTION}: {body}"
        async with httpx2.AsyncClient(timeout=30) as http:
            static = await http.post(self.url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                                     headers={"Authorization": f"Bearer {self.smoke.token}"})  # fmt: skip
            assert static.status_code == 401, f"the static token opened /mcp in OAuth mode: {static.status_code}"
            forged = token("reader", scope="ingestion:read")[:-4] + "AAAA"
            refused = await http.post(self.url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                                      headers={"Authorization": f"Bearer {forged}"})  # fmt: skip
            assert refused.status_code == 401, f"a forged signature got {refused.status_code}"
        return "reader reads, cannot write; no rights -> nothing; static token and forged signature -> 401"


def innermost(error: BaseException | None) -> str:
    """The first leaf of an exception group (an MCP client's task group wraps the real cause), with its type."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return f"{type(error).__name__}: {error}" if error is not None else "no attempt finished"
