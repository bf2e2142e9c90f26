"""Bad input to every ``hf-vaswani`` command gives one clear line on stderr and exit code 2, no traceback.

Most cases run `hf_vaswani.cli.main` in-process (what the ``hf-vaswani`` script runs); `test_real_processes`
runs the installed command itself for a few of them, to check the exit status and stderr of the process.
Malformed lines are skipped with one warning line that gives their line numbers (exit code 0), or rejected
with ``--strict``; they are never silently dropped or altered.
"""

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from safetensors.torch import load_file, save_file

from hf_vaswani.cli import main
from tests.helpers import PROCESS_TIMEOUT, TINY_CONFIG, training_corpus, unwritable_folder
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
        out, err = process.communicate(stdin or b"", timeout=PROCESS_TIMEOUT)
        assert process.returncode == 2, (command, err.decode())
        line = _one_error_line(err.decode(), command)
        assert message in line, line
        assert out == b""


# ------------------------------------------------------------------------------------------- checked up front
# Outputs and arguments are checked before any work (no model is loaded: `no_model` makes loading one fail the
# test), outputs are written whole or not at all, and the errors of the libraries a user can cause are one line.


@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory):
    """Two untrained tiny models with the tiny tokenizer, saved as checkpoint folders (no training needed)."""
    from hf_vaswani.testing import tiny_model
    from tests.helpers import tiny_tokenizer

    root = tmp_path_factory.mktemp("tiny-models")
    tokenizer = tiny_tokenizer()
    for seed in (0, 1):
        tiny_model(len(tokenizer), seed=seed).save_pretrained(root / f"checkpoint-{seed}")
        tokenizer.save_pretrained(root / f"checkpoint-{seed}")
    return root


def _run(argv, capsys, command):
    """(exit code, the one error line or None, stdout) of ``hf-vaswani ARGV`` run in-process."""
    try:
        code = main(argv)
    except SystemExit as exit_info:
        code = exit_info.code
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err, captured.err
    return code, (_one_error_line(captured.err, command) if code == 2 else None), captured.out


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


EVALUATE_OUTPUT_ERRORS = {
    "output-is-the-data": (["--direction", "es-en", "--output", "{data}"], "is also an input of this command"),
    "json-is-the-data": (["--output", "{tmp}/h-{{direction}}.txt", "--json", "{data}"], "is also an input"),
    "output-is-json": (
        ["--direction", "es-en", "--output", "{tmp}/same.txt", "--json", "{tmp}/same.txt"],
        "are the same path",
    ),
    "unwritable-json": (["--output", "{tmp}/hyp.txt", "--json", "{ro}/scores.json"], "Cannot write the JSON file"),
    "name-too-long": (["--output", "{tmp}/" + "x" * 300], "File name too long"),
    "device": (["--device", "bogus"], "Unknown device 'bogus'"),
    "beams": (["--num-beams", "1000000000000"], "--num-beams: expected a beam size from 1 to 64"),
}


@pytest.mark.parametrize("options, message", EVALUATE_OUTPUT_ERRORS.values(), ids=EVALUATE_OUTPUT_ERRORS)
def test_evaluate_outputs_are_checked_before_the_model_runs(files, no_model, capsys, options, message):
    data = files / "mixed.tsv"
    before = data.read_bytes()
    options = [option.format(tmp=files, data=data, ro=unwritable_folder(files)) for option in options]
    code, line, out = _run(["evaluate", str(data), "--model", str(files / "model"), *options], capsys, "evaluate")
    assert code == 2 and message in line, line
    assert out == "" and data.read_bytes() == before
    assert not [p for p in files.iterdir() if p.name.startswith(("hyp", "h-", "same", "tmp-"))]


TRANSLATE_ARGUMENT_ERRORS = {
    "device": (["--device", "bogus", "hola"], "Unknown device 'bogus': expected a torch device"),
    "meta-device": (["--device", "meta", "hola"], "Device 'meta' holds no data"),
    "missing-gpu": (["--device", "cuda:7", "hola"], "Device 'cuda:7'"),
    "huge-beam": (["--num-beams", "1000000000000", "hola"], "--num-beams: expected a beam size from 1 to 64"),
    "beam-65": (["--num-beams", "65", "hola"], "--num-beams: expected a beam size from 1 to 64"),
    # Bytes that are not UTF-8 reach Python as surrogate escapes: hf-vaswani translate $'El gato \xff negro.'
    "not-utf8": (["hola", "El gato \udcff negro."], 'argument sentences: "El gato \\xff negro." is not valid UTF-8'),
}


@pytest.mark.parametrize("arguments, message", TRANSLATE_ARGUMENT_ERRORS.values(), ids=TRANSLATE_ARGUMENT_ERRORS)
def test_translate_arguments_are_checked_before_the_model_loads(no_model, capsys, arguments, message):
    code, line, out = _run(["translate", "--model", "unused", *arguments], capsys, "translate")
    assert code == 2 and message in line, line
    assert out == ""


def test_translate_limits_follow_the_model(tiny_models, capsys):
    """--max-new-tokens up to the model's positions - 1, checked once the model is loaded, before generating."""
    model = str(tiny_models / "checkpoint-0")  # 64 positions
    argv = ["translate", "--model", model, "--max-new-tokens", "1000000000", "hola"]
    code, line, out = _run(argv, capsys, "translate")
    assert code == 2 and "max_new_tokens=1000000000 is more than this model can generate: at most 63" in line
    argv = ["translate", "--model", model, "--num-beams", "2", "--max-new-tokens", "63", "Hola."]
    assert _run(argv, capsys, "translate")[0] == 0

    from hf_vaswani.inference import check_generation_settings, load_translator

    loaded, _ = load_translator(model)
    with pytest.raises(ValueError, match="more than the model's vocabulary of 300 tokens"):
        check_generation_settings(loaded, num_beams=301)


def test_translate_refuses_text_mostly_of_unknown_characters(tiny_models, capsys):
    """A text more than half of whose characters the tokenizer does not know (emoji only) is refused; unknown
    characters in other text are named in one warning line and the text is translated."""
    model = str(tiny_models / "checkpoint-0")
    for text in ("😀😀😀", "😀😀😀 !"):
        code, line, out = _run(["translate", "--model", model, "Hola.", text], capsys, "translate")
        assert code == 2 and "Most characters of sentence 2 (😀😀😀) are unknown to the model" in line, line
        assert out == ""
    assert main(["translate", "--model", model, "--num-beams", "1", "--max-new-tokens", "5", "Hola 😀."]) == 0
    captured = capsys.readouterr()
    assert len(captured.out.splitlines()) == 1
    assert "hf-vaswani translate: warning: characters the model has never seen, read as <unk>: sentence 1 (😀)" in (
        captured.err
    )


def test_translate_stdin_line_of_unknown_characters_is_refused(tiny_models, capsys, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO("Hola.\n🙂🙂\n".encode()), encoding="utf-8"))
    code, line, out = _run(["translate", "--model", str(tiny_models / "checkpoint-0")], capsys, "translate")
    assert code == 2 and "line 2 (🙂🙂)" in line and out == ""


def test_average_into_a_non_empty_folder_needs_overwrite_and_replaces_it_whole(tiny_models, tmp_path, capsys):
    shipped = tmp_path / "model"
    shutil.copytree(tiny_models / "checkpoint-1", shipped)
    (shipped / "README.md").write_text("the old model card")
    (shipped / "eval_results.json").write_text("{}")
    before = _snapshot(shipped)
    argv = [
        "average-checkpoints",
        str(tiny_models / "checkpoint-0"),
        str(tiny_models / "checkpoint-1"),
        "-o",
        str(shipped),
    ]
    code, line, _ = _run(argv, capsys, "average-checkpoints")
    assert code == 2 and "is not empty: choose a new folder, or pass --overwrite" in line
    assert _snapshot(shipped) == before
    code, _, _ = _run([*argv, "--overwrite"], capsys, "average-checkpoints")
    assert code == 0
    assert not (shipped / "README.md").exists() and not (shipped / "eval_results.json").exists()
    assert (shipped / "averaged_from.json").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]  # no temporary sibling left
    # A folder holding the inputs is never replaced, even with --overwrite.
    code, line, _ = _run(
        ["average-checkpoints", str(tiny_models / "checkpoint-0"), "-o", str(tiny_models), "--overwrite"],
        capsys,
        "average-checkpoints",
    )
    assert code == 2 and "holds the input" in line


def _damaged_checkpoints(tiny_models: Path, root: Path) -> dict[str, Path]:
    """Checkpoints a user may hand over: a weights header with an unknown dtype, a shard index naming a file
    outside the folder, a config.json that is not UTF-8."""
    good = tiny_models / "checkpoint-1"
    folders = {name: root / name for name in ("bad-dtype", "outside", "latin1")}
    for folder in folders.values():
        shutil.copytree(good, folder)
    data = (good / "model.safetensors").read_bytes()
    size = int.from_bytes(data[:8], "little")
    header = json.loads(data[8 : 8 + size])
    name = next(k for k in header if k != "__metadata__")
    header[name]["dtype"] = "XX"
    text = json.dumps(header, separators=(",", ":")).encode().ljust(size)
    assert len(text) == size
    (folders["bad-dtype"] / "model.safetensors").write_bytes(data[:8] + text + data[8 + size :])
    shutil.move(folders["outside"] / "model.safetensors", root / "elsewhere.safetensors")
    index = {"metadata": {}, "weight_map": {name: "../elsewhere.safetensors"}}
    (folders["outside"] / "model.safetensors.index.json").write_text(json.dumps(index))
    config = (good / "config.json").read_text()
    (folders["latin1"] / "config.json").write_bytes(config.replace('"vaswani"', '"vaswañi"').encode("latin-1"))
    return folders


LIBRARY_ERRORS = {
    "bad-dtype": ("model.safetensors: not a readable safetensors file", []),
    "outside": ("the shard name '../elsewhere.safetensors' is not a file name in the checkpoint folder", []),
    "latin1": ("latin1/config.json: not a valid config.json", ["--dtype", "bfloat16"]),
}


@pytest.mark.parametrize("damage", LIBRARY_ERRORS)
def test_library_errors_of_damaged_checkpoints_are_one_line(tiny_models, tmp_path, capsys, damage):
    """safetensors read errors, a shard index naming a file outside the checkpoint, a config.json that is not
    UTF-8 (the message names the file): one line, exit code 2, nothing written."""
    message, options = LIBRARY_ERRORS[damage]
    folder = _damaged_checkpoints(tiny_models, tmp_path)[damage]
    argv = ["average-checkpoints", str(tiny_models / "checkpoint-0"), str(folder), "-o", str(tmp_path / "avg")]
    code, line, _ = _run([*argv, *options], capsys, "average-checkpoints")
    assert code == 2 and message in line, line
    assert not (tmp_path / "avg").exists()


def test_refused_pickle_is_one_line(tiny_models, tmp_path, capsys):
    """A pickled checkpoint holding an object that torch.load(weights_only=True) refuses: nothing runs, and the
    command says so in one line."""
    import datetime

    import torch
    from safetensors.torch import load_file as load

    pickled = tmp_path / "pickled"
    shutil.copytree(tiny_models / "checkpoint-0", pickled)
    state = load(str(pickled / "model.safetensors"))
    (pickled / "model.safetensors").unlink()
    torch.save({**state, "when": datetime.date(2020, 1, 1)}, pickled / "pytorch_model.bin")
    code, line, _ = _run(["translate", "--model", str(pickled), "hola"], capsys, "translate")
    assert code == 2 and "refuses to run (Unsupported global: GLOBAL datetime.date" in line


@pytest.mark.slow
def test_full_disk_leaves_the_model_folder_as_it_was(tiny_models, tmp_path):
    """`average-checkpoints --overwrite` into a model folder with a file size limit below the weights (a full
    disk; ``prlimit --fsize``): one error line naming the folder, which is as it was, no temporary sibling left."""
    import resource

    shipped = tmp_path / "model"
    shutil.copytree(tiny_models / "checkpoint-1", shipped)
    (shipped / "eval_results.json").write_text("{}\n")
    before = _snapshot(shipped)
    # Below the size of the tokenizer copied from the last checkpoint and of the weights: written in place, the
    # folder would get a truncated tokenizer.json.
    limit = (tiny_models / "checkpoint-1" / "tokenizer.json").stat().st_size // 2

    def small_disk():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    executable = shutil.which("hf-vaswani") or str(Path(sys.executable).with_name("hf-vaswani"))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    env.pop("HF_VASWANI_TRACEBACK", None)
    checkpoints = [str(tiny_models / "checkpoint-0"), str(tiny_models / "checkpoint-1")]
    result = subprocess.run(
        [executable, "average-checkpoints", *checkpoints, "-o", str(shipped), "--overwrite"],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        preexec_fn=small_disk,
        timeout=PROCESS_TIMEOUT,
    )
    assert result.returncode == 2, result.stderr[-3000:]
    line = _one_error_line(result.stderr, "average-checkpoints")
    assert "File too large" in line and f"{str(shipped)!r} left as before" in line, line
    assert _snapshot(shipped) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]
