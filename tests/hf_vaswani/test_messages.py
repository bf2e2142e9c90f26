"""One-line errors that name what is wrong (issue 27): a tokenizer file that is not JSON is named (transformers said
only "Expecting value: line 1 column 1", and the CTranslate2 path took it for a missing tokenizer); a full disk says
"[Errno 28]" once, not "[Errno 28] [Errno 28]"; ``align-eval --threshold`` without ``--method threshold`` (which
alone reads it) is refused.

Each kind of error is checked once in a real process of the installed ``hf-vaswani`` (its exit status and stderr);
its other cases run `hf_vaswani.cli.main`, which that command calls, in-process: a process spends seconds importing
torch and transformers before it does anything.
"""

import errno
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hf_vaswani.cli import main
from hf_vaswani.model_folder import check_json_files
from hf_vaswani.outputs import OutputPlan
from hf_vaswani.testing import tiny_model
from tests.helpers import PROCESS_TIMEOUT, tiny_tokenizer

# Slow as a whole (tests/README.md, the fast lane): commands run in real processes
pytestmark = pytest.mark.slow


def _cli(*argv: str) -> subprocess.CompletedProcess:
    executable = shutil.which("hf-vaswani") or str(Path(sys.executable).with_name("hf-vaswani"))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "MPLBACKEND": "Agg"}
    env.pop("HF_VASWANI_TRACEBACK", None)
    return subprocess.run(
        [executable, *argv], capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL, timeout=PROCESS_TIMEOUT
    )


@pytest.fixture
def in_process(capsys, monkeypatch):
    """``in_process(*argv)``: `main(argv)` run here, as a `subprocess.CompletedProcess` of its exit code and what it
    printed."""
    monkeypatch.delenv("HF_VASWANI_TRACEBACK", raising=False)

    def run(*argv: str) -> subprocess.CompletedProcess:
        capsys.readouterr()
        code = main(list(argv))
        captured = capsys.readouterr()
        return subprocess.CompletedProcess(list(argv), code, captured.out, captured.err)

    return run


def _error_line(result: subprocess.CompletedProcess, command: str) -> str:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr[-3000:]
    errors = [line for line in lines if line.startswith(f"hf-vaswani {command}: error: ")]
    assert len(errors) == 1, result.stderr
    return errors[0]


@pytest.fixture(scope="module")
def model_folder(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("messages") / "model"
    tokenizer = tiny_tokenizer()
    tiny_model(len(tokenizer)).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.mark.parametrize("name", ["tokenizer.json", "tokenizer_config.json"])
def test_a_tokenizer_file_that_is_not_json_is_named(model_folder, tmp_path, name, in_process):
    """(A real process for tokenizer.json and PyTorch, `main` in-process for the other cases.)"""
    broken = tmp_path / "broken"
    shutil.copytree(model_folder, broken)
    (broken / name).write_text("not json")
    with pytest.raises(ValueError, match=f"{name}' is not valid JSON"):
        check_json_files(broken)
    for backend in ("torch", "ctranslate2"):
        if backend == "ctranslate2":
            pytest.importorskip("ctranslate2")
        run = _cli if (name, backend) == ("tokenizer.json", "torch") else in_process
        line = _error_line(run("translate", "--model", str(broken), "--backend", backend, "Hola."), "translate")
        assert f"{str(broken / name)!r} is not valid JSON (Expecting value: line 1 column 1" in line, line


def test_a_full_disk_says_its_errno_once(tmp_path):
    plan = OutputPlan()
    target = plan.file(tmp_path / "out.txt", "hypotheses file")
    with pytest.raises(OSError) as caught:
        with plan.writing() as staged:
            staged(target)
            raise OSError(errno.ENOSPC, f"Cannot write the hypotheses file: {os.strerror(errno.ENOSPC)}")
    assert str(caught.value).count("[Errno 28]") == 1 and caught.value.errno == errno.ENOSPC
    assert "nothing was written" in str(caught.value)


def test_the_command_on_a_full_disk_says_its_errno_once(model_folder, tmp_path):
    """``hf-vaswani evaluate --output /dev/full`` (every write fails with ENOSPC), in a subprocess."""
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full on this system")
    data = tmp_path / "pairs.tsv"
    data.write_text("The cat.\tEl gato.\n", encoding="utf-8")
    result = _cli(
        "evaluate", str(data), "--model", str(model_folder), "--backend", "torch", "--direction", "es-en",
        "--num-beams", "1", "--max-new-tokens", "3", "--output", "/dev/full",
    )  # fmt: skip
    line = _error_line(result, "evaluate")
    assert line.count("[Errno 28]") == 1 and "No space left on device" in line, line


def test_align_eval_refuses_a_threshold_that_its_method_ignores(model_folder, tmp_path, in_process):
    """The refusal in a real process; the same options with ``--method threshold`` run in-process."""
    for name, text in (("gold.txt", "0-0\n"), ("es.txt", "gato\n"), ("en.txt", "cat\n")):
        (tmp_path / name).write_text(text, encoding="utf-8")
    files = ["--gold", "gold.txt", "--source-file", "es.txt", "--target-file", "en.txt"]
    files = [str(tmp_path / f) if f.endswith(".txt") else f for f in files]
    argv = ["align-eval", *files, "--model", str(model_folder)]
    line = _error_line(_cli(*argv, "--threshold", "0.3"), "align-eval")
    assert line.endswith("--threshold is read by --method threshold only, not by --method argmax."), line
    assert in_process(*argv, "--threshold", "0.3", "--method", "threshold").returncode == 0
