"""The lecture views' own figures (vaswani_demo/lecture_drawing.py): pieces shown as words, the causal mask and the
heads through W_O, each drawing the numbers of a real `head_computation`."""

from __future__ import annotations

import numpy as np
import pytest

from vaswani_demo.lecture_drawing import plot_causal_mask, plot_concatenation, shown_pieces
from vaswani_inspect import head_computation
from vaswani_inspect.architectures import head_counts


def test_pieces_are_shown_as_words():
    pieces = [">>en<<", "▁el", "▁gato", "s", "▁", "</s>"]
    assert shown_pieces(pieces) == [">>en<<", "el", "gato", "·s", "␣", "</s>"]


@pytest.fixture(scope="module")
def decoder_step(model, tokenizer):
    return head_computation(
        model,
        tokenizer,
        "el gato negro",
        direction="es-en",
        target="the black cat",
        kind="decoder",
        layer=0,
        head=0,
        query=2,
    )


def test_the_causal_mask_writes_the_query_rows_weights_where_it_may_look(decoder_step):
    figure = plot_causal_mask(decoder_step, language="es")
    ax = figure.axes[0]
    drawn = ax.images[0].get_array()
    count = len(decoder_step.key_tokens)
    assert np.array_equal(np.asarray(drawn), np.tril(np.ones((count, count))))
    written = [float(text.get_text()) for text in ax.texts]
    seen = decoder_step.weights[decoder_step.mask]
    assert written == pytest.approx([round(float(w), 2) for w in seen], abs=0.006)
    assert len(written) == decoder_step.query_position + 1  # the query and the pieces before it


def test_the_concatenation_places_this_head_and_draws_its_share_through_w_o(model, decoder_step):
    heads = head_counts(model)["decoder"][1]
    figure = plot_concatenation(decoder_step, heads, language="en")
    top, bottom = (next(ax for ax in figure.axes if ax.get_label() == name) for name in ("concatenated", "head_output"))
    row = np.ma.filled(top.images[0].get_array(), np.nan)[0]
    size = len(decoder_step.output)
    start = decoder_step.head * size
    assert np.allclose(row[start : start + size], decoder_step.output)
    assert np.isnan(np.delete(row, range(start, start + size))).all()  # the other heads are not computed
    assert np.allclose(np.asarray(bottom.images[0].get_array())[0], decoder_step.head_output)
