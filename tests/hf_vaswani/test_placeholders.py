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
    # One-digit numbers are the model's to translate ("4" -> "four"); times have placeholders of their own.
    assert spans_of(text) == [
        ("number", "1.250,50"),
        ("number", "1982"),
        ("time", "10:30"),
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
    text = "Tom gave 30 euros to Aisha on day 700 at 18:45, not 20:00."
    protected = protect(text, find_spans(text, vocabulary))
    assert protected.text == "Tom gave 30 euros to Mary on day 40 at 22:00, not 20:00."  # "30": the model copies it
    assert (
        restore("Tom le dio 30 euros a Mary el día 40 a las 22:00, no 20:00.", protected).text
        == "Tom le dio 30 euros a Aisha el día 700 a las 18:45, no 20:00."
    )


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


def test_a_sentence_whose_placeholder_is_lost_is_tried_again_with_others(vocabulary):
    calls = []

    def drops_tom(texts, labels):
        calls.append(list(texts))
        return [t.replace("Tom ", "") for t in texts]

    sentences = ["Ahora Aisha tiene 764884 euros.", "Tengo 125 gatos.", "el gato negro"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = translate_keeping_spans(drops_tom, sentences, vocabulary)
    assert calls == [
        ["Ahora Tom tiene 30 euros.", "Tengo 30 gatos.", "el gato negro"],
        ["Ahora Mary tiene 40 euros."],  # the second try: the placeholders the first one used go last
    ]
    assert result == ["Ahora Aisha tiene 764884 euros.", "Tengo 125 gatos.", "el gato negro"]


def test_a_sentence_whose_placeholder_is_lost_twice_is_translated_without_the_guard_and_named(vocabulary):
    calls = []

    def drops_names(texts, labels):
        calls.append(list(texts))
        return [t.replace("Tom ", "").replace("Mary ", "") for t in texts]

    with pytest.warns(KeepSpansWarning, match=r"sentence 1 \(dropped 'Aisha'\); these sentences were translated"):
        result = translate_keeping_spans(drops_names, ["Ahora Aisha tiene 764884 euros."], vocabulary)
    assert calls[2] == ["Ahora Aisha tiene 764884 euros."] and result == ["Ahora Aisha tiene 764884 euros."]


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


# ------------------------------------------------------------------------------------------ long lines and speed


def _slowest_ratio(make, vocabulary, short: int = 8_000, long: int = 128_000) -> float:
    """How many times longer `find_spans` takes on `make(long)` than on `make(short)` (best of five each, without
    the garbage collector's pauses: the search, not the collector, is measured; a search slower than 5 s is not
    run again)."""
    import gc
    import time

    def best(text: str) -> float:
        times: list[float] = []
        while len(times) < 5 and sum(times) < 5:
            started = time.perf_counter()
            find_spans(text, vocabulary)
            times.append(time.perf_counter() - started)
        return max(min(times), 1e-6)

    gc.disable()
    try:
        return best(make(long)) / best(make(short))
    finally:
        gc.enable()


@pytest.mark.parametrize(
    "make",
    [
        lambda n: "a" * n,  # a word without spaces: the e-mail pattern read it again from every character
        lambda n: "a@" * (n // 2),
        lambda n: "a." * (n // 4) + "@" + "b" * (n // 2),
        lambda n: "Xq " * (n // 3),  # capitalised words: each looked back to the sentence start
        lambda n: "100 Xyzzq " * (n // 10),  # many numbers and names: each checked against every span found
        lambda n: "1." * (n // 2) + "a",
        lambda n: "http://a" + ")" * n,
        lambda n: ("Ab 123 c@d.ef www.x.y " * n)[:n],
    ],
    ids=["word", "at-signs", "dots-then-at", "capitalised", "numbers-and-names", "dotted-digits", "brackets", "mixed"],
)
def test_the_span_search_takes_time_linear_in_the_texts_length(make, vocabulary):
    # 16 times the text: linear is ~16 times the time, quadratic 256; the bound leaves room for a loaded machine
    # (and for caches, which a long text outgrows).
    assert _slowest_ratio(make, vocabulary) < 100


def test_e_mail_addresses_are_found_as_by_the_pattern_from_every_position(vocabulary):
    """The search from each "@" finds what ``[\\w.+-]+@[\\w-]+(?:\\.[\\w-]+)+`` searched everywhere finds."""
    import random
    import re

    from hf_vaswani.placeholders import _email_spans, _without_trailing

    pattern = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
    generator = random.Random(41)
    for _ in range(2_000):
        text = "".join(generator.choice("ab1_.+-@ ,é") for _ in range(generator.randrange(1, 30)))
        expected = [_without_trailing(m.group()) for m in pattern.finditer(text)]
        assert [span.text for span in _email_spans(text)] == expected, text
        for span in _email_spans(text):
            assert text[span.start : span.end] == span.text


def test_a_line_longer_than_the_model_reads_is_cut_before_the_span_search(shipped, monkeypatch):
    """A 2 MB line: the span search sees only what the model reads (128 tokens), and the cut is named."""
    import hf_vaswani.placeholders as placeholders
    from hf_vaswani.inference import translate
    from hf_vaswani.source_checks import TruncatedInputWarning

    searched = []
    search = placeholders.find_spans
    monkeypatch.setattr(placeholders, "find_spans", lambda text, *a: searched.append(len(text)) or search(text, *a))
    model, tokenizer = shipped
    line = "Tengo 764884 euros y " + "a" * 2_000_000
    with pytest.warns(TruncatedInputWarning, match=r"line 1 \(\d+ tokens\)"):
        translate(model, tokenizer, [line], "es-en", labels=["line 1"], keep_spans=True)
    assert searched and max(searched) < 2_000  # the first 126 pieces, not 2 MB


def test_the_cut_keeps_exactly_the_pieces_the_model_would_read(shipped):
    from hf_vaswani.source_checks import cut_to_model_limit

    model, tokenizer = shipped
    limit = model.config.max_position_embeddings
    sentence = " ".join(["el gato negro come pescado"] * 100)
    with pytest.warns(UserWarning, match="longer than the 128 tokens"):
        (cut,) = cut_to_model_limit(model, tokenizer, [sentence], "es-en", ["sentence 1"])
    whole = tokenizer(">>en<< " + sentence, truncation=True, max_length=limit)["input_ids"]
    assert tokenizer(">>en<< " + cut)["input_ids"] == whole and sentence.startswith(cut)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cut_to_model_limit(model, tokenizer, ["el gato", 3, "  "], "es-en", ["a", "b", "c"]) == [
            "el gato",
            3,
            "  ",
        ]  # a short sentence stays; what is not a sentence is left for the checks to refuse


def test_a_two_megabyte_stdin_line_is_translated_cut_and_named(monkeypatch, capsys):
    import io
    import sys
    import time

    from hf_vaswani.cli import main

    line = ("Tengo 764884 euros " + "a" * 2_000_000 + "\n").encode()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(line), encoding="utf-8"))
    started = time.perf_counter()
    assert main(["translate", "--backend", "torch"]) == 0
    seconds = time.perf_counter() - started
    out, err = capsys.readouterr()
    assert out.count("\n") == 1
    assert "line 1 (" in err and "tokens the model accepts" in err
    assert seconds < 120  # (a quadratic search ran for minutes; one tokenization of the line takes seconds)


# ------------------------------------------------------------------------------------------ nothing lost silently


def test_a_number_without_a_free_placeholder_takes_a_year_and_comes_back(vocabulary):
    text = "Los números 30, 40, 50, 60, 70 y 80 no son 764884."
    protected = protect(text, find_spans(text, vocabulary))
    assert protected.text == "Los números 30, 40, 50, 60, 70 y 80 no son 1990." and not protected.left
    assert restore("The numbers 30, 40, 50, 60, 70 and 80 are not 1990.", protected).text.endswith("not 764884.")


def test_a_span_no_placeholder_is_left_for_is_named_when_the_model_changes_it(vocabulary):
    text = "Tom, Mary, John, Alice y Paris viven en Boston con Aisha."
    protected = protect(text, find_spans(text, vocabulary))
    assert [span.text for span in protected.left] == ["Aisha"] and protected.text == text

    def drops_the_name(texts, labels):
        return [t.replace(" con Aisha", "") for t in texts]

    with pytest.warns(KeepSpansWarning, match=r"sentence 1 \(changed 'Aisha'\)"):
        translate_keeping_spans(drops_the_name, [text], vocabulary)


def test_a_number_lost_or_gained_by_the_model_is_named(vocabulary):
    def writes_numbers_otherwise(texts, labels):
        return [t.replace("3 gatos", "tres gatos").replace("las 7", "las 7000") for t in texts]

    sentences = ["Tengo 3 gatos.", "Son las 7.", "Tengo 764884 euros."]
    with pytest.warns(KeepSpansWarning) as caught:
        result = translate_keeping_spans(writes_numbers_otherwise, sentences, vocabulary)
    (warning,) = caught
    assert "sentence 1 (lost '3')" in str(warning.message) and "sentence 2 (lost '7'; gained '7000')" in str(
        warning.message
    )
    assert "sentence 3" not in str(warning.message) and result[2] == "Tengo 764884 euros."


def test_a_url_ending_in_a_bracket_it_opened_is_kept_whole(spans_of, vocabulary):
    url = "https://en.wikipedia.org/wiki/Mercury_(1)"
    assert spans_of(f"Mira {url}.") == [("url", url)]
    assert spans_of(f"(mira {url})") == [("url", url)]
    assert spans_of("(mira https://example.com/a)") == [("url", "https://example.com/a")]
    protected = protect(f"Mira {url}.", find_spans(f"Mira {url}.", vocabulary))
    assert protected.text == "Mira Tom." and restore("Look at Tom.", protected).text == f"Look at {url}."


@pytest.mark.parametrize("value", ["yes", "no", 1, None])
def test_keep_spans_must_be_true_or_false(shipped, value):
    from hf_vaswani.inference import translate

    model, tokenizer = shipped
    with pytest.raises(TypeError, match=r"keep_spans must be True or False, got"):
        translate(model, tokenizer, ["Tengo 764884 euros."], "es-en", keep_spans=value)
