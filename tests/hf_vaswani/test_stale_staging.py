"""A run killed while writing (SIGKILL) leaves its temporary sibling; the next run that writes the same output
removes it, and only what is surely garbage (issue 27: ``tmp-*`` folders of killed ``export-onnx`` and
``inspect --overwrite`` runs stayed for ever)."""

import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from hf_vaswani.outputs import OutputPlan, StaleStagingWarning, remove_stale_staging

#: Stages the folder argv[1] through an OutputPlan, writes half of it, and kills itself.
KILLED_WRITER = textwrap.dedent(
    """
    import os, signal, sys
    from hf_vaswani.outputs import OutputPlan

    plan = OutputPlan()
    out = plan.folder(sys.argv[1], "report folder", overwrite=True)
    plan.check()
    with plan.writing() as staged:
        (staged(out) / "index.html").write_text("half written")
        os.kill(os.getpid(), signal.SIGKILL)
    """
)


def _killed_run(out: Path) -> Path:
    """The temporary sibling a SIGKILLed run left while writing the folder `out`."""
    before = set(out.parent.iterdir())
    result = subprocess.run([sys.executable, "-c", KILLED_WRITER, str(out)], capture_output=True, timeout=120)
    assert result.returncode == -signal.SIGKILL, result.stderr
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
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "hf-vaswani inspect: warning: removed what a killed run left while writing" in result.stderr
    assert str(left) in result.stderr and not left.exists()
    assert all(path.is_dir() for path in kept) and (out / "index.html").is_file() and not (out / "old.txt").exists()
