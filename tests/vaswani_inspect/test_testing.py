"""`vaswani_inspect.testing`: the tiny tokenizer gives the same ids in every process (its tiny random model, and so
every output a test or benchmark compares across runs, depends on them)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.helpers import PROCESS_TIMEOUT, ROOT

_VOCABULARY_HASH = (
    "import hashlib, json; from vaswani_inspect.testing import tiny_tokenizer; "
    "print(hashlib.md5(json.dumps(sorted(tiny_tokenizer().get_vocab().items())).encode()).hexdigest())"
)


@pytest.mark.slow
def test_the_tiny_tokenizer_has_the_same_ids_in_every_process():
    hashes = {
        subprocess.run(
            [sys.executable, "-c", _VOCABULARY_HASH], capture_output=True, text=True, cwd=ROOT, timeout=PROCESS_TIMEOUT
        ).stdout.strip()
        for _ in range(3)
    }
    assert len(hashes) == 1 and "" not in hashes, hashes
