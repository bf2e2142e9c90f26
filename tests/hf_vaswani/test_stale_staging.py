"""A run killed while writing (SIGKILL) leaves its temporary sibling; the next run that writes the same output
removes it, and only what is surely garbage (issue 27: ``tmp-*`` folders of killed ``export-onnx`` and
``inspect --overwrite`` runs stayed for ever)."""

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from hf_vaswani.outputs import OutputPlan, StaleStagingWarning, remove_stale_staging
from tests.helpers import PROCESS_TIMEOUT

# Slow as a whole (tests/README.md, the fast lane): a command killed and run again in processes
pytestmark = pytest.mark.slow


def _write_half_and_die(out: Path) -> None:
    """Stages the folder `out` through an OutputPlan, writes half of it, and kills its own process."""
    plan = OutputPlan()
    target = plan.folder(out, "report folder", overwrite=True)
    plan.check()
    with plan.writing() as staged:
        (staged(target) / "index.html").write_text("half written")
        os.kill(os.getpid(), signal.SIGKILL)


def _killed_run(out: Path) -> Path:
    """The temporary sibling a SIGKILLed run left while writing the folder `out`. The run is a child process
    forked from this one, which has imported everything already (a fresh interpreter would spend seconds importing
    hf_vaswani, which imports torch); it runs only `_write_half_and_die`."""
    before = set(out.parent.iterdir())
    pid = os.fork()
    if pid == 0:
        try:
            _write_half_and_die(out)
        finally:
            os._exit(1)  # reached only if writing failed before the kill: never go on running the tests here
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, f"the run ended with status {status}"
    (left,) = set(out.parent.iterdir()) - before
    assert left.name.startswith(f"tmp-{out.name}.") and (left / "index.html").is_file()
    return left


def _bystanders(out: Path) -> list[Path]:
    """Siblings a cleanup must keep: a live run's staging (this process), an older run's name without an owner,
    another machine's, another output's, and a file of the user's."""
    live = out.parent / f"tmp-{out.name}.{os.getpid()}-{_host_of_this_machine()}.abcdefgh"
    others = ["tmp-report.abcdefgh", "tmp-report.1-000000.abcdefgh", "tmp-report2.1-ffffff.abcdefgh", "tmp-report.txt"]
    paths = [live, *(out.parent / name for name in others)]
    for path in paths:
        path.mkdir()
    return paths


def _host_of_this_machine() -> str:
    from hf_vaswani.outputs import _host

    return _host()


def test_the_next_write_removes_only_what_a_killed_run_left(tmp_path):
    out = tmp_path / "report"
    left = _killed_run(out)
    kept = _bystanders(out)
    plan = OutputPlan()
    target = plan.folder(out, "report folder")
    plan.check()
    with pytest.warns(StaleStagingWarning, match="removed what a killed run left while writing"):
        with plan.writing() as staged:
            (staged(target) / "index.html").write_text("whole")
    assert not left.exists() and all(path.is_dir() for path in kept)
    assert (out / "index.html").read_text() == "whole"
    assert remove_stale_staging(out) == []  # nothing more to remove


def test_inspect_overwrite_after_a_killed_run_cleans_its_staging_folder(model, tokenizer, tmp_path):
    """``hf-vaswani inspect --overwrite`` (a subprocess) after a run killed while writing the same report."""
    folder = tmp_path / "model"
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    out = tmp_path / "report"
    out.mkdir()
    (out / "old.txt").write_text("an earlier report")
    left = _killed_run(out)
    kept = _bystanders(out)
    executable = shutil.which("hf-vaswani") or str(Path(sys.executable).with_name("hf-vaswani"))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "MPLBACKEND": "Agg"}
    result = subprocess.run(
        [executable, "inspect", "el gato negro", "--model", str(folder), "--out", str(out), "--overwrite"]
        + ["--max-new-tokens", "4"],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=PROCESS_TIMEOUT,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "hf-vaswani inspect: warning: removed what a killed run left while writing" in result.stderr
    assert str(left) in result.stderr and not left.exists()
    assert all(path.is_dir() for path in kept) and (out / "index.html").is_file() and not (out / "old.txt").exists()
