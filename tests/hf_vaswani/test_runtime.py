"""`hf_vaswani.runtime.keep_freed_memory`: glibc keeps freed memory instead of page-faulting it in again."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

import pytest

from tests.helpers import PROCESS_TIMEOUT

# Slow as a whole (tests/README.md, the fast lane): each test measures a process
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc", reason="glibc's allocator only"
    ),
]

# 64 blocks of 1 MB allocated, touched and freed, four times: with freed memory kept, the rounds after the first
# reuse the heap the first one faulted in.
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
        [sys.executable, "-c", _PROGRAM, mode],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=PROCESS_TIMEOUT,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_keeping_freed_memory_stops_the_page_faults_of_reallocation():
    # glibc's defaults are not compared: whether they hand the freed heap back, so that later rounds fault again,
    # depends on where the import's small allocations happened to land (measured: every round in some processes,
    # hardly at all in others). The settings must give reuse in every process: two runs, so that a setting that
    # did nothing would have to hit the lucky case twice.
    for _ in range(2):
        kept = _run("keep")
        assert kept["applied"] is True
        # The first round faults (new memory); the later ones reuse the kept heap.
        assert max(kept["faults"][1:]) * 4 < kept["faults"][0], kept


@pytest.mark.parametrize(
    "environment", [{"HF_VASWANI_KEEP_FREED_MEMORY": "0"}, {"MALLOC_ARENA_MAX": "2"}], ids=["opt-out", "user-tunables"]
)
def test_keeping_freed_memory_respects_the_environment(environment):
    assert _run("keep", **environment)["applied"] is False
