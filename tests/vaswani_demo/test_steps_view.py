"""The step-by-step view traces what the model decoded (`vaswani_demo.steps_view`): for a translation that kept
numbers and names, the sentence behind its placeholders; and where the trace does not end in the translation shown,
its note gives the right reason (CTranslate2 only when CTranslate2 chose the translation)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

pytest.importorskip("gradio")

from hf_vaswani.placeholders import find_spans, protect  # noqa: E402
from vaswani_demo.steps_view import step_summary, trace_note  # noqa: E402


def _record(target: str, **settings) -> SimpleNamespace:
    return SimpleNamespace(source_text="Tengo 764884 euros.", target_text=target, generate_kwargs=settings)


@pytest.fixture
def protected():
    return protect("Tengo 764884 euros.", find_spans("Tengo 764884 euros."))


def test_a_trace_behind_placeholders_says_so_and_blames_no_backend(protected):
    for backend in ({}, {"backend": "ctranslate2"}):
        note = trace_note(
            _record("I have 764884 euros.", keep_spans=True, **backend), _trace("I have 30 euros."), protected
        )
        assert "“Tengo 30 euros.”, with numbers and names behind placeholders, into “I have 30 euros.”" in note
        assert "CTranslate2" not in note


def test_a_trace_that_lost_its_placeholder_says_the_translation_is_of_the_sentence_as_it_is(protected):
    note = trace_note(_record("I have 766484 euros.", keep_spans=True), _trace("I have euros."), protected, "es")
    assert "perdió un marcador" in note and "CTranslate2" not in note


def test_only_a_translation_ctranslate2_chose_blames_ctranslate2():
    differs = _trace("I have 766484 eurs.")
    assert trace_note(_record("I have 764884 eurs."), differs, None).startswith("The steps retrace the decoding")
    assert "chosen by CTranslate2" in trace_note(_record("I have 764884 eurs.", backend="ctranslate2"), differs, None)
    assert trace_note(_record("I have 766484 eurs."), differs, None) == ""


def test_the_step_sentence_shows_the_piece_as_a_word():
    """ "el modelo eligió “the”", not "“▁the”": the word-start mark is the tokenizer's, not the student's."""
    steps = [SimpleNamespace(chosen=SimpleNamespace(piece=piece, probability=0.875)) for piece in ("▁the", "at", "▁")]
    trace = SimpleNamespace(steps=steps)
    assert step_summary(trace, 0, "es") == "Paso 1 de 3: el modelo eligió “the” (probabilidad 0,88)."
    assert "“at”" in step_summary(trace, 1, "en") and "▁" not in step_summary(trace, 1, "en")
    assert "“▁”" in step_summary(trace, 2, "en")  # a piece that is only the mark has nothing else to show


def _trace(text: str) -> SimpleNamespace:
    return SimpleNamespace(text=text)


def test_the_view_traces_the_keep_spans_translation_it_shows():
    """On the shipped model with PyTorch (``--backend torch``): the steps are those of "Tengo 30 euros." and end in
    the translation shown once the number is back, not in generate()'s own "766484"."""
    from hf_vaswani.inference import load_translator
    from hf_vaswani.placeholders import restore
    from vaswani_demo import DemoBackend
    from vaswani_demo.steps_view import decoded_source, traced_outputs

    model, tokenizer = load_translator()
    backend = DemoBackend(model, tokenizer, "shipped")
    try:
        assert backend.runner.translator is None  # PyTorch chooses the translation
        result = backend.runner.translate("Tengo 764884 euros.", "es-en")
        assert "764884" in result.translation
        trace, *_, where, _candidates, _attention, _target = traced_outputs(backend, result.record, "en")
        source, protected = decoded_source(backend, result.record)
        assert source == "Tengo 30 euros." and restore(trace.text, protected).text == result.translation
        assert "behind placeholders" in where and "CTranslate2" not in where
    finally:
        backend.close()
