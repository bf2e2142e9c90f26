"""Tests of vaswani_inspect.positions: the positional encoding as each architecture's own module gives it, and the
order-blindness of attention without positions."""

import numpy as np
import pytest
import torch

from hf_vaswani import VaswaniForConditionalGeneration
from tests.helpers import tiny_config
from vaswani_inspect.architectures import attention_modules, position_module
from vaswani_inspect.positions import order_blindness, positional_encoding

KINDS = {"marian": "sinusoidal", "m2m100": "sinusoidal", "mbart": "learned", "bart": "learned", "t5": "relative"}


def _cosine(table: torch.Tensor) -> np.ndarray:
    return torch.nn.functional.cosine_similarity(table[:, None], table[None], dim=-1).numpy()


def test_our_sinusoidal_table_is_what_our_module_gives(model):
    encoding = positional_encoding(model, positions=12)
    expected = model.get_encoder().embed_positions(torch.arange(12)).double()
    assert (encoding.kind, encoding.architecture, encoding.offset) == ("sinusoidal", "vaswani", None)
    np.testing.assert_allclose(encoding.table, expected.numpy(), atol=1e-7)
    np.testing.assert_allclose(encoding.similarity, _cosine(expected), atol=1e-9)
    assert encoding.bias is None


def test_our_learned_table_is_the_rows_of_its_weight():
    torch.manual_seed(0)
    model = VaswaniForConditionalGeneration(tiny_config(position_encoding="learned")).eval()
    encoding = positional_encoding(model, positions=6)
    assert (encoding.kind, encoding.offset) == ("learned", 0)
    np.testing.assert_allclose(encoding.table, model.get_encoder().embed_positions.weight[:6].detach().numpy())


def test_a_model_without_positions_has_no_encoding_and_positions_are_checked(model):
    with pytest.raises(ValueError, match="no positional encoding"):
        positional_encoding(VaswaniForConditionalGeneration(tiny_config(position_encoding="none")))
    with pytest.raises(ValueError, match="beyond"):
        positional_encoding(model, positions=model.config.max_position_embeddings + 1)


def test_without_positions_a_shuffle_changes_no_token_vector(model, tokenizer):
    result = order_blindness(model, tokenizer, "el gato negro come pescado", direction="es-en", seed=3)
    assert result.shuffled_tokens != result.tokens
    assert result.shuffled_tokens[0] == result.tokens[0] == ">>en<<" and result.shuffled_tokens[-1] == "</s>"
    assert [result.tokens[i] for i in result.permutation] == result.shuffled_tokens
    assert sorted(result.shuffled_source.split()) == sorted("el gato negro come pescado".split())  # whole words
    layers = model.config.encoder_layers + 1
    assert result.with_positions.shape == result.without_positions_max.shape == (layers,)
    assert result.without_positions_max.max() < 1e-6
    assert np.all(result.with_positions > 1000 * result.without_positions_max.max())
    assert np.all(result.with_positions_max >= result.with_positions)


def test_one_word_is_no_shuffle_of_words_but_its_pieces_are(model, tokenizer):
    with pytest.raises(ValueError, match="two different words"):
        order_blindness(model, tokenizer, "pescado", direction="es-en")
    result = order_blindness(model, tokenizer, "pescado", direction="es-en", words=False)
    assert sorted(result.shuffled_tokens) == sorted(result.tokens) != result.tokens
    assert result.without_positions_max.max() < 1e-6 < result.with_positions.min()


def _own_output(name: str, model, length: int) -> torch.Tensor:
    """What the architecture's positional module gives when called as its model calls it."""
    module = position_module(model).module
    if name == "marian":
        return module((1, length))
    if name == "m2m100":
        return module(input_ids=torch.full((1, length), model.config.pad_token_id + 1))[0]
    return module(torch.zeros((1, length), dtype=torch.long))[0]  # BART, mBART: rows from `offset` on


@pytest.mark.slow
def test_each_architecture_s_encoding_is_its_own_module_s(tiny_architecture_folders, tokenizer):
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    length = 7
    for name, kind in KINDS.items():
        folder = tiny_architecture_folders[name]
        model = AutoModelForSeq2SeqLM.from_pretrained(folder, attn_implementation="eager").eval()
        encoding = positional_encoding(model, positions=length)
        assert (encoding.kind, encoding.architecture) == (kind, name)
        with torch.no_grad():
            if kind == "relative":
                own = attention_modules(model)["encoder"][0].compute_bias(length, length)[0].double().numpy()
                np.testing.assert_allclose(encoding.bias, own, atol=1e-7)
                for d in range(-(length - 1), length):
                    i = max(0, -d)
                    np.testing.assert_allclose(encoding.bias_by_distance[:, d + length - 1], own[:, i, i + d])
                assert encoding.table is None
            else:
                own = _own_output(name, model, length).double()
                np.testing.assert_allclose(encoding.table, own.numpy(), atol=1e-7)
                np.testing.assert_allclose(encoding.similarity, _cosine(own), atol=1e-9)
                weights = [*position_module(model).module.parameters(), *position_module(model).module.buffers()][0]
                start = encoding.offset
                np.testing.assert_allclose(weights[start : start + length].double().numpy(), encoding.table)
        if name in ("bart", "t5"):  # a learned table switched off, and a relative bias switched off
            result = order_blindness(model, AutoTokenizer.from_pretrained(folder), "el gato negro come pescado")
            assert result.without_positions_max.max() < 1e-6
            assert result.with_positions[-1] > 1000 * result.without_positions_max.max()
