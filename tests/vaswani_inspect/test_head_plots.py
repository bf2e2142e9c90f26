"""`plot_head_computation` draws the computation's own numbers, in the page's language."""

from __future__ import annotations

import numpy as np
import pytest

from vaswani_inspect import head_computation
from vaswani_inspect.head_plots import plot_head_computation

TARGET = "the black cat"


def _computation(model, tokenizer, source: str, query: int):
    return head_computation(
        model, tokenizer, source, direction="es-en", target=TARGET, kind="decoder", layer=1, head=0, query=query
    )


def _axes(figure, name: str):
    (found,) = [ax for ax in figure.axes if ax.get_label() == name]
    return found


def _bar_lengths(figure, name: str) -> np.ndarray:
    (bars,) = _axes(figure, name).containers
    return np.array([patch.get_width() for patch in bars])


@pytest.mark.slow
def test_the_figure_draws_the_computation(model, tokenizer):
    first = _computation(model, tokenizer, "el gato negro", query=1)
    figure = plot_head_computation(first, language="es")
    np.testing.assert_allclose(_bar_lengths(figure, "weights"), first.weights, atol=1e-7)
    np.testing.assert_allclose(_bar_lengths(figure, "scores"), first.scores, atol=1e-6)
    logits = np.where(first.mask, first.scores * first.scale + first.bias, 0.0)
    np.testing.assert_allclose(_bar_lengths(figure, "logits"), logits, atol=1e-6)
    np.testing.assert_array_equal(_axes(figure, "keys").images[0].get_array(), first.keys)
    np.testing.assert_array_equal(_axes(figure, "values").images[0].get_array(), first.values)
    np.testing.assert_array_equal(_axes(figure, "output").images[0].get_array()[0], first.output)
    masked = sum(text.get_text() == "oculta" for text in _axes(figure, "weights").texts)
    assert masked == int((~first.mask).sum()) > 0  # the causal mask hides the keys after the query
    assert "capa 1, cabeza 0" in figure._suptitle.get_text()
    labels = [label.get_text() for label in _axes(figure, "keys").get_yticklabels()]
    assert "▁bla" in first.key_tokens and "bla" in labels and "▁bla" not in labels  # pieces shown as words

    for other in (
        _computation(model, tokenizer, "el gato negro", query=3),
        _computation(model, tokenizer, "el perro", 1),
    ):
        drawn = plot_head_computation(other)
        assert not np.array_equal(_bar_lengths(drawn, "weights"), _bar_lengths(figure, "weights"))
        np.testing.assert_allclose(_bar_lengths(drawn, "weights"), other.weights, atol=1e-7)
    with pytest.raises(ValueError, match="language must be one of en, es"):
        plot_head_computation(first, language="fr")
