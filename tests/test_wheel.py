"""A built wheel works outside the checkout: the core install (no extras) loads the shipped checkpoint by path and
translates, the commands without a model say where one comes from, and a command whose extra is missing says
which extra to install."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from tests.helpers import CHECKPOINT, PROCESS_TIMEOUT, ROOT, finish

pytestmark = pytest.mark.slow


def _venv_env(**extra: str) -> dict[str, str]:
    """The environment of the processes run in the venv: this one, but letting Python write bytecode. The venv is
    installed without compiling it (pip's compiling of every file of torch and transformers was most of the
    install's time), so the first process compiles only the modules it imports and the later ones reuse them."""
    env = {**os.environ, **extra}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _popen(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.Popen:
    return subprocess.Popen(
        args,
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
    )


def run(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return finish(_popen(args, cwd, env), timeout=PROCESS_TIMEOUT)


@pytest.fixture(scope="module")
def core_install(tmp_path_factory) -> Path:
    """A fresh virtual environment with the wheel and its core dependencies only (torch pinned, as
    scripts/setup.sh does); returns its bin folder. This environment's pip installs into it (``--python``):
    the venv needs no pip of its own, which spares bootstrapping one."""
    root = tmp_path_factory.mktemp("wheel")
    built = run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(root), str(ROOT)], root
    )
    assert built.returncode == 0, built.stderr[-3000:]
    (wheel,) = root.glob("hf_vaswani-*.whl")
    venv.create(root / "venv", with_pip=False)
    bin_dir = root / "venv" / "bin"
    installed = run([*_pip_for(bin_dir), "install", "-q", "--no-compile", "torch==2.13.0", str(wheel)], root)
    assert installed.returncode == 0, installed.stderr[-3000:]
    return bin_dir


def _pip_for(bin_dir: Path) -> list[str]:
    return [sys.executable, "-m", "pip", "--python", str(bin_dir / "python")]


def test_core_install_has_no_extras(core_install):
    listed = run([*_pip_for(core_install), "list", "--format=freeze"], core_install)
    names = {line.split("==")[0].lower().replace("_", "-") for line in listed.stdout.splitlines()}
    assert {"torch", "transformers", "tokenizers", "safetensors", "huggingface-hub", "hf-vaswani"} <= names
    assert not names & {"gradio", "matplotlib", "bertviz", "scikit-learn", "scipy", "datasets", "evaluate"}


def _printed(bin_dir: Path, script: str, argument: Path, cwd: Path) -> list[str]:
    """The lines a Python `script` prints in the venv, given one argument; it must succeed."""
    result = run([str(bin_dir / "python"), "-c", script, str(argument)], cwd, _venv_env())
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout.strip().splitlines()


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
    translation, location = _printed(core_install, script, CHECKPOINT, tmp_path)[-2:]
    assert translation == "The cat ate the mouse."
    assert not location.startswith(str(ROOT))  # the installed package, not the checkout
    # After the first process has written the bytecode of what they both import.
    translated = run(
        [str(core_install / "hf-vaswani"), "translate", "--model", str(CHECKPOINT), "Tengo hambre."],
        tmp_path,
        _venv_env(),
    )
    assert translated.returncode == 0, translated.stderr[-3000:]
    assert translated.stdout.strip() == "I'm hungry."


def test_core_install_renders_model_cards_from_its_own_templates(core_install, tmp_path):
    """The templates of model_cards/ travel inside the wheel (as hf_vaswani/model_cards, pyproject.toml)."""
    script = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from hf_vaswani import VaswaniConfig\n"
        "from hf_vaswani.marian.cards import write_exported_card\n"
        "from hf_vaswani.model_card import CARDS\n"
        "write_exported_card(Path(sys.argv[1]), 'exported', VaswaniConfig(), 0.0, [])\n"
        "print(json.dumps(sorted(path.name for path in CARDS.iterdir())))\n"
        "print(CARDS.resolve())\n"
    )
    names, location = _printed(core_install, script, tmp_path, tmp_path)[-2:]
    assert json.loads(names) == sorted(path.name for path in (ROOT / "model_cards").iterdir())
    assert not location.startswith(str(ROOT))
    assert (tmp_path / "README.md").read_text(encoding="utf-8").startswith("---\nlibrary_name: transformers\n")


#: The commands that must fail in one line in the core install, each with its arguments.
FAILING_COMMANDS = {
    "translate-without-a-model": ["translate", "Hola."],
    "inspect": ["inspect", "el gato", "--out", "report", "--model", str(CHECKPOINT)],
    "evaluate": ["evaluate", "pairs.tsv", "--model", str(CHECKPOINT)],
    "demo": ["demo", "--model", str(CHECKPOINT)],
}


@pytest.fixture(scope="module")
def failed_commands(core_install, tmp_path_factory) -> dict[str, subprocess.CompletedProcess]:
    """`FAILING_COMMANDS` run by the installed ``hf-vaswani`` script, all at once (each process spends seconds
    importing torch and transformers, one core each), each in a folder of its own with a ``pairs.tsv``."""
    processes = {}
    for name, arguments in FAILING_COMMANDS.items():
        folder = tmp_path_factory.mktemp(name)
        (folder / "pairs.tsv").write_text("The cat.\tEl gato.\n", encoding="utf-8")
        command = [str(core_install / "hf-vaswani"), *arguments]
        processes[name] = _popen(command, folder, _venv_env(HF_HUB_OFFLINE="1"))
    return {name: finish(process, timeout=PROCESS_TIMEOUT) for name, process in processes.items()}


def test_without_a_model_the_commands_say_where_one_comes_from(failed_commands):
    result = failed_commands["translate-without-a-model"]
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert "pretrained/vaswani-tatoeba-es-en" in result.stderr and "--model" in result.stderr


@pytest.mark.parametrize(("command", "extra"), [("inspect", "inspect"), ("evaluate", "train"), ("demo", "demo")])
def test_a_command_without_its_extra_names_the_extra(failed_commands, command, extra):
    result = failed_commands[command]
    assert result.returncode == 2, result.stderr[-3000:]
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert f"pip install 'hf-vaswani[{extra}]'" in result.stderr
