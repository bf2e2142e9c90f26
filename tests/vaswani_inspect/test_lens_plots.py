"""The logit lens picture: its cells are the lens's top words as a reader sees them, and it follows its input."""

from __future__ import annotations

import pytest

from vaswani_inspect.lens import logit_lens
from vaswani_inspect.lens_plots import drawn_words, plot_logit_lens


def _reader_word(piece: str) -> str:
    word = piece.replace("▁", "").replace("$", r"\$")
    return word if word.strip() else piece


@pytest.fixture(scope="module")
def lenses(model, tokenizer):
    return [
        logit_lens(model, tokenizer, source, direction="es-en", target=target)
        for source, target in (("el gato negro", "the black cat"), ("el perro come", "the dog eats"))
    ]


@pytest.mark.slow
def test_the_cells_are_the_top_words_and_follow_the_input(lenses):
    drawn = [drawn_words(plot_logit_lens(lens)) for lens in lenses]
    for words, lens in zip(drawn, lenses):
        assert words.shape == lens.target_probs.shape
        expected = [[_reader_word(cell[0]) for cell in layer] for layer in lens.top_tokens]
        assert words.tolist() == expected
        assert not any("▁" in word for word in words.ravel() if word != "▁")
    assert drawn[0].tolist() != drawn[1].tolist()


def test_the_texts_are_in_the_language_asked(lenses):
    english, spanish = (plot_logit_lens(lenses[0], language=language) for language in ("en", "es"))
    assert english.axes[0].get_title() != spanish.axes[0].get_title()
    assert drawn_words(english).tolist() == drawn_words(spanish).tolist()
    with pytest.raises(ValueError, match="language must be one of en, es"):
        plot_logit_lens(lenses[0], language="fr")
