"""A folder holding another model's tokenizer, or none, is refused for every architecture (vaswani_inspect.loading,
through hf_vaswani.model_checks.tokenizer_problems), from Python and from the command line, in one line."""

from __future__ import annotations

import json
import shutil
import warnings

import pytest

from hf_vaswani.cli import main
from hf_vaswani.marian.convert import TOKENIZER_FILES as COPIED_TOKENIZER_FILES
from hf_vaswani.model_checks import BrokenModelError
from hf_vaswani.testing import tiny_model
from tests.helpers import tiny_tokenizer
from vaswani_inspect.loading import load_model_and_tokenizer

#: Every file a tokenizer of the tiny architectures is read from.
TOKENIZER_FILES = (*COPIED_TOKENIZER_FILES, "merges.txt")


@pytest.fixture(scope="module")
def folders(tiny_architecture_folders, tmp_path_factory):
    """The tiny folder of every architecture, ours included."""
    tokenizer = tiny_tokenizer()
    ours = tmp_path_factory.mktemp("vaswani") / "vaswani"
    tiny_model(len(tokenizer)).save_pretrained(ours)
    tokenizer.save_pretrained(ours)
    return {**tiny_architecture_folders, "vaswani": ours}


def with_tokenizer_of(folders, model, tokenizer, root):
    """A copy of `model`'s folder with `tokenizer`'s tokenizer files instead of its own (none when None)."""
    folder = root / f"{model}-with-{tokenizer}-tokenizer"
    shutil.copytree(folders[model], folder)
    for name in TOKENIZER_FILES:
        (folder / name).unlink(missing_ok=True)
        if tokenizer is not None and (folders[tokenizer] / name).is_file():
            shutil.copy(folders[tokenizer] / name, folder / name)
    return folder


def load_quietly(folder):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the Marian tokenizer's "pip install sacremoses")
        return load_model_and_tokenizer(folder)


#: (model, tokenizer): what the message must say, with ``{tokens}`` the size of the tokenizer and ``{config}`` the
#: model's config.json, read from the tiny folders (`expected_message`).
MISMATCHES = {
    # (both fairseq ids: only the sizes differ)
    ("m2m100", "mbart"): "the tokenizer has {tokens} tokens and the model's vocabulary {config[vocab_size]}",
    ("marian", "bart"): "the tokenizer's pad_token_id is 1 and the model's {config[pad_token_id]}",
    ("t5", None): "(another model's tokenizer, or none at all)",  # (an empty T5Tokenizer of 104 tokens)
    ("mbart", "bart"): "the tokenizer has {tokens} tokens and the model's vocabulary {config[vocab_size]}",
    ("bart", "t5"): "the tokenizer's pad_token_id is 0 and the model's 1",
    ("vaswani", "m2m100"): "the tokenizer has no token >>en<<",
    ("m2m100", "vaswani"): "the tokenizer's pad_token_id is 0 and the model's 1",
}  # fmt: skip


def expected_message(folders, model, tokenizer):
    """`MISMATCHES[model, tokenizer]` with the sizes and ids it names read from the folders; a size it names is
    checked to be a mismatch (a tokenizer larger than the model's vocabulary)."""
    message = MISMATCHES[model, tokenizer]
    if "{" not in message:
        return message
    config = json.loads((folders[model] / "config.json").read_text(encoding="utf-8"))
    tokens = len(load_quietly(folders[tokenizer])[1])
    if "{tokens}" in message:
        assert tokens > config["vocab_size"], (tokens, config["vocab_size"])
    return message.format(tokens=tokens, config=config)


@pytest.mark.parametrize(("model", "tokenizer"), list(MISMATCHES))
def test_another_models_tokenizer_or_none_is_refused_naming_the_folder(folders, model, tokenizer, tmp_path):
    folder = with_tokenizer_of(folders, model, tokenizer, tmp_path)
    with pytest.raises(BrokenModelError) as caught:
        load_quietly(folder)
    message = str(caught.value)
    assert message.startswith(f"The model at {str(folder)!r} is broken: ") and "\n" not in message
    assert expected_message(folders, model, tokenizer) in message, message


@pytest.mark.parametrize("architecture", ["vaswani", "marian", "m2m100", "mbart", "bart", "t5"])
def test_every_architecture_with_its_own_tokenizer_still_loads(folders, architecture):
    model, tokenizer = load_quietly(folders[architecture])
    assert len(tokenizer) <= model.config.vocab_size


def test_inspect_refuses_an_nllb_model_with_mbart_50s_tokenizer_in_one_line(folders, tmp_path, capsys):
    folder = with_tokenizer_of(folders, "m2m100", "mbart", tmp_path)
    capsys.readouterr()
    argv = ["inspect", "El gato negro.", "--model", str(folder), "--direction", "es-en", "--out", str(tmp_path / "o")]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("hf-vaswani inspect: error: The model at ") and len(err.splitlines()) == 1, err
    assert not (tmp_path / "o").exists()


def edited_config(folders, architecture, root, **values):
    folder = root / f"{architecture}-edited"
    shutil.copytree(folders[architecture], folder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, **values}))
    return folder


def test_a_head_count_the_weights_contradict_is_named(folders, tmp_path):
    """(T5's query rows are num_heads x d_kv: 2 heads for the 4 trained is a shape the weights do not have.)"""
    folder = edited_config(folders, "t5", tmp_path, num_heads=2)
    with pytest.raises(
        BrokenModelError, match=r"is broken: \d+ tensors of the wrong shape: .*SelfAttention\.k\.weight"
    ):
        load_quietly(folder)


@pytest.mark.parametrize("architecture", ["vaswani", "marian"])
def test_a_head_count_that_does_not_divide_d_model_is_one_line(folders, architecture, tmp_path, capsys):
    folder = edited_config(folders, architecture, tmp_path, encoder_attention_heads=3)
    capsys.readouterr()
    argv = ["inspect", "El gato negro.", "--model", str(folder), "--direction", "es-en", "--out", str(tmp_path / "o")]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("hf-vaswani inspect: error: ") and len(err.splitlines()) == 1, err
    assert "divisible by" in err and "3" in err, err
