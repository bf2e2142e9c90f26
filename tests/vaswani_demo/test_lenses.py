"""The tab's lenses (`vaswani_demo.lenses`): the grid shows `logit_lens`' own first choices and probabilities, its
sentence the layers `LogitLens.first_top_layer` finds, the table `decoder_lens`' translations; in both languages,
pieces as words; an empty sentence gets the sentence that says what to do.

The model is a tiny random one (`DEMO_MODEL = "tiny"`): what is checked is that the page shows the toolkit's
numbers, whatever they are."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("gradio")

from vaswani_demo.lenses import (  # noqa: E402
    layer_name,
    longest,
    read_lenses,
    translations_table,
)
from vaswani_inspect.lens import decoder_lens, logit_lens  # noqa: E402
from vaswani_inspect.lens_plots import drawn_words  # noqa: E402

SOURCE, DIRECTION = "El gato negro duerme.", "es-en"


@pytest.mark.slow
def test_the_grid_and_the_table_show_the_lenses(backend):
    served = backend.runner.served(DIRECTION)
    expected = logit_lens(served.model, served.tokenizer, SOURCE, direction=DIRECTION)
    limit = longest(expected)
    decoded = decoder_lens(served.model, served.tokenizer, SOURCE, direction=DIRECTION, max_new_tokens=limit)
    answer = read_lenses(backend, SOURCE, DIRECTION, language="en")
    np.testing.assert_allclose(answer.lens.top_probs, expected.top_probs, atol=1e-5)
    assert answer.decoder.translations == decoded.translations
    # The grid is the toolkit's figure of that lens, its words without "▁".
    words = drawn_words(answer.figure)
    assert words.tolist() == [
        [word.replace("▁", "") for word in [row[0] for row in layer]] for layer in expected.top_tokens
    ]
    np.testing.assert_allclose(answer.figure.axes[0].images[0].get_array(), expected.top_probs[:, :, 0], atol=1e-5)
    for language, embeddings in (("en", "input (embeddings)"), ("es", "entrada (embeddings)")):
        assert layer_name(0, language) == embeddings and layer_name(2, language) == "2"
        table = answer.table if language == "en" else translations_table(answer.decoder, language)
        assert embeddings in table
        for translation in decoded.translations:
            assert translation.replace("|", "\\|") in table
        assert table.count("\n") == len(decoded.translations) + 1  # the header, its rule, a row per layer
    # The note names, for each word, the first row from which the lens writes it (or "–").
    shown = [
        layer_name(row, "en") if row is not None else "–"
        for row in map(expected.first_top_layer, range(len(expected.target_ids) - 1))
    ]
    words = [token.replace("▁", "") or token for token in expected.target_tokens[1:]]
    assert answer.note.startswith("From which decoder layer on")
    assert ", ".join(f"“{word}” {where}" for word, where in zip(words, shown)) in answer.note


def test_an_empty_sentence_says_what_to_do(backend):
    for language, says in (("en", "Click"), ("es", "Haz clic")):
        answer = read_lenses(backend, "  ", DIRECTION, language=language)
        assert answer.figure is None and answer.note.startswith(says)
