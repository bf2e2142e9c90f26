"""The demo hands freed memory back to the system (`vaswani_demo.memory`, `hf_vaswani.runtime.release_freed_memory`):
the resident memory that glibc keeps after a request frees it goes back, and the demo's thread does it on a timer.
The numbers over 1,000 requests are `benchmarks/bench_demo_memory.py`'s."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from vaswani_demo.memory import FreedMemoryReleaser

_FREED_AND_RELEASED = """
import json
import numpy as np
from hf_vaswani.runtime import keep_freed_memory, release_freed_memory

def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024

keep_freed_memory()  # as the hf-vaswani commands set it
base = rss()
blocks = [np.ones(2 * 2**20 // 8) for _ in range(150)]  # 300 MiB in blocks under the 32 MiB mmap threshold
del blocks
freed = rss()
released = release_freed_memory()
print(json.dumps({"base": base, "freed": freed, "after": rss(), "released": released}))
"""


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator")
def test_freed_memory_kept_by_the_allocator_goes_back_to_the_system():
    import json

    done = subprocess.run([sys.executable, "-c", _FREED_AND_RELEASED], capture_output=True, text=True, check=True)
    numbers = json.loads(done.stdout)
    assert numbers["released"] is True
    assert numbers["freed"] - numbers["base"] > 200  # freed, but kept by the allocator
    assert numbers["after"] - numbers["base"] < 50, numbers  # handed back


def test_the_releaser_runs_on_its_timer_until_closed(monkeypatch):
    import vaswani_demo.memory as memory

    calls = []
    monkeypatch.setattr(memory, "release_freed_memory", lambda: calls.append(time.monotonic()) or True)
    releaser = FreedMemoryReleaser(interval=0.02)
    deadline = time.monotonic() + 120  # (a few 0.02 s ticks alone; generous for a loaded machine)
    while len(calls) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    releaser.close()
    stopped_at = len(calls)
    assert stopped_at >= 3 and releaser.releases == stopped_at
    time.sleep(0.1)
    assert len(calls) == stopped_at  # closed: no release after close() returned
    with pytest.raises(ValueError, match="interval must be a positive number"):
        FreedMemoryReleaser(interval=0)
