"""Bad input to every ``hf-vaswani`` command gives one clear line on stderr and exit code 2, no traceback.

Most cases run `hf_vaswani.cli.main` in-process (what the ``hf-vaswani`` script runs); `test_real_processes`
runs the installed command itself for a few of them, to check the exit status and stderr of the process.
Malformed lines are skipped with one warning line that gives their line numbers (exit code 0), or rejected
with ``--strict``; they are never silently dropped or altered.
"""

import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from safetensors.torch import load_file, save_file

from hf_vaswani.cli import main
from tests.helpers import TINY_CONFIG, training_corpus
from tests.hf_vaswani.test_training import tiny_run  # noqa: F401  (a fixture)


def _one_error_line(err: str, command: str) -> str:
    """The single line of an error report; fails on a traceback or on extra lines."""
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith(f"hf-vaswani {command}: error: ")]
    assert len(errors) == 1, err
    return errors[0]


@pytest.fixture
def files(tmp_path):
    """Input files, good and bad."""
    (tmp_path / "pairs.tsv").write_text(training_corpus(), encoding="utf-8")
    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(TINY_CONFIG), encoding="utf-8")
    (tmp_path / "bad.yaml").write_text("training:\n  max_steps: [1, 2\n", encoding="utf-8")
    (tmp_path / "section.yaml").write_text("training: 5\n", encoding="utf-8")
    (tmp_path / "unknown.yaml").write_text("training:\n  max_stepz: 5\n", encoding="utf-8")
    (tmp_path / "list.yaml").write_text("- 1\n- 2\n", encoding="utf-8")
    (tmp_path / "empty.tsv").write_text("", encoding="utf-8")
    (tmp_path / "all-bad.tsv").write_text("one\ttwo\tthree\nno tab here\n", encoding="utf-8")
    mixed = "The cat eats.\tEl gato come.\nno tab here\nThe dog sees the book.\tEl perro ve el libro.\n\tEl niño.\n"
    (tmp_path / "mixed.tsv").write_text(mixed, encoding="utf-8")
    (tmp_path / "latin1.tsv").write_bytes("The boy.\tEl ni\xf1o.\n".encode("latin-1"))
    (tmp_path / "a-file").write_text("x", encoding="utf-8")
    return tmp_path


# ------------------------------------------------------------------------------------------- train

TRAIN_ERRORS = [
    (["train", "{tmp}/missing.yaml"], "No such configuration file"),
    (["train", "{tmp}/bad.yaml"], "bad.yaml: not valid YAML"),
    (["train", "{tmp}/list.yaml"], "must be a mapping of sections"),
    (["train", "{tmp}/section.yaml"], "Section 'training' must be a mapping"),
    (["train", "{tmp}/unknown.yaml"], "Unknown key(s) ['max_stepz'] in section 'training'"),
    (["train", "{cfg}", "--set", "training.max_steps"], "is not of the form section.key=value"),
    (["train", "{cfg}", "--set", "max_steps=3"], "must be section.key"),
    (["train", "{cfg}", "--set", "optim.lr=3"], "must be section.key"),
    (["train", "{cfg}", "--set", "training.max_stepz=3"], "Unknown key(s) ['max_stepz']"),
    (["train", "{cfg}", "--set", "model.d_modl=3"], "Unknown VaswaniConfig field(s) ['d_modl']"),
    (["train", "{cfg}", "--set", "training.max_steps=abc"], "training.max_steps must be a positive integer, got 'abc'"),
    (["train", "{cfg}", "--set", "training.batch_size=0"], "training.batch_size must be a positive integer, got 0"),
    (["train", "{cfg}", "--set", "training.bf16=maybe"], "training.bf16 must be true or false"),
    (["train", "{cfg}", "--set", "training.adam_beta2=1.5"], "training.adam_beta2 must be a number >= 0 and < 1"),
    (["train", "{cfg}", "--set", "training.sampling=bogus"], "training.sampling must be one of"),
    (["train", "{cfg}", "--set", "training.save_dtype=int8"], "training.save_dtype must be one of"),
    (["train", "{cfg}", "--set", "training.sampling=tokens"], "needs training.max_tokens_per_batch"),
    (
        ["train", "{cfg}", "--set", "training.sampling=tokens", "--set", "training.max_tokens_per_batch=10"],
        "must be at least data.max_length (24)",
    ),
    (["train", "{cfg}", "--set", "training.max_tokens_per_batch=4000"], "only used with training.sampling: tokens"),
    (["train", "{cfg}", "--set", "model.d_model=31"], "d_model (31) must be divisible"),
    (["train", "{cfg}", "--set", "model.dropout=2"], "dropout must be in [0, 1)"),
    (["train", "{cfg}", "--set", "data.directions=[fr-en]"], "data.directions must be one of 'es-en', 'en-es'"),
    (["train", "{cfg}", "--set", "data.directions=[es-en"], "the value is not valid YAML"),
    (["train", "{cfg}", "--set", "training.output_dir={tmp}/run"], "data.path is not set"),
    (["train", "{cfg}", "--set", "data.path={tmp}/pairs.tsv"], "training.output_dir is not set"),
    (
        ["train", "{cfg}", "--set", "data.path={tmp}/missing.tsv", "--set", "training.output_dir={tmp}/run"],
        "No such file",
    ),
    (["train", "{cfg}", "--set", "data.path={tmp}/empty.tsv", "--set", "training.output_dir={tmp}/run"], "no valid"),
    (["train", "{cfg}", "--set", "data.path={tmp}/all-bad.tsv", "--set", "training.output_dir={tmp}/run"], "no valid"),
    (
        ["train", "{cfg}", "--set", "data.path={tmp}/pairs.tsv", "--set", "training.output_dir={tmp}/a-file"],
        "is a file",
    ),
    (
        ["train", "{cfg}", "--set", "data.path={tmp}/pairs.tsv", "--set", "training.output_dir={tmp}/run"]
        + ["--set", "tokenizer.path={tmp}/no-tokenizer"],
        "tokenizer.path: no tokenizer folder",
    ),
    (
        ["train", "{cfg}", "--set", "data.path={tmp}/pairs.tsv", "--set", "training.output_dir={tmp}/run"]
        + ["--set", "data.validation_size=200"],
        "Cannot hold out",
    ),
    (["train", "{cfg}", "--resumee"], "unrecognized arguments: --resumee"),
]


@pytest.mark.parametrize("argv, message", TRAIN_ERRORS, ids=[" ".join(a[2:]) or a[1] for a, _ in TRAIN_ERRORS])
def test_train_bad_input(files, argv, message, capsys):
    argv = [a.format(tmp=files, cfg=files / "tiny.yaml") for a in argv]
    try:
        code = main(argv)
    except SystemExit as exit_info:  # argparse usage errors
        code = exit_info.code
    assert code == 2
    line = _one_error_line(capsys.readouterr().err, "train")
    assert message in line, line
    assert not (files / "run" / "checkpoint-1").exists()


def test_train_skips_malformed_lines_with_one_warning(files, capsys):
    with open(files / "pairs.tsv", "a", encoding="utf-8") as handle:
        handle.write("no tab on this line\nThree\tfields\there\n")
    argv = ["train", str(files / "tiny.yaml"), "--set", f"data.path={files / 'pairs.tsv'}"]
    argv += ["--set", f"training.output_dir={files / 'run'}", "--set", "training.max_steps=1"]
    argv += ["--set", "training.eval_steps=0", "--set", "training.average_last=0"]
    assert main(argv) == 0
    err = capsys.readouterr().err
    warnings = [line for line in err.splitlines() if "malformed" in line]
    assert warnings == [
        f"hf-vaswani train: warning: {files / 'pairs.tsv'}: skipped 2 malformed line(s) (line 145: expected 2 "
        "tab-separated fields, found 1; line 146: expected 2 tab-separated fields, found 3)."
    ]


# ------------------------------------------------------------------------------------------- evaluate


def _evaluate_errors(model: str) -> list[tuple[list[str], str]]:
    return [
        (["evaluate", "{tmp}/missing.tsv", "--model", model], "No such file of sentence pairs"),
        (["evaluate", "{tmp}/empty.tsv", "--model", model], "empty.tsv: no valid sentence pair found"),
        (["evaluate", "{tmp}/all-bad.tsv", "--model", model], "all-bad.tsv: no valid sentence pair found"),
        (["evaluate", "{tmp}/latin1.tsv", "--model", model], "no valid sentence pair found"),
        (["evaluate", "{tmp}/mixed.tsv", "--model", model, "--strict"], "mixed.tsv, line 2: expected 2 tab-separated"),
        (["evaluate", "{tmp}/mixed.tsv", "--model", model, "--direction", "fr-en"], "Unknown translation direction"),
        (["evaluate", "{tmp}/mixed.tsv", "--model", "{tmp}/no-model"], "No model folder with a config.json"),
        (["evaluate", "{tmp}/mixed.tsv", "--model", "{tmp}/broken-model"], "broken-model"),
        (["evaluate", "{tmp}/a-file.csv", "--model", model], "no column 'en'"),
        (["evaluate", "{tmp}/mixed.tsv", "--model", model, "--limit", "0"], "--limit: expected a positive integer"),
        (["evaluate", "{tmp}/mixed.tsv", "--model", model, "--num-beams", "x"], "--num-beams: expected a positive"),
        (["evaluate", "{tmp}/mixed.tsv", "--model", model, "--length-penalty", "nan"], "expected a finite number"),
        (["evaluate", "{tmp}/mixed.tsv", "--model", model, "--output", "{tmp}/nowhere/h.txt"], "No folder"),
        (["evaluate", "{tmp}/mixed.tsv", "--model", model, "--json", "{tmp}"], "is a folder, not a file"),
        (["evaluate", "{tmp}/mixed.tsv", "--model", model, "--bogus"], "unrecognized arguments: --bogus"),
    ]


def test_evaluate_bad_input(files, tiny_run, capsys):  # noqa: F811
    model = str(tiny_run["out"] / "final")
    shutil.copytree(model, files / "broken-model")
    (files / "broken-model" / "model.safetensors").write_bytes(b"not a safetensors file")
    (files / "a-file.csv").write_text("english,spanish\nThe cat.,El gato.\n", encoding="utf-8")
    for argv, message in _evaluate_errors(model):
        argv = [a.format(tmp=files) for a in argv]
        try:
            code = main(argv)
        except SystemExit as exit_info:
            code = exit_info.code
        assert code == 2, argv
        line = _one_error_line(capsys.readouterr().err, "evaluate")
        assert message in line, (argv, line)


def test_evaluate_skips_malformed_lines_with_line_numbers(files, tiny_run, capsys):  # noqa: F811
    model = str(tiny_run["out"] / "final")
    argv = ["evaluate", str(files / "mixed.tsv"), "--model", model, "--direction", "es-en"]
    assert main(argv + ["--output", str(files / "hyp.txt")]) == 0
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    assert [line for line in captured.err.splitlines() if "warning" in line] == [
        f"hf-vaswani evaluate: warning: {files / 'mixed.tsv'}: skipped 2 malformed line(s) (line 2: expected 2 "
        "tab-separated fields, found 1; line 4: empty English side)."
    ]
    assert json.loads(captured.out)["es-en"]["sentences"] == 2
    assert len((files / "hyp.txt").read_text().splitlines()) == 2  # the 2 pairs that were scored


# ------------------------------------------------------------------------------------------- translate


def test_translate_bad_input(files, tiny_run, capsys, monkeypatch):  # noqa: F811
    model = str(tiny_run["out"] / "final")
    cases = [
        (["translate", "--model", model, "--direction", "fr-en", "hola"], None, "Unknown translation direction"),
        (["translate", "--model", model, "--direction", "es"], None, "Unknown translation direction 'es'"),
        (["translate", "--model", model], b"", "the input is empty"),
        (["translate", "--model", model], b"\n  \n\n", "the input is empty"),
        (["translate", "--model", model, "hola", "  "], None, "Sentence 2 is empty"),
        (["translate", "--model", str(files / "no-model"), "hola"], None, "No model folder"),
        (["translate", "--model", model, "--batch-size", "0", "hola"], None, "--batch-size: expected a positive"),
        (["translate", "--model", model, "--max-new-tokens", "-3", "hola"], None, "--max-new-tokens: expected"),
        (["translate", "--model", model], b"hola\n\xff\xfe\nadios\n\xc3(\n", "not valid UTF-8 at line 2, line 4"),
    ]
    for argv, stdin, message in cases:
        if stdin is not None:
            monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8"))
        try:
            code = main(argv)
        except SystemExit as exit_info:
            code = exit_info.code
        assert code == 2, argv
        captured = capsys.readouterr()
        line = _one_error_line(captured.err, "translate")
        assert message in line, (argv, line)
        assert captured.out == ""  # nothing half-translated


def test_translate_too_long_sentence_is_cut_with_a_warning(tiny_run, capsys):  # noqa: F811
    model = str(tiny_run["out"] / "final")
    long_sentence = " ".join(["El gato come la manzana."] * 30)
    assert main(["translate", "--model", model, "--num-beams", "1", "Hola.", long_sentence]) == 0
    captured = capsys.readouterr()
    assert len(captured.out.splitlines()) == 2
    warnings = [line for line in captured.err.splitlines() if "warning" in line]
    assert len(warnings) == 1 and warnings[0].startswith("hf-vaswani translate: warning: 1 source(s) longer than")
    assert "sentence 2 (" in warnings[0] and "sentence 1" not in warnings[0]


# ------------------------------------------------------------------------------------------- average-checkpoints


def test_average_checkpoints_bad_input(files, tiny_run, capsys):  # noqa: F811
    out = tiny_run["out"]
    first, second = out / "checkpoint-6", out / "checkpoint-12"
    other = files / "other"
    shutil.copytree(second, other)
    state = load_file(str(other / "model.safetensors"))
    key = next(k for k, v in state.items() if v.ndim == 2)
    state[key] = state[key][:, :-1].contiguous()
    save_file(state, str(other / "model.safetensors"), metadata={"format": "pt"})
    truncated = files / "truncated"
    shutil.copytree(second, truncated)
    data = (truncated / "model.safetensors").read_bytes()
    (truncated / "model.safetensors").write_bytes(data[:-64])
    (files / "empty-run").mkdir()
    cases = [
        (["{tmp}/missing"], "No such checkpoint or run folder"),
        (["{tmp}/a-file"], "is a file, not a checkpoint folder"),
        (["{tmp}/empty-run"], "No complete checkpoint-N folder"),
        ([str(first), str(first)], "listed twice"),
        ([str(first), str(other)], f"{key}: shape"),
        ([str(first), str(truncated)], "model.safetensors is truncated"),
        ([str(first), str(second), "--last", "0"], "--last: expected a positive integer"),
        ([str(first), str(second), "--dtype", "int8"], "argument --dtype: invalid choice"),
    ]
    for paths, message in cases:
        argv = ["average-checkpoints", *[p.format(tmp=files) for p in paths], "-o", str(files / "avg")]
        try:
            code = main(argv)
        except SystemExit as exit_info:
            code = exit_info.code
        assert code == 2, argv
        line = _one_error_line(capsys.readouterr().err, "average-checkpoints")
        assert message in line, (argv, line)
    # Writing the average into one of the averaged checkpoints would destroy it.
    assert main(["average-checkpoints", str(first), str(second), "-o", str(second)]) == 2
    assert "is one of the checkpoints" in _one_error_line(capsys.readouterr().err, "average-checkpoints")


# ------------------------------------------------------------------------------------------- real processes


@pytest.mark.slow
def test_real_processes(files, tiny_run):  # noqa: F811
    """The installed ``hf-vaswani`` script: exit status 2, one stderr line, nothing on stdout (two cases; each
    process takes seconds to import torch and transformers)."""
    executable = shutil.which("hf-vaswani") or str(Path(sys.executable).with_name("hf-vaswani"))
    model = str(tiny_run["out"] / "final")
    runs = [
        ("train", [str(files / "tiny.yaml"), "--set", "training.max_steps=abc"], None, "training.max_steps"),
        ("translate", ["--model", model], b"ok\n\xff\n", "not valid UTF-8 at line 2"),
    ]
    processes = [
        (
            command,
            message,
            subprocess.Popen(
                [executable, command, *args],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            ),
            stdin,
        )
        for command, args, stdin, message in runs
    ]
    for command, message, process, stdin in processes:
        out, err = process.communicate(stdin or b"", timeout=180)
        assert process.returncode == 2, (command, err.decode())
        line = _one_error_line(err.decode(), command)
        assert message in line, line
        assert out == b""
