"""The guard that keeps numbers, URLs, e-mail addresses and rare names unchanged through translation
(`hf_vaswani.placeholders`): the span finder, the placeholders, the restorer, what happens when the model drops or
repeats a placeholder, and the shipped model keeping a long number with the guard on."""

import warnings

import pytest

from hf_vaswani.placeholders import (
    KeepSpansWarning,
    find_spans,
    protect,
    restore,
    translate_keeping_spans,
    vocabulary_of,
)


@pytest.fixture(scope="module")
def vocabulary():
    """The shipped tokenizer's pieces: frequent words and names are one piece ("▁Tom"), rare names are not."""
    from transformers import AutoTokenizer

    from hf_vaswani.paths import default_model_path

    return vocabulary_of(AutoTokenizer.from_pretrained(default_model_path()))


@pytest.fixture
def spans_of(vocabulary):
    return lambda text: [(span.kind, span.text) for span in find_spans(text, vocabulary)]


def test_several_numbers_with_separators_are_each_one_span(spans_of):
    text = "Pagué 1.250,50 euros el 3/4 de 1982 a las 10:30, y 3,000 más: 764884 o 2.5."
    # Short numbers and times are the model's to translate ("4" -> "four", "2:30" -> "las dos y media").
    assert spans_of(text) == [
        ("number", "1.250,50"),
        ("number", "1982"),
        ("number", "3,000"),
        ("number", "764884"),
        ("number", "2.5"),
    ]
    for span in find_spans(text):
        assert text[span.start : span.end] == span.text


def test_digits_glued_to_letters_are_not_numbers(spans_of):
    assert spans_of("the 3rd of May at 10am, 2020s, COVID-190") == [("name", "COVID"), ("number", "190")]


def test_urls_and_emails_lose_their_closing_punctuation_only(spans_of):
    text = "Mira https://example.com/a?b=1&c=2. Escribe a ana.perez@correo.es (o a www.ejemplo.org)."
    assert spans_of(text) == [
        ("url", "https://example.com/a?b=1&c=2"),
        ("email", "ana.perez@correo.es"),
        ("url", "www.ejemplo.org"),
    ]


def test_rare_names_are_found_frequent_ones_and_sentence_starts_are_not(spans_of):
    assert spans_of("Vivo en Buenos Aires con Tom desde 1982.") == [("name", "Buenos Aires"), ("number", "1982")]
    # "Aisha" starts the sentence and "Tom" and "Boston" are one piece each: the model knows them.
    assert spans_of("Aisha vive en Boston. Tom vive en Boston.") == []
    # A run with a frequent word is a phrase the model knows; contractions are not names; possessives are.
    assert spans_of("Ella vive en los Estados Unidos.") == []
    assert spans_of("I don't know Aisha's friend Achille Degas. Don't go!") == [
        ("name", "Aisha"),
        ("name", "Achille Degas"),
    ]
    assert [s.kind for s in find_spans("Vivo en Buenos Aires.")] == []  # no vocabulary: no names


def test_protect_and_restore_give_back_every_span_in_its_place(vocabulary):
    text = "So Aisha paid 764884 euros and 1.250,50 more at https://example.com in 2013."
    protected = protect(text, find_spans(text, vocabulary))
    assert protected.text == "So Tom paid 30 euros and 40 more at Mary in 1990."
    # The model may reorder the placeholders: each goes back where its own placeholder came out.
    restored = restore("In 1990 Mary got 40 euros and 30 from Tom.", protected)
    assert restored.ok
    assert restored.text == "In 2013 https://example.com got 1.250,50 euros and 764884 from Aisha."


def test_placeholders_already_in_the_source_are_not_used(vocabulary):
    text = "Tom gave 30 euros to Aisha on day 700."
    protected = protect(text, find_spans(text, vocabulary))
    assert protected.text == "Tom gave 30 euros to Mary on day 40."
    assert restore("Tom le dio 30 euros a Mary el día 40.", protected).text == "Tom le dio 30 euros a Aisha el día 700."


def test_a_placeholder_inside_a_longer_number_or_word_is_not_a_placeholder(vocabulary):
    protected = protect("Tengo 764884 euros.", find_spans("Tengo 764884 euros.", vocabulary))
    assert restore("I have 300 or 30.5 euros.", protected).missing == protected.spans
    assert restore("I have 30 euros.", protected).text == "I have 764884 euros."


def test_a_dropped_or_repeated_placeholder_is_reported_and_nothing_is_replaced(vocabulary):
    text = "Ahora Aisha tiene 764884 euros."
    protected = protect(text, find_spans(text, vocabulary))
    dropped = restore("Now she has 30 euros.", protected)
    assert not dropped.ok and [s.text for s in dropped.missing] == ["Aisha"] and dropped.text == "Now she has 30 euros."
    repeated = restore("Now Tom has 30 euros, 30 euros.", protected)
    assert not repeated.ok and [s.text for s in repeated.repeated] == ["764884"]


def test_a_sentence_whose_placeholder_is_lost_is_translated_without_the_guard_and_named(vocabulary):
    calls = []

    def fake_translate(texts, labels):
        calls.append(list(texts))
        # Drops the name placeholder of the first sentence; copies the rest.
        return [t.replace("Tom ", "") if t.startswith("Ahora Tom") else t for t in texts]

    sentences = ["Ahora Aisha tiene 764884 euros.", "Tengo 125 gatos.", "el gato negro"]
    with pytest.warns(KeepSpansWarning, match=r"sentence 1 \(dropped 'Aisha'\)"):
        result = translate_keeping_spans(fake_translate, sentences, vocabulary)
    assert calls == [
        ["Ahora Tom tiene 30 euros.", "Tengo 30 gatos.", "el gato negro"],
        ["Ahora Aisha tiene 764884 euros."],
    ]
    assert result == ["Ahora Aisha tiene 764884 euros.", "Tengo 125 gatos.", "el gato negro"]


def test_no_warning_when_every_placeholder_comes_back(vocabulary):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert translate_keeping_spans(lambda texts, labels: texts, ["Tengo 764884 euros."], vocabulary) == [
            "Tengo 764884 euros."
        ]


def test_the_shipped_model_keeps_a_long_number_with_the_guard_on(shipped):
    from hf_vaswani.inference import translate

    model, tokenizer = shipped
    guarded = translate(model, tokenizer, ["Tengo 764884 euros."], "es-en", keep_spans=True)
    assert "764884" in guarded[0] and guarded[0].startswith("I have")
    plain = translate(model, tokenizer, ["Tengo 764884 euros."], "es-en", keep_spans=False)
    assert "764884" not in plain[0]  # what the guard is for (if the model learns to copy, drop this line)


def test_the_translate_command_keeps_spans_unless_told_not_to(capsys):
    from hf_vaswani.cli import main

    assert main(["translate", "--backend", "torch", "Tengo 764884 euros."]) == 0
    assert "764884" in capsys.readouterr().out
    assert main(["translate", "--backend", "torch", "--no-keep-spans", "Tengo 764884 euros."]) == 0
    assert "764884" not in capsys.readouterr().out


@pytest.mark.slow
def test_the_demo_keeps_spans_on_either_backend_unless_told_not_to(shipped):
    """The demo's PyTorch path (``--backend torch``, and every generate() translation) goes through the guard as
    CTranslate2's does; ``hf-vaswani demo --no-keep-spans`` switches it off."""
    pytest.importorskip("gradio")
    from hf_vaswani.cli import build_parser
    from vaswani_demo import DemoBackend

    model, tokenizer = shipped
    backend = DemoBackend(model, tokenizer, "shipped")
    try:
        kept = backend.runner.translate("Tengo 764884 euros.", "es-en")
        assert "764884" in kept.translation and kept.record.target_text == kept.translation
        assert kept.record.generate_kwargs["keep_spans"] is True
        settings, reference = backend.runner._pytorch_reference(backend.models[0], model, kept.record)
        assert "keep_spans" not in settings and "764884" not in reference  # heads off compare with generate() alone
        backend.runner.keep_spans = False
        plain = backend.runner.translate("Tengo 764884 euros.", "es-en")
        assert "764884" not in plain.translation and "keep_spans" not in plain.record.generate_kwargs
    finally:
        backend.close()
    parser = build_parser()
    assert parser.parse_args(["demo"]).keep_spans is True
    assert parser.parse_args(["demo", "--no-keep-spans"]).keep_spans is False
