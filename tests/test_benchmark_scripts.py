"""Benchmark scripts that tests can run end to end: the GPU benchmark (it runs once, on borrowed hardware with little
time, so its whole path is checked here on the CPU) and the operator profile of ours vs Marian."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import transformers

ROOT = Path(__file__).resolve().parent.parent


def test_gpu_device_script_runs_gpu_py_and_writes_its_results_to_out(tmp_path):
    environment = {
        **os.environ,
        "PYTHON": sys.executable,
        "OUT": str(tmp_path),
        "GPU_ARGS": "--device cpu --smoke --modes eager",
        "GPU_WHEELS": str(tmp_path / "no-wheels"),  # wheels fetched for the GPU machine's Python are not for ours
    }
    completed = subprocess.run(
        ["bash", "benchmarks/gpu_device.sh", "run"],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert f"transformers {transformers.__version__}" in completed.stdout  # versions first, then the benchmark
    results = json.loads((tmp_path / "gpu.json").read_text())
    assert results["device"] == "cpu" and set(results["results"]) == {"eager"}
    eager = results["results"]["eager"]
    assert eager["tokens_per_s"] > 0 and len(eager["step_s_all"]) == results["settings"]["steps"]
    assert "| eager |" in (tmp_path / "gpu.log").read_text()


def test_gpu_device_script_refuses_an_unknown_step():
    completed = subprocess.run(
        ["bash", "benchmarks/gpu_device.sh", "train"], cwd=ROOT, capture_output=True, text=True, timeout=30
    )
    assert completed.returncode == 2 and "usage: bash benchmarks/gpu_device.sh fetch|run" in completed.stderr


def _profile_ops(*arguments: str) -> str:
    completed = subprocess.run(
        [sys.executable, "benchmarks/profile_ops.py", "--size", "tiny", "--calls", "1", "--warmup", "1", *arguments],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    return completed.stdout


def _table_rows(output: str) -> dict[str, list[str]]:
    rows = [line.strip("| ").split(" | ") for line in output.splitlines() if line.startswith("| ")]
    return {cells[0]: cells[1:] for cells in rows[2:]}  # header and rule first


def test_profile_ops_puts_both_models_training_operators_side_by_side():
    output = _profile_ops("--precision", "fp32", "--rows", "40")
    assert "tiny dims, fp32, training step; Marian with eager attention" in output
    rows = _table_rows(output)
    # Our loss is its own autograd Function; Marian's is cross-entropy's log-softmax backward.
    ours_ms, ours_calls, marian_ms, marian_calls, _ = rows["_LabelSmoothedCrossEntropySum"]
    assert float(ours_ms) > 0 and ours_calls == "1" and marian_calls == "0"
    assert rows["aten::_log_softmax_backward_data"][1] == "0" and float(rows["aten::_log_softmax_backward_data"][2]) > 0
    ours_mm, _, marian_mm, _, ratio = rows["aten::mm"]
    assert float(ratio) == pytest.approx(float(marian_mm) / float(ours_mm), rel=0.05)


def test_profile_ops_by_shape_separates_generate_operators_by_input_shapes():
    output = _profile_ops("--mode", "beam4", "--by-shape", "--rows", "60")
    assert "tiny dims, fp32, generate() beam4" in output
    rows = _table_rows(output)
    # Beam search over 32 sentences x 4 beams: the (128, vocabulary) scores, for both models.
    scores = [name for name in rows if name.startswith("aten::_log_softmax [[128, 8000]]")]
    assert scores and all(rows[name][1] == "24" and rows[name][3] == "24" for name in scores)


def test_profile_ops_rejects_zero_calls():
    completed = subprocess.run(
        [sys.executable, "benchmarks/profile_ops.py", "--calls", "0"], cwd=ROOT, capture_output=True, text=True
    )
    assert completed.returncode == 2 and "--calls and --rows must be >= 1" in completed.stderr
