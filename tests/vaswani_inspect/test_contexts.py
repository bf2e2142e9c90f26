"""Tests of vaswani_inspect.contexts: one word in two sentences, checked against the model's own passes."""

import numpy as np
import pytest
import torch

from vaswani_inspect.contexts import compare_contexts, word_pieces
from vaswani_inspect.words import text_words, word_spans

FIRST, SECOND = "el gato negro", "el gato come pescado"


@pytest.fixture(scope="module")
def comparison(model, tokenizer):
    return compare_contexts(
        model, tokenizer, FIRST, SECOND, "gato", direction="es-en", generate_kwargs={"max_new_tokens": 4}
    )


def test_the_word_is_found_in_both_sentences(comparison):
    for side, sentence in zip(comparison.sides, (FIRST, SECOND)):
        assert side.sentence == sentence and side.translation == side.record.target_text
        assert [side.record.source_tokens[p] for p in side.pieces] == ["▁gato"]
        assert side.source_units[side.unit] == "gato"


def test_at_the_input_the_same_pieces_at_the_same_positions_are_the_same_vector(comparison, model):
    first, second = comparison.sides
    assert first.pieces == second.pieces
    assert [first.record.source_ids[p] for p in first.pieces] == [second.record.source_ids[p] for p in second.pieces]
    assert comparison.similarity.shape == (model.config.encoder_layers + 1,)
    assert comparison.similarity[0] == pytest.approx(1.0, abs=1e-9)
    assert np.all(comparison.similarity[1:] < 1.0)  # the contexts differ after the first layer


def test_the_rows_are_the_model_s_attention(comparison, model):
    for side in comparison.sides:
        record = side.record
        with torch.no_grad():
            output = model.get_encoder()(input_ids=torch.tensor([record.source_ids]), output_attentions=True)
        row = torch.stack(output.attentions)[:, 0].mean(1)[:, side.pieces[0]].numpy()  # "gato" is one piece
        units = word_spans(record.source_tokens, record.special_tokens)
        own = np.stack([row[:, unit].sum(-1) for unit in units], axis=-1)  # a word takes what its pieces take
        np.testing.assert_allclose(side.self_attention, own, atol=1e-6)
        targets = text_words(record.target_tokens, record.special_tokens)
        assert side.target_words == targets.words
        for j, pieces in enumerate(targets.pieces):  # row p - 1 predicts piece p
            expected = record.cross[:, :, [p - 1 for p in pieces], side.pieces[0]].mean(axis=(1, 2))
            np.testing.assert_allclose(side.cross_attention[:, j], expected if pieces else 0.0, atol=1e-6)


def test_a_missing_word_names_the_sentence_s_words(record):
    assert word_pieces(record, "GATO") == [2]
    with pytest.raises(ValueError, match="'el', 'gato', 'negro'"):
        word_pieces(record, "perro")
