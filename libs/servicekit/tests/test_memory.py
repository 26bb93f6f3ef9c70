"""give_back_free_memory returns the C heap's free pages to the system (glibc's malloc_trim)."""

from __future__ import annotations

import json
import platform
import subprocess
import sys

import pytest

# A fresh process: 400 MB of 4 KB buffers, every 64th kept (so the heap's top is never free and malloc cannot
# shrink it by itself), the rest freed; resident MiB after the free and after the call.
FRAGMENTED = """
import json
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
