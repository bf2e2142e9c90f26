"""Benchmark scripts run end to end on tiny dimensions, never timed: the GPU benchmark (it runs once, on borrowed
hardware with little time, so its whole path is checked here on the CPU), the comparison with Marian, the operator
profile, the two kernel ablations (the replacement reaches the model) and the report of `run_all`."""

import importlib
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import transformers

from hf_vaswani import kernels_vaswani, modeling_vaswani
from tests.helpers import PROCESS_TIMEOUT, ROOT

# Slow as a whole (tests/README.md, the fast lane): runs benchmark scripts in processes
pytestmark = pytest.mark.slow


def _benchmark_module(monkeypatch: pytest.MonkeyPatch, name: str):
    """A script of benchmarks/ imported as a module (they import `perf_common` from their own folder)."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    return importlib.import_module(name)


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
        timeout=PROCESS_TIMEOUT,
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
        timeout=PROCESS_TIMEOUT,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    return completed.stdout


def _table_rows(output: str) -> dict[str, list[str]]:
    rows = [line.strip("| ").split(" | ") for line in output.splitlines() if line.startswith("| ")]
    return {cells[0]: cells[1:] for cells in rows[2:]}  # header and rule first


def test_profile_ops_puts_both_models_training_operators_side_by_side():
    output = _profile_ops("--precision", "fp32", "--rows", "40")
    assert "tiny dims, fp32, training step; both models with sdpa attention" in output
    rows = _table_rows(output)
    # Our loss is its own autograd Function; Marian's is cross-entropy's log-softmax backward.
    ours_ms, ours_calls, marian_ms, marian_calls, _ = rows["_LabelSmoothedCrossEntropy"]
    assert float(ours_ms) > 0 and ours_calls == "1" and marian_calls == "0"
    assert rows["aten::_log_softmax_backward_data"][1] == "0" and float(rows["aten::_log_softmax_backward_data"][2]) > 0
    ours_mm, _, marian_mm, _, ratio = rows["aten::mm"]
    assert float(ratio) == pytest.approx(float(marian_mm) / float(ours_mm), rel=0.05)


def test_profile_ops_by_shape_separates_generate_operators_by_input_shapes():
    output = _profile_ops("--mode", "beam4", "--by-shape", "--rows", "60")
    assert "tiny dims, fp32, generate() beam4; both models with sdpa attention" in output
    rows = _table_rows(output)
    # Beam search over 32 sentences x 4 beams: the (128, vocabulary) scores, for both models.
    scores = [name for name in rows if name.startswith("aten::_log_softmax [[128, 8000]]")]
    assert scores and all(rows[name][1] == "24" and rows[name][3] == "24" for name in scores)


def _refused_arguments(monkeypatch, capsys, script: str, *arguments: str) -> str:
    """The error message of the script's `main(arguments)`, run in-process (each script runs as a real process in
    the test of its work: this spares one more process importing torch for an argument check); fails unless it
    exits with status 2."""
    main = _benchmark_module(monkeypatch, script).main
    with pytest.raises(SystemExit) as exited:
        main(list(arguments))
    assert exited.value.code == 2
    return capsys.readouterr().err


def test_profile_ops_rejects_zero_calls(monkeypatch, capsys):
    assert "--calls and --rows must be >= 1" in _refused_arguments(monkeypatch, capsys, "profile_ops", "--calls", "0")


def test_bench_vs_marian_compares_twins_that_compute_the_same_function(tmp_path):
    """The main CPU benchmark end to end on tiny dims: ours and Marian, each with sdpa and eager attention, carry the
    same weights, give the same logits and generate the same tokens (what makes its ratios a comparison of
    implementations); the ratios say how much faster ours is; the goal table reports only what ran."""
    completed = subprocess.run(
        [sys.executable, "benchmarks/bench_vs_marian.py", "--quick", "--sizes", "tiny", "--precisions", "fp32"]
        + ["--threads", "1", "--json", str(tmp_path / "vs_marian")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=PROCESS_TIMEOUT,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    results = json.loads((tmp_path / "vs_marian.json").read_text())
    (train,) = results["train"]
    assert train["size"] == "tiny" and train["precision"] == "fp32"
    contenders = {"ours_sdpa", "ours_eager", "marian_sdpa", "marian_eager"}
    assert set(train["contenders"]) == contenders
    differences = train["max_logit_difference"]  # from ours_sdpa
    assert differences["marian_sdpa"] == 0.0  # the same kernels on the same weights
    assert differences["ours_eager"] < 1e-4 and differences["marian_eager"] < 1e-4
    # Speed ratios: Marian's time / ours, per round, median; "best" pairs each model's faster implementation.
    times = {name: train["contenders"][name]["step_s_all"] for name in contenders}
    same_attention = statistics.median(m / o for m, o in zip(times["marian_sdpa"], times["ours_sdpa"]))
    assert train["ours_over_marian"]["sdpa"] == pytest.approx(same_attention)
    assert train["best_ours"] == min(("ours_sdpa", "ours_eager"), key=lambda name: statistics.median(times[name]))
    (generate,) = results["generate"]
    assert set(generate["modes"]) == {"greedy", "beam4", "latency_1_sentence"}
    assert all(mode["same_tokens"] for mode in generate["modes"].values())
    assert all(set(mode["contenders"]) == contenders for mode in generate["modes"].values())
    measured = {goal["goal"]: goal["value"] for goal in results["goals"]}
    assert measured["generate() speed, tiny, beam4"] == generate["modes"]["beam4"]["ours_over_marian"]["best"] > 0
    assert measured["training tokens/s, base, fp32"] is None  # base was not run
    assert measured["training tokens/s, tiny, bf16"] is None  # nor bf16
    assert "| base | fp32 |" not in completed.stdout and "not run" in completed.stdout


def test_bench_vs_marian_rejects_an_unknown_size(monkeypatch, capsys):
    err = _refused_arguments(monkeypatch, capsys, "bench_vs_marian", "--sizes", "huge")
    assert "unknown sizes or precisions ['huge']" in err


def _training_loss(model: torch.nn.Module, batch: dict) -> torch.Tensor:
    torch.manual_seed(0)
    return model(**batch).loss


def test_bench_dropout_replaces_the_dropout_the_model_calls(monkeypatch):
    """The model looks its kernels up in `modeling_vaswani`: the ablation must replace them there, or it would time
    the shipped kernel against itself."""
    bench_dropout = _benchmark_module(monkeypatch, "bench_dropout")
    perf_common = _benchmark_module(monkeypatch, "perf_common")
    model = perf_common.build_models("tiny", ("ours_sdpa",))["ours_sdpa"].train()
    batch = perf_common.make_batch(4, 8, 8, model.config.vocab_size)
    try:
        bench_dropout._use("torch_dropout")
        replaced = _training_loss(model, batch)
    finally:
        bench_dropout._use("ours")
    assert modeling_vaswani.dropout is kernels_vaswani.dropout  # restored
    shipped = _training_loss(model, batch)
    # Same seed, other masks: F.dropout draws one random number per element, the kernel one per two.
    assert not torch.equal(replaced, shipped) and torch.equal(shipped, _training_loss(model, batch))


def test_bench_loss_replaces_the_loss_the_model_calls_with_the_same_function(monkeypatch):
    bench_loss = _benchmark_module(monkeypatch, "bench_loss")
    perf_common = _benchmark_module(monkeypatch, "perf_common")
    model = perf_common.build_models("tiny", ("ours_sdpa",))["ours_sdpa"].eval()  # no dropout: the same logits
    batch = perf_common.make_batch(4, 8, 8, model.config.vocab_size)
    try:
        bench_loss._use("torch_cross_entropy")
        replaced = _training_loss(model, batch)
    finally:
        bench_loss._use("ours")
    assert modeling_vaswani.label_smoothed_cross_entropy is kernels_vaswani.label_smoothed_cross_entropy
    shipped = _training_loss(model, batch)
    assert type(shipped.grad_fn).__name__ == "_LabelSmoothedCrossEntropyBackward"
    assert type(replaced.grad_fn).__name__ != type(shipped.grad_fn).__name__  # autograd through F.cross_entropy
    assert replaced.item() == pytest.approx(shipped.item(), rel=1e-5)


def test_run_all_report_names_a_results_file_it_cannot_read(monkeypatch, tmp_path):
    run_all = _benchmark_module(monkeypatch, "run_all")
    monkeypatch.setattr(run_all, "RESULTS_DIR", tmp_path)
    (tmp_path / "dropout.json").write_text(json.dumps({"machine": {"date": "2026-01-01 00:00 UTC"}, "rows": [{}]}))
    machine = {"cpu": "test CPU", "isa": [], "cores": 2, "python": "3", "torch": "2", "transformers": "5"}
    run = {"machine": {**machine, "date": "today"}, "loadavg_start": [1.0] * 3, "loadavg_end": [1.0] * 3}
    text = run_all.report({**run, "threads": 1})
    assert "`benchmarks/results/dropout.json` (2026-01-01 00:00 UTC) is not in the format of the current " in text
    assert "`bench_dropout.py`: re-run it." in text
    assert "## Ours vs MarianMTModel" not in text and "Not run: there is no `benchmarks/results/gpu.json`" in text


def test_bench_inspect_help():
    completed = subprocess.run(
        [sys.executable, "benchmarks/bench_inspect.py", "--help"], cwd=ROOT, capture_output=True, text=True
    )
    assert completed.returncode == 0 and "usage: bench_inspect.py" in completed.stdout


def _bench_demo(tmp_path: Path, *arguments: str) -> tuple[str, dict]:
    """(stdout, JSON report) of bench_demo.py on a tiny random model translated by PyTorch, two calls of each kind."""
    pytest.importorskip("gradio")
    out = tmp_path / "demo.json"
    common = ["--tiny", "--backend", "torch", "--sequential", "2", "--out", str(out)]
    completed = subprocess.run(
        [sys.executable, "benchmarks/bench_demo.py", *common, *arguments],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=PROCESS_TIMEOUT,
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    return completed.stdout, json.loads(out.read_text())


def test_bench_demo_times_the_demo_and_gradio_alone(tmp_path):
    stdout, report = _bench_demo(tmp_path, "--concurrent", "2", "--warmup", "0", "--max-new-tokens", "4")
    assert report["tiny_random_model"] and report["translation_backend"] == "torch"
    assert report["sequential"]["calls"] == report["complete"]["calls"] == report["gradio_floor"]["calls"] == 2
    assert report["complete"]["endpoints"] == ["/translate", "/alignment", "/view", "/record"]
    assert report["gradio_floor"]["end_to_end"]["p50_ms"] > 0
    assert "echo endpoint, end to end" in stdout and "complete request, end to end" in stdout
    assert "browser" not in report


@pytest.mark.browser
@pytest.mark.skipif(not Path("/usr/bin/chromium").exists(), reason="Debian chromium is not installed")
def test_bench_demo_times_the_page_in_a_browser(tmp_path):
    pytest.importorskip("playwright")
    stdout, report = _bench_demo(tmp_path, "--concurrent", "1", "--warmup", "1", "--no-floor", "--browser")
    browser = report["browser"]
    assert browser["clicks"] == 2
    shown, everything = browser["raw_s"]["translation"], browser["raw_s"]["everything"]
    assert all(0 < first <= last for first, last in zip(shown, everything))
    assert "browser, everything shown" in stdout
