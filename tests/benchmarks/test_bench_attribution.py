"""benchmarks/bench_attribution.py end to end on the tiny model and 2 pairs, never timed."""

import json
import subprocess
import sys

import pytest

from tests.helpers import PROCESS_TIMEOUT, ROOT

# Slow as a whole (tests/README.md, the fast lane): runs a benchmark script in a process
pytestmark = pytest.mark.slow


def test_bench_attribution_runs_ours_and_inseq_side_by_side(tmp_path):
    name = str(tmp_path / "attribution")  # an absolute name: the results stay out of benchmarks/results
    completed = subprocess.run(
        [sys.executable, "benchmarks/bench_attribution.py", "--tiny", "--pairs", "2", "--n-steps", "4", "--json", name],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=PROCESS_TIMEOUT,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    results = json.loads((tmp_path / "attribution.json").read_text())
    assert set(results["rows"]) == {"integrated_gradients", "saliency"} and results["settings"]["pairs"] == 2
    for row in results["rows"].values():
        assert row["ours_ms_per_sentence"] > 0 and row["inseq_ms_per_sentence"] > 0
        assert row["pieces_compared"] > 0
        assert row["ours_bfloat16_ms_per_sentence"] > 0 and 0 <= row["bfloat16_top1_agreement_with_float32"] <= 1
        assert row["course_sentence_ms"] is None  # the course sentence is the shipped model's, not the tiny one's
    # Same function, same inputs: saliency must agree on the ranking.
    assert results["rows"]["saliency"]["top1_agreement"] == 1.0
    assert "| saliency |" in completed.stdout
