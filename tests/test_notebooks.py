"""The course notebooks (notebooks/*.ipynb): each runs from top to bottom on the shipped checkpoint, offline, in a
fresh kernel of this Python; and each is committed with its outputs, small, and listed in notebooks/README.md.

Running them is `scripts/run_notebooks.py --out TMP` (nbclient), so that the test runs exactly what the command that
refreshes the committed outputs runs, without rewriting those outputs.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from tests.helpers import PROCESS_TIMEOUT, ROOT

NOTEBOOK_DIR = ROOT / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
#: A committed notebook above this size probably saved figures at a high resolution.
MAX_BYTES = 400_000
#: The one command that sets up what the notebooks need and opens them; every page that tells how to open them
#: names this one.
SETUP_COMMAND = "bash scripts/notebooks.sh"


def test_the_course_notebooks_are_there():
    assert [p.name[:3] for p in NOTEBOOKS] == [f"{i:02d}_" for i in range(1, 11)]


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


def setup_cell(path) -> str:
    """The source of a notebook's set-up cell: its first code cell."""
    notebook = json.loads(path.read_text(encoding="utf-8"))
    return next("".join(cell["source"]) for cell in notebook["cells"] if cell["cell_type"] == "code")


def named_setup_commands(text: str) -> set[str]:
    """Every `bash scripts/X.sh [ARG]` and `pip install` named in `text`."""
    scripts = re.findall(r"bash scripts/[\w-]+\.sh(?: [a-z]\w*)?", text)
    return set(scripts) | set(re.findall(r"pip install [^`\n]*", text))


def test_one_setup_command_named_everywhere():
    pages = {"README.md": ROOT / "README.md", "notebooks/README.md": NOTEBOOK_DIR / "README.md"}
    texts = {name: path.read_text(encoding="utf-8") for name, path in pages.items()}
    texts.update({p.name: setup_cell(p) for p in NOTEBOOKS})
    for name, text in texts.items():
        assert SETUP_COMMAND in text, f"{name} does not name {SETUP_COMMAND!r}"
    # the notebooks' pages name no other way to set them up than the command and the set-up it runs
    for name in ["notebooks/README.md", *(p.name for p in NOTEBOOKS)]:
        others = named_setup_commands(texts[name]) - {SETUP_COMMAND, "bash scripts/setup.sh notebooks"}
        assert not others, f"{name} names another set-up command: {sorted(others)}"


def test_the_setup_command_installs_what_the_notebooks_install_on_colab():
    script = (ROOT / "scripts" / "notebooks.sh").read_text(encoding="utf-8")
    assert "bash scripts/setup.sh notebooks" in script and "jupyter lab notebooks/" in script
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")  # no tomllib: Python 3.10 is supported
    extra = re.findall(r'"([^"]+)"', re.search(r"^notebooks = \[(.*?)\]$", pyproject, flags=re.M | re.S).group(1))
    ours = set(re.fullmatch(r"hf-vaswani\[([\w,]+)\]", extra[0]).group(1).split(","))
    names = {re.split(r"[<>=\[]", requirement)[0].lower() for requirement in extra}
    assert {"jupyterlab", "ipykernel", "nbclient", "nbformat"} <= names  # Jupyter, and what run_notebooks.py runs
    for path in NOTEBOOKS:
        colab = re.search(r"paquetes = \[(.*)\]", setup_cell(path)).group(1)
        assert set(re.findall(r"\[([\w,]+)\]", colab)[0].split(",")) <= ours, f"{path.name}: an extra is missing"
        packages = {re.split(r"[<>=]", p)[0].lower() for p in re.findall(r'"([\w.-]+[<>=][^"]*)"', colab)}
        assert packages <= names, f"{path.name} installs {packages - names} on Colab, the [notebooks] extra not"


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs(path, tmp_path):
    command = [sys.executable, str(ROOT / "scripts" / "run_notebooks.py"), "--out", str(tmp_path), str(path)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=PROCESS_TIMEOUT)
    assert result.returncode == 0, f"{path.name} failed:\n{result.stderr[-6000:]}"
    assert (tmp_path / path.name).is_file()
