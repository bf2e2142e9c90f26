"""Faults: a training run killed with SIGKILL in the middle of a checkpoint save, then resumed; incomplete
checkpoints; checkpoint files that load with ``torch.load(weights_only=True)``.

The runs are real ``hf-vaswani train`` subprocesses on the tiny corpus and config of `tests.hf_vaswani.test_training`,
with dropout on, so that the per-step training losses depend on both the data order and the RNG states.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
import yaml

from hf_vaswani.cli import main
from hf_vaswani.tokenization import train_tokenizer
from hf_vaswani.training import (
    IncompleteCheckpointWarning,
    checkpoint_problem,
    find_checkpoints,
    last_checkpoint,
)
from tests.helpers import PROCESS_TIMEOUT, TINY_CONFIG, training_corpus

# Slow as a whole (tests/README.md, the fast lane): real training runs, killed and resumed
pytestmark = pytest.mark.slow

HOOKS = Path(__file__).resolve().parent.parent / "fault_hooks"
# 156 training rows (both directions) in batches of 16: 10 updates per epoch. Checkpoints at 8, 16, 24 and 26
# (the end); the kill comes while checkpoint-24 (epoch 2) is being written, so the run resumes from
# checkpoint-16, six updates into epoch 1, and goes on into epoch 2.
MAX_STEPS, SAVE_STEPS, KILL_AT = 26, 8, 24


def _hf_vaswani() -> list[str]:
    executable = shutil.which("hf-vaswani") or str(Path(sys.executable).with_name("hf-vaswani"))
    return [executable] if Path(executable).exists() else [sys.executable, "-m", "hf_vaswani.cli"]


def _env(**extra: str) -> dict[str, str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", **extra}
    env.pop("HF_VASWANI_TRACEBACK", None)
    return env


def _train_command(root: Path, out: Path) -> list[str]:
    return [
        *_hf_vaswani(),
        "train",
        str(root / "tiny.yaml"),
        "--set",
        f"data.path={root / 'pairs.tsv'}",
        "--set",
        f"training.output_dir={out}",
    ]


def _losses(path: Path, start_line: int = 0) -> dict[int, tuple[float, int]]:
    """step -> (training loss, non-padding source tokens seen so far) of the log lines from `start_line` on."""
    records = [json.loads(line) for line in path.read_text().splitlines()[start_line:]]
    return {r["step"]: (r["loss"], r["num_input_tokens_seen"]) for r in records if "loss" in r}


@pytest.fixture(scope="module")
def fault_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("faults")
    (root / "pairs.tsv").write_text(training_corpus(), encoding="utf-8")
    config = yaml.safe_load(yaml.safe_dump(TINY_CONFIG))
    # One tokenizer for every run: training a Unigram tokenizer twice can give scores that differ in the last
    # digits (hash map order in `tokenizers`), which may segment a word differently and change the losses.
    texts = [text for line in training_corpus().splitlines() for text in line.split("\t")]
    train_tokenizer(texts, vocab_size=config["tokenizer"]["vocab_size"]).save_pretrained(root / "tokenizer")
    config["tokenizer"]["path"] = str(root / "tokenizer")
    config["model"]["dropout"] = 0.1
    config["training"].update(max_steps=MAX_STEPS, save_steps=SAVE_STEPS, eval_steps=0, average_last=0)
    (root / "tiny.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    return root


@pytest.mark.slow
def test_sigkill_during_a_save_then_resume_continues_like_an_uninterrupted_run(fault_root):
    root = fault_root
    reference, killed = root / "reference", root / "killed"
    pause_file = root / "paused.txt"
    # The uninterrupted reference run and the run to be killed, side by side.
    reference_run = subprocess.Popen(
        _train_command(root, reference), env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    hooks = {
        "PYTHONPATH": str(HOOKS),
        "HF_VASWANI_TEST_PAUSE_AT_STEP": str(KILL_AT),
        "HF_VASWANI_TEST_PAUSE_FILE": str(pause_file),
    }
    victim = subprocess.Popen(
        _train_command(root, killed), env=_env(**hooks), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + PROCESS_TIMEOUT
        while not pause_file.exists():
            assert victim.poll() is None, "the run ended before reaching the checkpoint to kill it in"
            assert time.monotonic() < deadline, "the run did not reach the checkpoint save in time"
            time.sleep(0.05)
        # It is in the middle of writing checkpoint-24: model, optimizer and RNG states are on disk, the trainer
        # state is not. Kill it there.
        assert [p.name for p in find_checkpoints(killed)] == ["checkpoint-8", "checkpoint-16"]
        writing = Path(pause_file.read_text())
        assert writing == killed / f"tmp-checkpoint-{KILL_AT}" / f"checkpoint-{KILL_AT}"
        assert (writing / "model.safetensors").is_file() and (writing / "optimizer.pt").is_file()
        victim.send_signal(signal.SIGKILL)
        assert victim.wait(timeout=30) == -signal.SIGKILL
    finally:
        if victim.poll() is None:
            victim.kill()
            victim.wait()
    _, reference_err = reference_run.communicate(timeout=PROCESS_TIMEOUT)
    assert reference_run.returncode == 0, reference_err[-3000:]

    # No half-written checkpoint-24: the partial save is only in tmp-checkpoint-24.
    assert not (killed / f"checkpoint-{KILL_AT}").exists()
    assert (killed / f"tmp-checkpoint-{KILL_AT}").is_dir()
    assert sorted(p.name for p in killed.iterdir() if p.name.startswith("checkpoint-")) == [
        "checkpoint-16",
        "checkpoint-8",
    ]
    before_resume = len((killed / "log.jsonl").read_text().splitlines())
    killed_losses = _losses(killed / "log.jsonl")

    # Negative control, run side by side with the resume below: the same resume without the epoch-start RNG
    # states (as from a checkpoint written by Trainer alone, or by an older version) replays the wrong order for
    # the rest of epoch 1, so its losses differ: the comparison below does detect a wrong data order.
    legacy = root / "legacy"
    legacy.mkdir()
    shutil.copytree(killed / "tokenizer", legacy / "tokenizer")
    shutil.copytree(killed / "checkpoint-16", legacy / "checkpoint-16")
    (legacy / "checkpoint-16" / "epoch_rng_state.pth").unlink()
    replay = subprocess.Popen(
        [*_train_command(root, legacy), "--set", "training.max_steps=20"],
        env=_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )

    # Resume with the same command (no hooks): from checkpoint-16, the last complete one.
    resumed = subprocess.run(
        _train_command(root, killed), env=_env(), capture_output=True, text=True, timeout=PROCESS_TIMEOUT
    )
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    summary = json.loads(resumed.stdout[resumed.stdout.index('{\n  "output_dir"') :])
    assert summary["resumed_from"] == str(killed / "checkpoint-16")
    assert summary["global_step"] == MAX_STEPS
    assert "removing" in resumed.stderr and f"tmp-checkpoint-{KILL_AT}" in resumed.stderr
    assert not (killed / f"tmp-checkpoint-{KILL_AT}").exists()
    assert [p.name for p in find_checkpoints(killed)] == [
        "checkpoint-8",
        "checkpoint-16",
        "checkpoint-24",
        "checkpoint-26",
    ]

    reference_losses = _losses(reference / "log.jsonl")
    resumed_losses = _losses(killed / "log.jsonl", before_resume)
    assert sorted(reference_losses) == list(range(1, MAX_STEPS + 1))
    # Before the kill the two runs were the same run...
    assert {s: killed_losses[s] for s in range(1, KILL_AT + 1)} == {
        s: reference_losses[s] for s in range(1, KILL_AT + 1)
    }
    # ...and after resuming, every update 17..26 (the rest of epoch 1, then epoch 2) saw the same batches (same
    # count of source tokens seen) with the same dropout masks (same loss, bit for bit) as the reference.
    assert sorted(resumed_losses) == list(range(17, MAX_STEPS + 1))
    for step in range(17, MAX_STEPS + 1):
        assert resumed_losses[step] == reference_losses[step], step

    _, replay_err = replay.communicate(timeout=PROCESS_TIMEOUT)
    assert replay.returncode == 0, replay_err[-3000:]
    assert "has no epoch_rng_state.pth" in replay_err
    legacy_losses = _losses(legacy / "log.jsonl")
    assert sorted(legacy_losses) == list(range(17, 21))
    assert all(legacy_losses[s][0] != reference_losses[s][0] for s in range(17, 21))


# ------------------------------------------------------------------------------------------- incomplete checkpoints


@pytest.fixture
def run_copy(tmp_path, tiny_run_out):
    out = tmp_path / "run"
    shutil.copytree(tiny_run_out, out)
    return out


@pytest.fixture(scope="module")
def tiny_run_out(tmp_path_factory, fault_root):
    """A short run (12 updates, checkpoints at 6 and 12), trained in-process."""
    out = tmp_path_factory.mktemp("short") / "run"
    args = ["train", str(fault_root / "tiny.yaml"), "--set", f"data.path={fault_root / 'pairs.tsv'}"]
    args += ["--set", f"training.output_dir={out}", "--set", "training.max_steps=12", "--set", "training.save_steps=6"]
    assert main(args) == 0
    return out


def test_every_checkpoint_file_loads_weights_only(tiny_run_out):
    for folder in [*find_checkpoints(tiny_run_out), tiny_run_out / "final"]:
        names = {p.name for p in folder.iterdir()}
        assert "training_args.bin" not in names  # pickled TrainingArguments: not loadable weights-only
        args = json.loads((folder / "training_args.json").read_text())
        assert args["per_device_train_batch_size"] == 16
        others = [p for p in folder.iterdir() if p.suffix not in (".json", ".safetensors", ".py", ".txt", ".md")]
        if folder.name.startswith("checkpoint-"):
            assert {p.name for p in others} == {"optimizer.pt", "scheduler.pt", "rng_state.pth", "epoch_rng_state.pth"}
        for path in others:
            torch.load(path, weights_only=True)  # raises on anything but tensors and plain containers
        assert checkpoint_problem(folder) is None or folder.name == "final"


def _corrupt(checkpoint: Path, how: str) -> None:
    if how == "no-trainer-state":  # killed before Trainer wrote its state (a save without the atomic rename)
        (checkpoint / "trainer_state.json").unlink()
    elif how == "truncated-optimizer":
        data = (checkpoint / "optimizer.pt").read_bytes()
        (checkpoint / "optimizer.pt").write_bytes(data[: len(data) // 2])
    elif how == "truncated-weights":
        data = (checkpoint / "model.safetensors").read_bytes()
        (checkpoint / "model.safetensors").write_bytes(data[: len(data) - 100])
    elif how == "no-weights":
        (checkpoint / "model.safetensors").unlink()


@pytest.mark.parametrize("how", ["no-trainer-state", "truncated-optimizer", "truncated-weights", "no-weights"])
def test_resume_skips_an_incomplete_checkpoint_with_a_warning(run_copy, fault_root, how, capsys):
    fake = run_copy / "checkpoint-18"
    shutil.copytree(run_copy / "checkpoint-12", fake)
    state = json.loads((fake / "trainer_state.json").read_text())
    state["global_step"] = 18
    (fake / "trainer_state.json").write_text(json.dumps(state))
    assert checkpoint_problem(fake) is None and last_checkpoint(run_copy).name == "checkpoint-18"
    _corrupt(fake, how)
    assert checkpoint_problem(fake)
    with pytest.warns(IncompleteCheckpointWarning, match="checkpoint-18"):
        assert last_checkpoint(run_copy) == run_copy / "checkpoint-12"
    assert [p.name for p in find_checkpoints(run_copy)] == ["checkpoint-6", "checkpoint-12"]

    # The CLI resumes from checkpoint-12, says why it skipped checkpoint-18 in one line, and replaces the
    # incomplete checkpoint when it saves step 18 again.
    args = ["train", str(fault_root / "tiny.yaml"), "--set", f"data.path={fault_root / 'pairs.tsv'}"]
    args += [
        "--set",
        f"training.output_dir={run_copy}",
        "--set",
        "training.max_steps=18",
        "--set",
        "training.save_steps=6",
    ]
    capsys.readouterr()
    assert main(args) == 0
    captured = capsys.readouterr()
    summary = json.loads(captured.out[captured.out.index('{\n  "output_dir"') :])
    assert summary["resumed_from"] == str(run_copy / "checkpoint-12") and summary["global_step"] == 18
    warning_lines = [line for line in captured.err.splitlines() if "incomplete checkpoint" in line]
    assert len(warning_lines) == 1 and warning_lines[0].startswith("hf-vaswani train: warning: skipping")
    assert checkpoint_problem(fake) is None
    assert json.loads((fake / "trainer_state.json").read_text())["global_step"] == 18


def test_no_complete_checkpoint_to_resume(tmp_path, fault_root, capsys):
    out = tmp_path / "run"
    (out / "checkpoint-6").mkdir(parents=True)
    (out / "checkpoint-6" / "config.json").write_text("{}")
    args = ["train", str(fault_root / "tiny.yaml"), "--set", f"data.path={fault_root / 'pairs.tsv'}"]
    assert main([*args, "--set", f"training.output_dir={out}", "--resume"]) == 2
    err = capsys.readouterr().err
    assert "no complete checkpoint-N folder" in err and "Traceback" not in err


# ------------------------------------------------------------------------------------------- averaging killed


@pytest.mark.slow
def test_sigkill_during_the_final_averaging_leaves_no_partial_averaged_model(tmp_path, fault_root):
    """averaged/ is written into tmp-averaged.* and renamed into place once complete: a run killed while it
    averages leaves no averaged/ with config and tokenizer but no weights, and the next run writes it whole."""
    from transformers import AutoModelForSeq2SeqLM

    out, pause_file = tmp_path / "run", tmp_path / "averaging.txt"
    base = ["train", str(fault_root / "tiny.yaml"), "--set", f"data.path={fault_root / 'pairs.tsv'}"]
    base += ["--set", f"training.output_dir={out}", "--set", "training.save_steps=2"]
    assert main([*base, "--set", "training.max_steps=4"]) == 0  # checkpoints 2 and 4, no averaging yet
    assert not (out / "averaged").exists()
    more = [*base, "--set", "training.max_steps=6", "--set", "training.average_last=2"]
    hooks = {"PYTHONPATH": str(HOOKS), "HF_VASWANI_TEST_PAUSE_IN_AVERAGING": str(pause_file)}
    victim = subprocess.Popen(
        [*_hf_vaswani(), *more], env=_env(**hooks), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + PROCESS_TIMEOUT
        while not pause_file.exists():
            assert victim.poll() is None, victim.stderr.read()[-3000:]
            assert time.monotonic() < deadline, "the run did not reach the averaging in time"
            time.sleep(0.05)
        writing = Path(pause_file.read_text())
        assert writing.parent == out and writing.name.startswith("tmp-averaged.")
        assert (writing / "config.json").is_file() and not (writing / "model.safetensors").exists()
        victim.send_signal(signal.SIGKILL)
        assert victim.wait(timeout=30) == -signal.SIGKILL
    finally:
        if victim.poll() is None:
            victim.kill()
            victim.wait()
        victim.stderr.close()
    assert not (out / "averaged").exists()  # no folder that looks like a model but has no weights
    assert (out / "final" / "model.safetensors").is_file()

    # The same command again: it removes the leftover, resumes, and averages the last two checkpoints whole.
    assert main(more) == 0
    assert not [p.name for p in out.iterdir() if p.name.startswith("tmp-")]
    averaged = out / "averaged"
    last_two = [str(p) for p in find_checkpoints(out)[-2:]]
    assert json.loads((averaged / "averaged_from.json").read_text())["checkpoints"] == last_two
    assert (averaged / "model.safetensors").is_file() and (averaged / "tokenizer.json").is_file()
    AutoModelForSeq2SeqLM.from_pretrained(averaged)


# ------------------------------------------------------------------------------------------- damaged checkpoints


def _damage(checkpoint: Path, how: str) -> None:
    from safetensors.torch import load_file, save_file

    if how == "state-list":
        (checkpoint / "trainer_state.json").write_text("[]")
    elif how == "state-lacks-fields":
        (checkpoint / "trainer_state.json").write_text(json.dumps({"global_step": 12}))
    elif how == "scheduler-list":
        torch.save([1, 2, 3], checkpoint / "scheduler.pt")
    elif how == "scheduler-other-dict":
        torch.save({"x": 1}, checkpoint / "scheduler.pt")
    elif how == "rng-wrong-types":
        torch.save({"python": 1, "numpy": "x", "cpu": torch.zeros(3)}, checkpoint / "rng_state.pth")
    elif how == "rng-list":
        torch.save([1], checkpoint / "rng_state.pth")
    elif how == "epoch-rng-list":
        torch.save([1], checkpoint / "epoch_rng_state.pth")
    elif how == "optimizer-other-shapes":
        state = torch.load(checkpoint / "optimizer.pt", weights_only=True)
        state["state"][0]["exp_avg"] = torch.zeros(3, 3)
        torch.save(state, checkpoint / "optimizer.pt")
    elif how == "weights-nan":
        weights = load_file(str(checkpoint / "model.safetensors"))
        weights["model.encoder.layers.0.ffn.fc1.weight"][0, 0] = float("nan")
        save_file(weights, str(checkpoint / "model.safetensors"), metadata={"format": "pt"})
    elif how == "no-optimizer":
        (checkpoint / "optimizer.pt").unlink()


DAMAGE = {
    "state-list": "trainer_state.json is a JSON list, not an object of Trainer's state",
    "state-lacks-fields": "trainer_state.json lacks max_steps (an integer >= 0)",
    "scheduler-list": "scheduler.pt holds a list, not a learning-rate scheduler's state",
    "scheduler-other-dict": "scheduler.pt lacks last_epoch",
    "rng-wrong-types": "rng_state.pth holds RNG states of the wrong type",
    "rng-list": "rng_state.pth holds a list, not a dict of RNG states",
    "epoch-rng-list": "epoch_rng_state.pth holds a list",
    "optimizer-other-shapes": "optimizer.pt holds exp_avg of shape [3, 3] for a parameter of shape",
    "weights-nan": "model.safetensors holds non-finite values (NaN or inf) in model.encoder.layers.0.ffn.fc1.weight",
    "no-optimizer": "optimizer.pt is missing (resuming without it starts Adam again from zero moments",
}


def _resume_args(fault_root: Path, out: Path, *extra: str) -> list[str]:
    args = ["train", str(fault_root / "tiny.yaml"), "--set", f"data.path={fault_root / 'pairs.tsv'}"]
    args += ["--set", f"training.output_dir={out}", "--set", "training.max_steps=14", "--set", "training.save_steps=6"]
    return [*args, *extra]


@pytest.mark.parametrize("how", list(DAMAGE))
def test_resume_names_the_damaged_file_and_offers_the_previous_checkpoint(run_copy, fault_root, how, capsys):
    _damage(run_copy / "checkpoint-12", how)
    capsys.readouterr()
    assert main(_resume_args(fault_root, run_copy)) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("hf-vaswani train: error: ")]
    assert len(lines) == 1, err
    assert lines[0].startswith(f"hf-vaswani train: error: cannot resume from {run_copy / 'checkpoint-12'}: ")
    assert DAMAGE[how] in lines[0], lines[0]
    assert "resume from the previous one, checkpoint-6, with --resume-from-previous" in lines[0]
    assert not (run_copy / "checkpoint-14").exists() and not (run_copy / "tmp-checkpoint-14").exists()


@pytest.mark.parametrize("how", ["scheduler-list", "weights-nan"])
def test_resume_from_previous_skips_the_damaged_checkpoint_and_says_so(run_copy, fault_root, how, capsys):
    _damage(run_copy / "checkpoint-12", how)
    capsys.readouterr()
    assert main(_resume_args(fault_root, run_copy, "--resume-from-previous")) == 0
    captured = capsys.readouterr()
    summary = json.loads(captured.out[captured.out.index('{\n  "output_dir"') :])
    assert summary["resumed_from"] == str(run_copy / "checkpoint-6") and summary["global_step"] == 14
    notes = [line for line in captured.err.splitlines() if "skipping the damaged" in line]
    assert notes == [f"hf-vaswani train: warning: skipping the damaged checkpoint-12: {notes[0].split(': ', 3)[3]}"]
    assert DAMAGE[how] in notes[0] and notes[0].endswith("resuming from checkpoint-6")
    assert checkpoint_problem(run_copy / "checkpoint-12") is None  # written again, whole, when step 12 came


def test_resume_without_optimizer_needs_fresh_optimizer_and_keeps_the_schedule(
    run_copy, tiny_run_out, fault_root, tmp_path, capfd, caplog
):
    # An unbroken resume, for the schedule to compare with; it must not warn about the tied weights (the
    # decoder's embedding and the output projection are the encoder's embedding, saved once).
    reference = tmp_path / "reference"
    shutil.copytree(tiny_run_out, reference)
    capfd.readouterr()
    assert main(_resume_args(fault_root, reference)) == 0
    err = capfd.readouterr().err
    assert "missing keys" not in err and not [r for r in caplog.records if "missing keys" in r.getMessage()]
    assert "resuming from" in err

    _damage(run_copy / "checkpoint-12", "no-optimizer")
    assert main(_resume_args(fault_root, run_copy, "--fresh-optimizer")) == 0
    err = capfd.readouterr().err
    assert "hf-vaswani train: note: checkpoint-12 has no optimizer.pt: the optimizer starts again" in err
    assert "missing keys" not in err

    def learning_rates(out: Path) -> dict[int, float]:
        records = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
        return {r["step"]: r["learning_rate"] for r in records if "learning_rate" in r and r["step"] > 12}

    # The schedule goes on from step 12 (a restarted one would warm up again from a third of the peak).
    assert learning_rates(run_copy) == pytest.approx(learning_rates(reference))
    assert sorted(learning_rates(run_copy)) == [13, 14]


def test_a_damaged_checkpoint_in_a_real_process_is_one_line(run_copy, fault_root):
    _damage(run_copy / "checkpoint-12", "state-list")
    result = subprocess.run(
        [*_hf_vaswani(), *_resume_args(fault_root, run_copy)],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=PROCESS_TIMEOUT,
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("hf-vaswani train: error: ")]
    assert len(errors) == 1 and DAMAGE["state-list"] in errors[0], result.stderr[-2000:]
