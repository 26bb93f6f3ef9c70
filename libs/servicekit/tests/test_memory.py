"""give_back_free_memory returns the C heap's free pages to the system (glibc's malloc_trim)."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

import pytest

# A fresh process: 400 MB of 4 KB buffers, every 64th kept (so the heap's top is never free and malloc cannot
# shrink it by itself), the rest freed; resident MiB after the free and after the call.
FRAGMENTED = """
import json
import os
from servicekit import give_back_free_memory

def resident():
    return int(open("/proc/self/statm").read().split()[1]) * 4096 / 2**20

buffers = [bytes(4096) for _ in range(100_000)]
kept = buffers[::64]
del buffers
freed = resident()
trimmed = give_back_free_memory()
print(json.dumps({"freed": freed, "after": resident(), "trimmed": trimmed, "kept": len(kept)}))
"""


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="malloc_trim is glibc's")
def test_free_heap_pages_go_back_to_the_system() -> None:
    done = subprocess.run([sys.executable, "-c", FRAGMENTED], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    memory = json.loads(done.stdout)
    assert memory["trimmed"] is True
    assert memory["freed"] > 300, memory  # freed, yet still resident: malloc keeps it
    assert memory["after"] < memory["freed"] - 250, memory


# A fresh process: eight threads allocate (blocks over pymalloc's 512 bytes go to malloc) and hold on while glibc's
# malloc_stats prints one "Arena N:" block per arena to stderr.
ARENAS = """
import ctypes, os, sys, threading
from servicekit import configure_allocators

done = configure_allocators() if sys.argv[1] == "configured" else {}
barrier = threading.Barrier(9)

def hold():
    kept = [bytes(2048) for _ in range(1000)]
    barrier.wait()
    barrier.wait()

threads = [threading.Thread(target=hold) for _ in range(8)]
for thread in threads:
    thread.start()
barrier.wait()
sys.stderr.flush()
ctypes.CDLL("libc.so.6").malloc_stats()
barrier.wait()
print(done)
"""


def arenas(mode: str, **env: str) -> tuple[int, str]:
    environ = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"} | env
    done = subprocess.run([sys.executable, "-c", ARENAS, mode], capture_output=True, text=True, timeout=120,
                          check=False, env=environ)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stderr.count("Arena "), done.stdout


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="the arena limit is glibc's mallopt")
def test_threads_share_two_malloc_arenas_unless_malloc_arena_max_says() -> None:
    assert arenas("default")[0] > 2  # glibc's own: a new arena for each thread that allocates (8 per core)
    count, done = arenas("configured")
    assert count <= 2, done
    assert "'malloc_arenas': 2" in done
    count, done = arenas("configured", MALLOC_ARENA_MAX="4")  # the operator's limit stands
    assert 2 < count <= 4, done
    assert "malloc_arenas" not in done


POOL = """
import sys
from servicekit import configure_allocators

if sys.argv[1] == "after":
    import pyarrow
print(configure_allocators())
import pyarrow
print(pyarrow.default_memory_pool().backend_name)
"""


@pytest.mark.parametrize("imported", ["before", "after"])
def test_arrow_allocates_from_malloc_unless_a_pool_was_chosen(imported: str) -> None:
    pyarrow = pytest.importorskip("pyarrow")
    chosen = next((pool for pool in pyarrow.supported_memory_backends() if pool != "system"), None)
    if chosen is None:
        pytest.skip("this pyarrow has no pool but malloc's")
    environ = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}

    def backend(**env: str) -> str:
        done = subprocess.run([sys.executable, "-c", POOL, imported], capture_output=True, text=True, timeout=120,
                              check=False, env=environ | env)  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout.split()[-1]

    assert backend() == "system"  # whether pyarrow was imported before the call or after it
    assert backend(ARROW_DEFAULT_MEMORY_POOL=chosen) == chosen  # the operator's choice stands
