"""A built wheel works outside the checkout: the core install (no extras) loads the shipped checkpoint by path and
translates, the commands without a model say where one comes from, and a command whose extra is missing says
which extra to install."""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from tests.helpers import CHECKPOINT, ROOT

pytestmark = pytest.mark.slow


def run(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=900, stdin=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def core_install(tmp_path_factory) -> Path:
    """A fresh virtual environment with the wheel and its core dependencies only (torch pinned first, as
    scripts/setup.sh does); returns its bin folder."""
    root = tmp_path_factory.mktemp("wheel")
    built = run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(root), str(ROOT)], root
    )
    assert built.returncode == 0, built.stderr[-3000:]
    (wheel,) = root.glob("hf_vaswani-*.whl")
    venv.create(root / "venv", with_pip=True)
    bin_dir = root / "venv" / "bin"
    installed = run([str(bin_dir / "pip"), "install", "-q", "torch==2.13.0", str(wheel)], root)
    assert installed.returncode == 0, installed.stderr[-3000:]
    return bin_dir


def test_core_install_has_no_extras(core_install):
    listed = run([str(core_install / "python"), "-m", "pip", "list", "--format=freeze"], core_install)
    names = {line.split("==")[0].lower().replace("_", "-") for line in listed.stdout.splitlines()}
    assert {"torch", "transformers", "tokenizers", "safetensors", "huggingface-hub", "hf-vaswani"} <= names
    assert not names & {"gradio", "matplotlib", "bertviz", "scikit-learn", "scipy", "datasets", "evaluate"}


@pytest.mark.skipif(not CHECKPOINT.is_dir(), reason="the shipped checkpoint is not in this checkout")
def test_core_install_loads_the_shipped_checkpoint_by_path_and_translates(core_install, tmp_path):
    script = (
        "import sys, hf_vaswani\n"
        "from transformers import AutoModelForSeq2SeqLM, AutoTokenizer\n"
        "tokenizer = AutoTokenizer.from_pretrained(sys.argv[1])\n"
        "model = AutoModelForSeq2SeqLM.from_pretrained(sys.argv[1])\n"
        "batch = tokenizer(['>>en<< El gato se comió el ratón.'], return_tensors='pt')\n"
        "print(tokenizer.batch_decode(model.generate(**batch), skip_special_tokens=True)[0])\n"
        "print(hf_vaswani.__file__)\n"
    )
    result = run([str(core_install / "python"), "-c", script, str(CHECKPOINT)], tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    translation, location = result.stdout.strip().splitlines()[-2:]
    assert translation == "The cat ate the mouse."
    assert not location.startswith(str(ROOT))  # the installed package, not the checkout
    translated = run(
        [str(core_install / "hf-vaswani"), "translate", "--model", str(CHECKPOINT), "Tengo hambre."], tmp_path
    )
    assert translated.returncode == 0, translated.stderr[-3000:]
    assert translated.stdout.strip() == "I'm hungry."


def test_without_a_model_the_commands_say_where_one_comes_from(core_install, tmp_path):
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    result = run([str(core_install / "hf-vaswani"), "translate", "Hola."], tmp_path, env)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert "pretrained/vaswani-tatoeba-es-en" in result.stderr and "--model" in result.stderr


@pytest.mark.parametrize(("command", "extra"), [("inspect", "inspect"), ("evaluate", "train"), ("demo", "demo")])
def test_a_command_without_its_extra_names_the_extra(core_install, tmp_path, command, extra):
    arguments = {"inspect": ["el gato", "--out", "report"], "evaluate": ["pairs.tsv"], "demo": []}[command]
    (tmp_path / "pairs.tsv").write_text("The cat.\tEl gato.\n", encoding="utf-8")
    result = run([str(core_install / "hf-vaswani"), command, *arguments, "--model", str(CHECKPOINT)], tmp_path)
    assert result.returncode == 2, result.stderr[-3000:]
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert f"pip install 'hf-vaswani[{extra}]'" in result.stderr
