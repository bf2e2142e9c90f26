"""No command replaces the folder it runs in: an output path that is empty or ".", the current folder, a folder
above it or the root is refused before any work, even with --overwrite, and every file stays (one shared check in
`hf_vaswani.outputs`)."""

from __future__ import annotations

import pytest

from hf_vaswani.cli import main
from tests.helpers import CHECKPOINT

#: Each command that writes a folder, with the output path given as "{out}".
COMMANDS = {
    "inspect": ["inspect", "el gato", "--out", "{out}", "--model", "{model}"],
    "explain": ["explain", "el gato", "--out", "{out}", "--model", "{model}"],
    "head-importance": ["head-importance", "--pairs", "{pairs}", "--out", "{out}", "--model", "{model}"],
    "export-marian": ["export-marian", "{model}", "{out}"],
    "export-ctranslate2": ["export-ctranslate2", "{model}", "{out}"],
    "export-onnx": ["export-onnx", "{model}", "{out}"],
    "convert-marian": ["convert-marian", "{model}", "{out}"],
    "average-checkpoints": ["average-checkpoints", "{model}", "-o", "{out}"],
}


@pytest.fixture
def working_folder(tmp_path, monkeypatch):
    """The current folder of the run, holding a file that must survive, and a sub-folder."""
    here = tmp_path / "work" / "here"
    here.mkdir(parents=True)
    (here / "notes.txt").write_text("keep me", encoding="utf-8")
    (tmp_path / "pairs.tsv").write_text("the cat\tel gato\n", encoding="utf-8")
    monkeypatch.chdir(here)
    return here


@pytest.mark.skipif(not CHECKPOINT.is_dir(), reason="the shipped checkpoint is not in this checkout")
@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("out", ["", ".", "..", "/"])
def test_the_current_folder_and_those_above_it_are_never_an_output(command, out, working_folder, capsys):
    pairs = working_folder.parent.parent / "pairs.tsv"
    argv = [part.format(out=out, model=CHECKPOINT, pairs=pairs) for part in COMMANDS[command]]
    code = main([*argv, "--overwrite"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.startswith(f"hf-vaswani {command}: error: ") and "\n" not in err, err
    assert any(why in err for why in ("the current folder", "a folder above", "the root of the file system")), err
    assert (working_folder / "notes.txt").read_text(encoding="utf-8") == "keep me"
    assert sorted(p.name for p in working_folder.iterdir()) == ["notes.txt"]


@pytest.mark.skipif(not CHECKPOINT.is_dir(), reason="the shipped checkpoint is not in this checkout")
@pytest.mark.parametrize("option", ["--output", "--json"])
@pytest.mark.parametrize("directions", [["--direction", "es-en"], []])
def test_evaluate_refuses_an_empty_file_path_as_every_command_does(option, directions, working_folder, capsys):
    """An empty --output or --json was taken as "not given": the scores were printed and nothing written."""
    pairs = working_folder.parent.parent / "pairs.tsv"
    code = main(["evaluate", str(pairs), option, "", *directions, "--model", str(CHECKPOINT)])
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert code == 2 and err.startswith("hf-vaswani evaluate: error: ") and "\n" not in err, err
    assert "is the current folder" in err and captured.out == ""
    assert sorted(p.name for p in working_folder.iterdir()) == ["notes.txt"]
