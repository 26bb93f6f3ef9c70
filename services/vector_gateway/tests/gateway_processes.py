"""Gateway replicas as real processes over one `milvus-lite server`: the deployment's shape on loopback.

Each replica is the `vector-gateway` console script (scripts/service_stack.ServiceProcess) with its own model,
locks, write orders and clock, talking to Milvus over gRPC at ``http://127.0.0.1:PORT`` (the server URI path
of the gateway, as against a Milvus standalone). A replica may run under libfaketime with its wall clock
moved (a host whose NTP is off); its monotonic clock stays true.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from scripts.milvus_server import MilvusLiteServer
from scripts.service_stack import SERVICE_URL_NAMES, ServiceProcess
from scripts.system_files import FAKETIME, FAKETIME_DIR

# The MT build serialises libfaketime's own state across threads (uvicorn, gRPC and ONNX Runtime run many).
FAKETIME_LIBS = (FAKETIME_DIR / "libfaketimeMT.so.1", FAKETIME)
NO_FAKETIME = "libfaketime is not installed (Debian package faketime): a replica with a skewed clock cannot be started"


def faketime_library() -> Path | None:
    return next((lib for lib in FAKETIME_LIBS if lib.exists()), None)


def skewed(offset: str) -> dict[str, str]:
    """Environment that moves a process's wall clock by ``offset`` (e.g. "-30s"), not its monotonic clock.

    FAKETIME_FORCE_MONOTONIC_FIX=0: libfaketime 0.9.10 turns that fix on by itself on this glibc, and it then
    rewrites every timed condition wait, although the monotonic clock is not faked: the GIL's 5 ms waits
    convoy (four busy Python threads: 0.65 s -> 3.8 s) and a gateway took 70-220 s instead of 17-25 s to load
    its model. Without it, timed waits (events, locks, queues) keep their length. `time.sleep` fails with
    EINVAL under libfaketime either way: the gateway's code never calls it (pymilvus does, between retries)."""
    library = faketime_library()
    assert library is not None, NO_FAKETIME
    return {
        "LD_PRELOAD": str(library),
        "FAKETIME": offset,
        "FAKETIME_DONT_FAKE_MONOTONIC": "1",
        "FAKETIME_FORCE_MONOTONIC_FIX": "0",
    }


def gateway(name: str, milvus: MilvusLiteServer, workdir: Path, **env: str) -> ServiceProcess:
    """One replica on ``milvus`` (not started). PYTHONPATH passes through: point it at another gateway's src to
    run that code in the replicas."""
    base = {k: v for k, v in os.environ.items() if k not in SERVICE_URL_NAMES and k != "AUTH_TOKEN"}
    base |= {
        "HF_HUB_OFFLINE": "1",
        "VECTOR_GATEWAY_MILVUS_URI": milvus.uri,
        "VECTOR_GATEWAY_EMBEDDING_THREADS": "1",  # several replicas share two cores
        "VECTOR_GATEWAY_LOG_LEVEL": "INFO",
    }
    return ServiceProcess(name, "vector-gateway", "VECTOR_GATEWAY_", base | env, workdir / f"{name}.log")


@contextmanager
def running(*replicas: ServiceProcess) -> Iterator[tuple[ServiceProcess, ...]]:
    """Start the replicas together, wait until each is ready (model loaded, Milvus reached), kill them after."""
    try:
        for replica in replicas:
            replica.start()
        for replica in replicas:
            replica.wait_ready(timeout_s=360)  # models load slowly while other processes compete for the cores
        yield replicas
    finally:
        for replica in replicas:
            replica.stop()


def client(replica: ServiceProcess) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=replica.url, timeout=httpx.Timeout(120.0))
