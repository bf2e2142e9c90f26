"""The training command under ``torchrun`` with 2 CPU processes (DDP, gloo backend): the ranks end with
identical weights, each measured in its own process."""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml

from tests.helpers import PROCESS_TIMEOUT, TINY_CONFIG, training_corpus

HOOKS = Path(__file__).resolve().parent / "fault_hooks"


def _hooks_module():
    spec = importlib.util.spec_from_file_location("hf_vaswani_test_hooks", HOOKS / "sitecustomize.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # without the environment variables it only defines weights_sha256
    return module


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_torchrun_two_cpu_processes_end_with_identical_weights(tmp_path):
    (tmp_path / "pairs.tsv").write_text(training_corpus(), encoding="utf-8")
    config = yaml.safe_load(yaml.safe_dump(TINY_CONFIG))
    config["training"].update(max_steps=6, save_steps=3, eval_steps=3, average_last=0, bf16=False)
    config["model"]["dropout"] = 0.1  # the ranks draw different dropout masks: only DDP keeps them in sync
    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    out, hashes = tmp_path / "run", tmp_path / "hashes"
    hashes.mkdir()
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "HF_HUB_OFFLINE": "1",
        "PYTHONPATH": str(HOOKS),
        "HF_VASWANI_TEST_HASH_DIR": str(hashes),
    }
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node=2",
        "-m",
        "hf_vaswani.cli",
        "train",
        str(tmp_path / "tiny.yaml"),
        "--set",
        f"data.path={tmp_path / 'pairs.tsv'}",
        "--set",
        f"training.output_dir={out}",
    ]
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=PROCESS_TIMEOUT)
    assert result.returncode == 0, result.stderr[-4000:]

    # Only rank 0 prints the summary; it ran as one of 2 processes of one DDP group.
    summary = json.loads(result.stdout[result.stdout.index('{\n  "output_dir"') :])
    assert summary["world_size"] == 2 and summary["global_step"] == 6
    assert result.stdout.count('"output_dir"') == 1
    # Each update took one batch of 16 rows per rank: 6 updates = 192 rows = 1.2 epochs of the 156 rows (one
    # process would be at 0.6), and each rank saved its own RNG state.
    state = json.loads((out / "checkpoint-6" / "trainer_state.json").read_text())
    assert state["epoch"] == pytest.approx(1.2)
    assert {p.name for p in (out / "checkpoint-6").glob("rng_state*.pth")} == {"rng_state_0.pth", "rng_state_1.pth"}
    records = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    assert any("eval_bleu_es-en" in r and "eval_bleu_en-es" in r for r in records)  # distributed evaluation

    # Both ranks hold the same weights at the end, and they are the weights saved in final/.
    lines = sorted(p.read_text().split() for p in hashes.glob("rank*.txt"))
    assert len(lines) == 2, list(hashes.iterdir())
    (hash0, steps0), (hash1, steps1) = lines
    assert hash0 == hash1 and steps0 == steps1 == "6"
    from transformers import AutoModelForSeq2SeqLM

    import hf_vaswani  # noqa: F401

    saved = AutoModelForSeq2SeqLM.from_pretrained(out / "final", dtype=torch.float32)
    assert _hooks_module().weights_sha256(saved.state_dict()) == hash0
