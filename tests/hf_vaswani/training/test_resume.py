"""A resumed run is the run of its checkpoints (`hf_vaswani.training.identity`), and a run's saves are whole.

Resuming with another tokenizer (``RUN/tokenizer/`` deleted, or replaced), other data or other split settings is
refused in one line,
before any work; restoring the tokenizer from the checkpoint, or moving the data file, resumes. A full disk while
the tokenizer or a checkpoint is written leaves nothing half-written (simulated in-process: the write fails with
ENOSPC part-way), and a damaged tokenizer file met anyway is an error that names it. One tiny run (2 updates, one
checkpoint), copied for each test.
"""

from __future__ import annotations

import copy
import errno
import json
import shutil
from pathlib import Path

import pytest
import torch
import yaml
from transformers import PreTrainedTokenizerFast

from hf_vaswani.cli import main
from hf_vaswani.tokenization import train_tokenizer
from hf_vaswani.training import checkpoint_problem
from hf_vaswani.training.identity import RUN_IDENTITY
from tests.helpers import TINY_CONFIG, training_corpus


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("resume-checks")
    corpus = training_corpus()
    (root / "pairs.tsv").write_text(corpus, encoding="utf-8")
    (root / "fewer.tsv").write_text("\n".join(corpus.splitlines()[:-5]) + "\n", encoding="utf-8")
    config = copy.deepcopy(TINY_CONFIG)
    config["training"].update(max_steps=2, save_steps=2, eval_steps=0, average_last=0)
    (root / "tiny.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    return root


def _args(root: Path, out: Path, data: Path | None = None, max_steps: int = 4) -> list[str]:
    return [
        "train",
        str(root / "tiny.yaml"),
        "--set",
        f"data.path={data or root / 'pairs.tsv'}",
        "--set",
        f"training.output_dir={out}",
        "--set",
        f"training.max_steps={max_steps}",
    ]


@pytest.fixture(scope="module")
def run_out(root) -> Path:
    out = root / "run"
    assert main(_args(root, out, max_steps=2)) == 0
    return out


@pytest.fixture
def run(run_out, tmp_path) -> Path:
    copied = tmp_path / "run"
    shutil.copytree(run_out, copied)
    return copied


def _one_error(err: str) -> str:
    assert "Traceback" not in err, err
    errors = [line for line in err.splitlines() if line.startswith("hf-vaswani train: error: ")]
    assert len(errors) == 1, err
    return errors[0]


def _refused(args: list[str], capsys) -> str:
    capsys.readouterr()
    assert main(args) == 2
    return _one_error(capsys.readouterr().err)


def test_a_run_records_its_tokenizer_and_data(run_out, root):
    record = json.loads((run_out / RUN_IDENTITY).read_text())
    data = (root / "pairs.tsv").read_bytes()
    assert record["data"]["path"] == str((root / "pairs.tsv").resolve()) and record["data"]["size"] == len(data)
    assert set(record["tokenizer"]) >= {"model", "added_tokens", "normalizer"}


def test_resuming_without_the_runs_tokenizer_is_refused(run, root, capsys):
    shutil.rmtree(run / "tokenizer")
    line = _refused(_args(root, run), capsys)
    assert f"cannot resume from {run / 'checkpoint-2'}: the run's tokenizer folder" in line
    assert "has no tokenizer.json" in line and "restore it (copy" in line and "start a new run" in line
    assert not (run / "tokenizer").exists()  # no new tokenizer trained in its place
    assert not (run / "checkpoint-4").exists()


def test_resuming_with_another_tokenizer_is_refused(run, root, capsys):
    texts = [text for line in training_corpus().splitlines() for text in line.split("\t")]
    other = train_tokenizer(texts, vocab_size=200)
    shutil.rmtree(run / "tokenizer")
    other.save_pretrained(run / "tokenizer")
    line = _refused(_args(root, run), capsys)
    assert "is not the one checkpoint-2 was trained with (its vocabulary" in line
    assert not (run / "checkpoint-4").exists()


def test_resuming_with_other_data_is_refused(run, root, capsys):
    line = _refused(_args(root, run, data=root / "fewer.tsv"), capsys)
    assert "data.path is " in line and "not the data the run was started with" in line
    assert str((root / "pairs.tsv").resolve()) in line and "training.init_from=" in line
    line = _refused(_args(root, run, data=root / "missing.tsv"), capsys)
    assert "'" + str(root / "missing.tsv") + "' is not a file" in line


def test_resuming_with_other_split_settings_is_refused(run_out, run, root, capsys):
    recorded = json.loads((run_out / RUN_IDENTITY).read_text())["splits"]
    assert (recorded["validation_size"], recorded["test_size"]) == (12, 12) and isinstance(recorded["split_seed"], int)
    line = _refused([*_args(root, run), "--set", f"data.split_seed={recorded['split_seed'] + 1}"], capsys)
    assert f"data.split_seed {recorded['split_seed'] + 1!r} (the run's: {recorded['split_seed']!r})" in line
    assert "pairs it held out" in line and not (run / "checkpoint-4").exists()
    line = _refused([*_args(root, run), "--set", "data.validation_size=3"], capsys)
    assert "data.validation_size 3" in line


def test_a_new_start_does_not_reuse_a_tokenizer_trained_on_other_pairs(run, root, capsys):
    """A start that died before its first checkpoint leaves tokenizer/ and run_identity.json: a new start with
    other data is refused, with the same data it reuses the tokenizer."""
    shutil.rmtree(run / "checkpoint-2")
    tokenizer = (run / "tokenizer" / "tokenizer.json").read_text()
    line = _refused(_args(root, run, data=root / "fewer.tsv", max_steps=1), capsys)
    assert "was trained by an earlier start of a run in" in line and "data.path is" in line
    assert f"remove '{run / 'tokenizer'}'" in line and (run / "tokenizer" / "tokenizer.json").read_text() == tokenizer
    assert main(_args(root, run, max_steps=1)) == 0
    assert (run / "tokenizer" / "tokenizer.json").read_text() == tokenizer and (run / "checkpoint-1").is_dir()


@pytest.mark.slow
def test_the_same_data_elsewhere_and_the_tokenizer_restored_from_the_checkpoint_resume(run, root, tmp_path):
    moved = tmp_path / "moved.tsv"
    shutil.copy(root / "pairs.tsv", moved)
    shutil.rmtree(run / "tokenizer")
    (run / "tokenizer").mkdir()
    for name in ("tokenizer.json", "tokenizer_config.json"):  # what the refusal says to do
        shutil.copy(run / "checkpoint-2" / name, run / "tokenizer" / name)
    assert main(_args(root, run, data=moved, max_steps=3)) == 0
    assert json.loads((run / "checkpoint-3" / "trainer_state.json").read_text())["global_step"] == 3


def test_a_damaged_tokenizer_file_is_named(run, root, capsys):
    path = run / "tokenizer" / "tokenizer_config.json"
    path.write_text(path.read_text()[:40])
    line = _refused(_args(root, run), capsys)
    assert repr(str(path)) + " is damaged (" in line
    assert f"copy tokenizer.json and tokenizer_config.json from {run / 'checkpoint-2'} into it" in line


def _fail_part_way(write, error: BaseException):
    """A write that puts half its bytes on disk and then fails, as a full disk does."""

    def failing(*args, **kwargs):
        write(*args, **kwargs)
        for path in failing.paths(*args, **kwargs):
            path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
        raise error

    return failing


def test_a_full_disk_while_saving_the_tokenizer_leaves_no_half_written_file(root, tmp_path, monkeypatch, capsys):
    original = PreTrainedTokenizerFast.save_pretrained
    failing = _fail_part_way(original, Exception("No space left on device (os error 28)"))
    failing.paths = lambda self, folder, *a, **k: [Path(folder) / "tokenizer.json"]
    monkeypatch.setattr(PreTrainedTokenizerFast, "save_pretrained", failing)
    out = tmp_path / "fresh"
    line = _refused(_args(root, out), capsys)
    assert f"Could not save the tokenizer into {str(out / 'tokenizer')!r} (No space left on device)" in line
    assert sorted(p.name for p in out.iterdir()) == []  # no tokenizer/, no temporary folder left


@pytest.mark.slow
def test_a_full_disk_while_saving_a_checkpoint_keeps_the_last_one(run, root, monkeypatch, capsys):
    before = {p.name: p.read_bytes() for p in (run / "checkpoint-2").iterdir()}
    original = torch.save
    failing = _fail_part_way(original, OSError(errno.ENOSPC, "No space left on device"))
    failing.paths = lambda obj, path, *a, **k: [Path(path)]

    def save(obj, path, *args, **kwargs):
        if Path(str(path)).name == "optimizer.pt":
            return failing(obj, path, *args, **kwargs)
        return original(obj, path, *args, **kwargs)

    monkeypatch.setattr(torch, "save", save)
    line = _refused(_args(root, run), capsys)
    assert "could not write checkpoint-4 at step 4 (" in line and "No space left on device" in line
    assert f"the last complete checkpoint, {run / 'checkpoint-2'}, is kept" in line
    assert "it resumes from checkpoint-2" in line
    assert not [p.name for p in run.iterdir() if p.name.startswith(("tmp-", "checkpoint-4"))]
    assert checkpoint_problem(run / "checkpoint-2") is None
    assert {p.name: p.read_bytes() for p in (run / "checkpoint-2").iterdir()} == before


def test_a_log_line_cut_by_a_kill_is_dropped_when_the_run_goes_on(tmp_path):
    from types import SimpleNamespace

    from hf_vaswani.training.trainer import JsonlLoggerCallback

    log = tmp_path / "log.jsonl"
    log.write_text('{"step": 1, "loss": 2.5}\n{"step": 2, "lo', encoding="utf-8")
    callback = JsonlLoggerCallback(log)
    state = SimpleNamespace(is_world_process_zero=True, num_input_tokens_seen=0, global_step=2, epoch=0.5)
    callback.on_train_begin(None, state, None)
    callback.on_log(None, state, None, logs={"loss": 2.25})
    records = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert [(r["step"], r["loss"]) for r in records] == [(1, 2.5), (2, 2.25)]
