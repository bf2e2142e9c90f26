"""`hf_vaswani.runtime.keep_freed_memory`: glibc keeps freed memory instead of page-faulting it in again."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc", reason="glibc's allocator only"
)

# 64 blocks of 1 MB allocated, touched and freed, four times: glibc's defaults hand the freed heap back to the
# system and the next round faults its pages in again.
_PROGRAM = """
import json, resource, sys
import torch
from hf_vaswani.runtime import keep_freed_memory
applied = keep_freed_memory() if sys.argv[1] == "keep" else None
counts = []
for _ in range(4):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    blocks = [torch.ones(256 * 1024) for _ in range(64)]
    del blocks
    counts.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
print(json.dumps({"applied": applied, "faults": counts}))
"""


def _run(mode: str, **environment: str) -> dict:
    env = {name: value for name, value in os.environ.items() if not name.startswith("MALLOC_")}
    env.pop("GLIBC_TUNABLES", None)
    env.update(environment)
    done = subprocess.run(
        [sys.executable, "-c", _PROGRAM, mode], env=env, capture_output=True, text=True, check=True, timeout=120
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_keeping_freed_memory_stops_the_page_faults_of_reallocation():
    default, kept = _run("plain"), _run("keep")
    assert kept["applied"] is True
    # The first round faults in both (new memory); the second reuses the kept heap.
    assert kept["faults"][1] * 4 < default["faults"][1], (default, kept)


@pytest.mark.parametrize(
    "environment", [{"HF_VASWANI_KEEP_FREED_MEMORY": "0"}, {"MALLOC_ARENA_MAX": "2"}], ids=["opt-out", "user-tunables"]
)
def test_keeping_freed_memory_respects_the_environment(environment):
    assert _run("keep", **environment)["applied"] is False
