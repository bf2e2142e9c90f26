"""Tests of vaswani_inspect.position_plots: the figures draw the numbers of their data."""

import numpy as np
import pytest

from vaswani_inspect.contexts import ContextComparison, WordInContext
from vaswani_inspect.position_plots import plot_contexts, plot_order_blindness, plot_positional_encoding
from vaswani_inspect.positions import OrderBlindness, PositionalEncoding

RANDOM = np.random.default_rng(0)


def _table(kind="sinusoidal", n=6, d=8):
    table = RANDOM.normal(size=(n, d))
    return PositionalEncoding(kind, "vaswani", np.arange(n), table, RANDOM.uniform(-1, 1, size=(n, n)))


def _images(figure):
    return [image.get_array() for ax in figure.axes for image in ax.images]


def test_a_table_is_drawn_with_its_similarity():
    encoding = _table()
    table, similarity = _images(plot_positional_encoding(encoding))
    np.testing.assert_array_equal(table, encoding.table)
    np.testing.assert_array_equal(similarity, encoding.similarity)
    other = _images(plot_positional_encoding(_table("learned")))
    assert not np.array_equal(other[0], table)


def test_a_relative_bias_is_drawn_per_head_in_the_page_s_language():
    bias = RANDOM.normal(size=(3, 5, 5))
    encoding = PositionalEncoding("relative", "t5", np.arange(5), bias=bias)
    figure = plot_positional_encoding(encoding, language="es")
    for drawn, head in zip(_images(figure), bias):
        np.testing.assert_array_equal(drawn, head)
    assert len(_images(figure)) == 3
    assert [ax.get_title() for ax in figure.axes[:3]] == ["cabeza 0", "cabeza 1", "cabeza 2"]
    with pytest.raises(ValueError, match="language"):
        plot_positional_encoding(encoding, language="fr")


def test_order_blindness_draws_both_lines_and_the_shuffled_sentence():
    result = OrderBlindness(
        source="el gato negro",
        tokens=[">>en<<", "▁el", "▁gato", "</s>"],
        shuffled_tokens=[">>en<<", "▁gato", "▁el", "</s>"],
        shuffled_source="gato el",
        permutation=[0, 2, 1, 3],
        kind="sinusoidal",
        architecture="vaswani",
        with_positions=np.array([0.2, 0.3, 0.25]),
        without_positions=np.array([0.0, 1e-9, 2e-9]),
        with_positions_max=np.array([0.4, 0.5, 0.45]),
        without_positions_max=np.array([0.0, 2e-9, 3e-9]),
    )
    figure = plot_order_blindness(result)
    (ax,) = figure.axes
    with_line, without_line = ax.get_lines()
    np.testing.assert_array_equal(with_line.get_ydata(), result.with_positions)
    np.testing.assert_array_equal(without_line.get_ydata(), result.without_positions)
    assert [tick.get_text() for tick in ax.get_xticklabels()] == ["input", "layer 1", "layer 2"]
    assert any(text.get_text().endswith(": gato el") for text in ax.texts)
    assert [text.get_text() for text in ax.get_legend().get_texts()] == [
        "with positions",
        "without positions (largest: 3e-09)",
    ]


def _side(rows, unit):
    # (no record: the figure draws only the rows)
    return WordInContext("el gato negro", "the black cat", None, [unit], ["el", "gato", "negro"], unit, rows,
                         ["the"], np.zeros((1, 1)))  # fmt: skip


def test_contexts_draw_the_similarity_and_each_sentence_s_row():
    first, second = RANDOM.dirichlet(np.ones(3), size=2), RANDOM.dirichlet(np.ones(3), size=2)
    comparison = ContextComparison("gato", _side(first, 1), _side(second, 1), np.array([1, 0.8, 0.6]))
    top, first_ax, second_ax = plot_contexts(comparison, language="es").axes
    np.testing.assert_array_equal(top.get_lines()[0].get_ydata(), comparison.similarity)
    assert [tick.get_text() for tick in top.get_xticklabels()] == ["entrada", "capa 1", "capa 2"]
    for ax, rows in ((first_ax, first), (second_ax, second)):
        np.testing.assert_allclose([bar.get_height() for bar in ax.patches], rows.mean(axis=0))
        assert [tick.get_text() for tick in ax.get_xticklabels()] == ["el", "gato", "negro"]
    _, layer_ax, _ = plot_contexts(comparison, layer=1).axes
    np.testing.assert_allclose([bar.get_height() for bar in layer_ax.patches], first[1])
    with pytest.raises(ValueError, match="layer"):
        plot_contexts(comparison, layer=2)
