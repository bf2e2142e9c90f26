"""Benchmark scripts run end to end on tiny dimensions, never timed: the GPU benchmark (it runs once, on borrowed
hardware with little time, so its whole path is checked here on the CPU), the comparison with Marian and the
operator profile."""

import json
import os
import subprocess
import sys

import pytest
import transformers

from tests.helpers import ROOT


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
    ours_ms, ours_calls, marian_ms, marian_calls, _ = rows["_LabelSmoothedCrossEntropy"]
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


def test_bench_vs_marian_compares_twins_that_compute_the_same_function(tmp_path):
    """The main CPU benchmark end to end on tiny dims: both Marian twins carry our weights, give our logits and
    generate our tokens (what makes its ratios a comparison of implementations), and the goal table reports only
    what ran."""
    completed = subprocess.run(
        [sys.executable, "benchmarks/bench_vs_marian.py", "--quick", "--sizes", "tiny", "--precisions", "fp32"]
        + ["--threads", "1", "--json", str(tmp_path / "vs_marian")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    results = json.loads((tmp_path / "vs_marian.json").read_text())
    (train,) = results["train"]
    assert train["size"] == "tiny" and train["precision"] == "fp32"
    assert train["max_logit_difference"]["marian_sdpa"] == 0.0
    assert train["max_logit_difference"]["marian_eager"] < 1e-4
    assert set(train["contenders"]) == {"ours", "marian_sdpa", "marian_eager"} and train["speedup_vs_best_marian"] > 0
    (generate,) = results["generate"]
    assert set(generate["modes"]) == {"greedy", "beam4", "latency_1_sentence"}
    assert all(mode["same_tokens"] for mode in generate["modes"].values())
    measured = {goal["goal"]: goal["value"] for goal in results["goals"]}
    assert measured["generate sentences/s ours / best Marian, tiny, beam4"] > 0
    assert measured["training tokens/s ours / best Marian, base, fp32"] is None  # base was not run
    assert "| base | fp32 |" not in completed.stdout and "not run" in completed.stdout
