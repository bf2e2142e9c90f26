"""The "What causes it?" tab's patching (`vaswani_demo.causes`): what it shows is `patch_activations`' own result
on the course's banco pair (the numbers of the summary, the cells of the heatmaps), in both languages; sentences
of different token lengths or of the same tokens are refused with both token lists, pieces as words; and it works
on a model of another architecture.

The model is the shipped checkpoint (the module's tests skip without it), on the demo's default backend."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("gradio")

from vaswani_demo.causes import (  # noqa: E402
    COURSE_PAIRS,
    HEAD_SITES,
    find_causes,
    pieces_as_words,
    top_cells,
    word_of,
)
from vaswani_demo.lenses import read_lenses  # noqa: E402
from vaswani_demo.texts import decimal  # noqa: E402
from vaswani_inspect.patching import SITES, patch_activations  # noqa: E402

#: `backend` (tests/vaswani_demo/conftest.py): the shipped checkpoint.
DEMO_MODEL = "shipped"

BANCO, SOFA, DIRECTION = COURSE_PAIRS[0]


@pytest.fixture(scope="module")
def answers(backend):
    """The tab's answer to the banco pair, in English and in Spanish."""
    return {language: find_causes(backend, BANCO, SOFA, DIRECTION, language=language) for language in ("en", "es")}


@pytest.mark.slow
def test_the_tab_shows_what_patch_activations_finds(backend, answers):
    served = backend.runner.served(DIRECTION)
    expected = patch_activations(served.model, served.tokenizer, BANCO, SOFA, direction=DIRECTION, method="attribution")
    for language, answer in answers.items():
        result = answer.result
        assert result.method == "attribution" and result.target_text == expected.target_text
        for site in SITES:
            np.testing.assert_allclose(result.effects[site], expected.effects[site], atol=1e-4, err_msg=site)
        status = answer.status
        for value in (expected.clean_metric, expected.corrupted_metric):
            assert decimal(language, value) in status
        named = top_cells(expected, ("encoder",)) + top_cells(expected, HEAD_SITES)
        assert len(named) == 6
        for site, layer, column, effect in named:
            assert f" {layer}" in status and decimal(language, effect) in status, (site, layer, column)
        assert "▁" not in status
        # The heatmaps are the toolkit's figures of those effects, titled in the page's language.
        for site in SITES:
            ax = answer.figures[site].axes[0]
            np.testing.assert_allclose(ax.images[0].get_array(), expected.effects[site], atol=1e-4)
            assert expected.target_text in ax.get_title()
        labels = [label.get_text() for label in answer.figures["encoder"].axes[0].get_xticklabels()]
        assert labels[6] == "banco→sofá" and not any("▁" in label for label in labels)
    assert "encoder output, layer" in answers["en"].status
    assert "salida del encoder, capa" in answers["es"].status


def test_sentences_of_other_lengths_or_the_same_tokens_are_refused_with_both_token_lists(backend):
    served = backend.runner.served(DIRECTION)
    other = "Me senté en el banco del parque."
    for language, says in (("en", "must have the same number of tokens"), ("es", "deben tener el mismo número")):
        answer = find_causes(backend, BANCO, other, DIRECTION, language=language)
        assert not answer.ok and says in answer.status and not answer.figures
        for text in (BANCO, other):
            ids = served.source_ids(text, DIRECTION)
            assert f"{len(ids)} (" in answer.status
            shown = pieces_as_words(served.tokenizer.convert_ids_to_tokens(ids))
            assert shown in answer.status and "▁" not in shown
    # The toolkit refuses the same pair: the tab's check says what it would.
    with pytest.raises(ValueError, match="same number of tokens"):
        patch_activations(served.model, served.tokenizer, BANCO, other, direction=DIRECTION, method="attribution")
    same = find_causes(backend, BANCO, f"  {BANCO}", DIRECTION)
    assert not same.ok and "read the same tokens" in same.status
    assert "second sentence" in find_causes(backend, BANCO, "", DIRECTION).status
    assert "first sentence" in find_causes(backend, None, SOFA, DIRECTION, language="en").status


def test_pieces_are_shown_as_words():
    assert word_of("▁banco") == "banco" and word_of("</s>") == "</s>"
    assert pieces_as_words([">>en<<", "▁Me", "▁sent", "é", "▁p", "la", "za", ".", "</s>"]) == (
        ">>en<< Me sent·é p·la·za . </s>"
    )


@pytest.mark.slow
def test_another_architecture(tiny_architecture_folders):
    """A Marian model (tiny, random) served by the demo: the tab patches it (by the exact method, its progress
    reported) and reads its lenses in its copy, like ours."""
    from vaswani_demo import DemoBackend

    backend = DemoBackend.load([f"es-en={tiny_architecture_folders['marian']}"], backend="torch")
    try:
        served = backend.runner.served("es-en")
        pairs = [("El gato negro duerme.", f"El {word} negro duerme.") for word in ("perro", "niño", "tren", "café")]
        length = len(served.source_ids(pairs[0][0], "es-en"))
        clean, corrupted = next(p for p in pairs if len(served.source_ids(p[1], "es-en")) == length)
        reported: list[tuple[int, int]] = []
        answer = find_causes(
            backend,
            clean,
            corrupted,
            "es-en",
            "exhaustive",
            progress=lambda *done: reported.append(done),
            language="es",
        )
        assert answer.ok, answer.status
        assert reported[-1][0] == reported[-1][1] > 0  # the exact method reports its progress to the end
        expected = patch_activations(
            served.model, served.tokenizer, clean, corrupted, direction="es-en", method="exhaustive"
        )
        for site in SITES:
            np.testing.assert_allclose(answer.result.effects[site], expected.effects[site], atol=1e-4, equal_nan=True)
        assert served.model is not backend.runner.copy_of(served)  # the hooks went on the copy
        lenses = read_lenses(backend, clean, "es-en", language="es")
        assert lenses.figure is not None and lenses.decoder.translations[-1] in lenses.table
    finally:
        backend.close()
