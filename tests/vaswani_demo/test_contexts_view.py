"""Two sentences side by side (`vaswani_demo.contexts_view`): the course's banco pair is offered, the translations
and similarities shown are `compare_contexts`' own, and a word missing from a sentence, or an empty box, is said
in the page's language instead of drawn."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("gradio")

from vaswani_demo.contexts_view import BANCO, contexts_outputs, similarity_text  # noqa: E402
from vaswani_demo.testing import TINY_SENTENCES  # noqa: E402
from vaswani_demo.texts import message  # noqa: E402
from vaswani_inspect.contexts import compare_contexts  # noqa: E402


def test_the_course_pair_is_the_banco_pair():
    first, second, word = BANCO
    assert word in first and word in second and first != second


@pytest.mark.slow
def test_the_view_shows_compare_contexts_numbers(backend):
    direction = backend.choices.directions[0]
    first, second = TINY_SENTENCES[0], TINY_SENTENCES[1]
    word = first.split()[0].strip(".,!?¿¡")
    second = f"{second} {word}"  # the word in both
    shown = contexts_outputs(backend, direction, first, second, word, language="es")
    served = backend.runner.served(direction)
    expected = compare_contexts(served.model, served.tokenizer, first, second, word, direction=direction)
    assert shown[:3] == (
        expected.first.translation,
        expected.second.translation,
        similarity_text(expected.similarity, "es"),
    )
    assert shown[2].startswith("Similitud (coseno)")
    (line,) = shown[3].axes[0].lines
    np.testing.assert_allclose(line.get_ydata(), expected.similarity, atol=1e-9)


def test_what_cannot_be_compared_is_said(backend):
    direction = backend.choices.directions[0]
    assert contexts_outputs(backend, direction, "", "x", "y")[2] == message("en", "contexts.none")
    _, _, said, figure = contexts_outputs(backend, direction, "uno dos", "tres", "dos", language="es")
    assert figure is None and said == message("es", "contexts.missing", word="dos", which="la segunda oración")
