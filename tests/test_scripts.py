"""The set-up script every other script calls (scripts/setup.sh): it installs on the first run, says what it is doing,
and skips pip when nothing it installs from changed.

It runs here on a copy of the project's pyproject.toml, with a stand-in environment whose ``python`` records its
arguments instead of running pip, so the test installs nothing."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from tests.helpers import PROCESS_TIMEOUT, ROOT

STAND_IN_PYTHON = """#!/usr/bin/env bash
echo "$*" >> "$(dirname "$0")/../calls"
"""


@pytest.fixture
def project(tmp_path):
    """A folder with the set-up script, pyproject.toml and a stand-in environment in it."""
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "setup.sh", tmp_path / "scripts" / "setup.sh")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    bin_dir = tmp_path / "venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "python").write_text(STAND_IN_PYTHON)
    (bin_dir / "python").chmod(0o755)
    (bin_dir / "activate").write_text(f'PATH="{bin_dir}:$PATH"\n')
    return tmp_path


def set_up(project, extras="test", **environment):
    """Run the set-up script; its output and the pip commands it ran (the stand-in's record, which it then empties)."""
    env = {key: value for key, value in os.environ.items() if key != "HF_VASWANI_REINSTALL"}
    env.update(VENV=str(project / "venv"), **environment)
    done = subprocess.run(
        ["bash", str(project / "scripts" / "setup.sh"), extras],
        env=env,
        capture_output=True,
        text=True,
        timeout=PROCESS_TIMEOUT,
        check=True,
    )
    calls_file = project / "venv" / "calls"
    calls = calls_file.read_text().splitlines() if calls_file.exists() else []
    calls_file.unlink(missing_ok=True)
    return done.stdout, calls


def test_the_first_set_up_installs_with_progress_and_says_each_step(project):
    output, calls = set_up(project)
    assert calls == [
        "-m pip install --upgrade pip",
        "-m pip install torch==2.13.0",
        "-m pip install -e .[test]",
        "-m pip install --no-deps transformer-lens==4.3.0 einops==0.8.2",
    ]
    steps = [line for line in output.splitlines() if line.startswith("setup: ")]
    assert len(steps) == 5 and "torch 2.13.0" in steps[1] and steps[-1] == "setup: done"


def test_a_second_set_up_installs_nothing_until_pyproject_or_the_extras_change(project):
    set_up(project)
    output, calls = set_up(project)
    assert calls == [] and "up to date" in output
    _, calls = set_up(project, extras="demo")
    assert calls[-1] == "-m pip install -q -e .[demo]"
    with open(project / "pyproject.toml", "a") as handle:
        handle.write("\n# a change\n")
    _, calls = set_up(project)
    assert "-m pip install -q -e .[test]" in calls
    _, calls = set_up(project, HF_VASWANI_REINSTALL="1")
    assert len(calls) == 4
