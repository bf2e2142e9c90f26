"""The GPU benchmark runs once, on borrowed hardware with little time: its whole path is checked here on the CPU."""

import json
import os
import subprocess
import sys
from pathlib import Path

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
