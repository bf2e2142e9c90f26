"""The course notebooks (notebooks/*.ipynb): each runs from top to bottom on the shipped checkpoint, offline, in a
fresh kernel of this Python; and each is committed with its outputs, small, and listed in notebooks/README.md.

Running them is `scripts/run_notebooks.py --out TMP` (nbclient), so that the test runs exactly what the command that
refreshes the committed outputs runs, without rewriting those outputs.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.helpers import ROOT

NOTEBOOK_DIR = ROOT / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
#: A committed notebook above this size probably saved figures at a high resolution.
MAX_BYTES = 400_000


def test_the_course_notebooks_are_there():
    assert [p.name[:3] for p in NOTEBOOKS] == [f"{i:02d}_" for i in range(1, 9)]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_committed_with_outputs_and_small(path):
    notebook = json.loads(path.read_text(encoding="utf-8"))
    code = [cell for cell in notebook["cells"] if cell["cell_type"] == "code"]
    not_run = [i for i, cell in enumerate(code) if cell["execution_count"] is None]
    assert not not_run, f"{path.name}: code cells {not_run} have no outputs; run scripts/run_notebooks.py"
    outputs = [output for cell in code for output in cell["outputs"]]
    assert not [o for o in outputs if o["output_type"] == "error"], f"{path.name} was saved with an error"
    assert any("image/png" in o.get("data", {}) for o in outputs), f"{path.name} shows no figure"
    assert path.stat().st_size < MAX_BYTES, f"{path.name} is {path.stat().st_size} bytes"


def test_readme_lists_every_notebook_in_order():
    readme = (NOTEBOOK_DIR / "README.md").read_text(encoding="utf-8")
    positions = [readme.find(f"]({p.name})") for p in NOTEBOOKS]
    assert -1 not in positions, "notebooks/README.md does not link every notebook"
    assert positions == sorted(positions)


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs(path, tmp_path):
    command = [sys.executable, str(ROOT / "scripts" / "run_notebooks.py"), "--out", str(tmp_path), str(path)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, f"{path.name} failed:\n{result.stderr[-6000:]}"
    assert (tmp_path / path.name).is_file()
