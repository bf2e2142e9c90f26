"""vaswani_inspect without its optional dependencies (the [inspect] extra): a clear error that says what to install,
and ``hf-vaswani`` keeps working for every other command."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from tests.helpers import PROCESS_TIMEOUT, ROOT

#: Makes the listed top-level modules impossible to import, as if they were not installed.
BLOCKER = """
import importlib.abc, sys

class Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, Blocker())
"""


def _run_without(blocked: set[str], script: str) -> dict:
    code = f"BLOCKED = {sorted(blocked)!r}\n{BLOCKER}\n{textwrap.dedent(script)}"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=PROCESS_TIMEOUT, cwd=ROOT
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_a_missing_dependency_of_the_package_says_to_install_the_extra():
    outcome = _run_without(
        {"numpy"},
        """
        import json
        try:
            import vaswani_inspect
        except ImportError as error:
            print(json.dumps({"type": type(error).__name__, "message": str(error), "name": error.name,
                              "cause": type(error.__cause__).__name__, "cause_name": error.__cause__.name}))
        """,
    )
    assert outcome["type"] == "ModuleNotFoundError" and outcome["name"] == "numpy"
    assert "pip install 'hf-vaswani[inspect]'" in outcome["message"] and "numpy" in outcome["message"]
    assert outcome["cause"] == "ModuleNotFoundError" and outcome["cause_name"] == "numpy"


@pytest.mark.slow
def test_without_matplotlib_only_the_drawing_commands_fail(tmp_path):
    outcome = _run_without(
        {"matplotlib"},
        f"""
        import contextlib, io, json
        import vaswani_inspect  # the package itself needs no matplotlib
        from hf_vaswani.cli import build_parser, main

        build_parser().parse_args(["translate", "hola"])  # every command is still there
        errors = {{}}
        for argv in (["inspect", "hola", "--out", {str(tmp_path / "i")!r}],
                     ["compare-bert", "--sentences", "s.txt", "--out", {str(tmp_path / "c")!r}]):
            stderr = io.StringIO()
            with contextlib.redirect_stderr(stderr):
                status = main(argv)
            errors[argv[0]] = [status, stderr.getvalue()]
        print(json.dumps(errors))
        """,
    )
    for command, (status, err) in outcome.items():
        assert status == 2, (command, err)
        assert err.strip().splitlines() == [
            f"hf-vaswani {command}: error: this command needs the [inspect] extra (matplotlib is not installed): "
            "pip install 'hf-vaswani[inspect]'"
        ]
    assert not (tmp_path / "i").exists() and not (tmp_path / "c").exists()
