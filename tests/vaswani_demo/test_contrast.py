""" "Why this word and not that one" (`vaswani_demo.contrast`): the candidates offered are the step's own, the
chosen piece left out; the bars are the contrastive attribution of the chosen piece against the candidate (the
gradient method's `contrast=` scores of that step's row, summed into source words), the sentence its log-probability
difference; a step after the end, no candidate or one the step does not have get a sentence that says what to do.

The model is a tiny random one (`DEMO_MODEL = "tiny"`): the page must show the toolkit's numbers, whatever they are."""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("gradio")
pytest.importorskip("captum")

from vaswani_demo.contrast import CONTRAST_METHOD, source_word_scores, step_foils, why_not  # noqa: E402
from vaswani_demo.steps_view import trace_of_record  # noqa: E402
from vaswani_demo.texts import decimal  # noqa: E402
from vaswani_inspect.attribution.registry import method_entry  # noqa: E402


@pytest.fixture(scope="module")
def traced(backend):
    record = backend.runner.translate("El gato negro duerme.", "es-en").record
    return record, trace_of_record(backend, record)


@pytest.mark.slow
def test_the_bars_are_the_contrast_of_the_chosen_piece_against_the_candidate(backend, traced):
    record, trace = traced
    step = trace.steps[0]
    candidates = step.candidates[step.chosen_hypothesis]
    offered = step_foils(trace, 1)
    assert [int(value) for _, value in offered] == [
        c.token_id for c in candidates if c.token_id != step.chosen.token_id
    ]
    foil = next(c for c in candidates if str(c.token_id) == offered[0][1])
    assert record.target_ids == trace.target_ids  # PyTorch chose the translation: the session's record is used
    foil_ids = list(record.target_ids)
    foil_ids[1] = foil.token_id
    expected = method_entry(CONTRAST_METHOD).function(backend.runner.served("es-en").model, record, contrast=foil_ids)
    assert expected.details["contrast_rows"] == [0]
    words, scores = source_word_scores(list(record.source_tokens), expected.token_scores[0])
    for language in ("en", "es"):
        answer = why_not(backend, record, trace, 1, offered[0][1], language=language)
        assert answer.words == words
        np.testing.assert_allclose(answer.shares, scores / scores.sum(), atol=1e-6)
        heights = [bar.get_height() for bar in answer.figure.axes[0].patches]
        np.testing.assert_allclose(heights, answer.shares, atol=1e-9)
        difference = math.log(step.chosen.probability) - math.log(foil.probability)
        assert decimal(language, difference) in answer.summary
        assert "▁" not in answer.summary and "▁" not in "".join(answer.words)


def test_what_cannot_be_contrasted_says_what_to_do(backend, traced):
    record, trace = traced
    assert "Pick a candidate of step 1" in why_not(backend, record, trace, 1, None).summary
    assert "no es un candidato del paso 1" in why_not(backend, record, trace, 1, "-5", language="es").summary
    chosen = str(trace.steps[0].chosen.token_id)
    assert "is not a candidate" in why_not(backend, record, trace, 1, chosen).summary
    assert "Translate a sentence" in why_not(backend, None, None, 1, chosen).summary
    ended = [i + 1 for i, step in enumerate(trace.steps) if step.chosen is None]
    if ended:  # beam search: steps after the winner ended
        assert step_foils(trace, ended[0]) == []
        assert "already ended" in why_not(backend, record, trace, ended[0], chosen).summary
