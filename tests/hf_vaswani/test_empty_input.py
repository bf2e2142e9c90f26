"""`hf_vaswani.empty_input`: a text with nothing in it is refused with one message, made by one function, at every
door: `translate`, `vaswani_inspect`'s extract, translation and decoding trace, the CTranslate2 translator and the
commands."""

from __future__ import annotations

import pytest

from hf_vaswani.empty_input import NO_SENTENCE, check_not_empty, check_some_sentences, empty_text_message


def test_the_rule_and_its_messages():
    assert empty_text_message("sentence 2") == "Sentence 2 is empty or whitespace only."
    for blank in ("", " ", "\n\t "):
        with pytest.raises(ValueError) as error:
            check_not_empty(blank, "--target")
        assert str(error.value) == "--target is empty or whitespace only."
    check_not_empty(" el gato ", "sentence 1")
    with pytest.raises(ValueError) as error:
        check_some_sentences([])
    assert str(error.value) == NO_SENTENCE
    check_some_sentences(["el gato"])


def _message(call) -> str:
    with pytest.raises(ValueError) as error:
        call()
    return str(error.value)


def test_the_python_entry_points_give_exactly_the_rules_message(model, tokenizer):
    from hf_vaswani.inference import translate
    from vaswani_inspect import extract
    from vaswani_inspect.steps import trace_decoding
    from vaswani_inspect.translation import translate_any

    assert _message(lambda: translate(model, tokenizer, ["hola", "  "], "es-en")) == empty_text_message("sentence 2")
    assert _message(lambda: translate(model, tokenizer, [], "es-en")) == NO_SENTENCE
    assert _message(lambda: translate_any(model, tokenizer, ["hola", "\t"], "es-en")) == empty_text_message(
        "sentence 2"
    )
    assert _message(lambda: extract(model, tokenizer, ["hola", " "], direction="es-en")) == empty_text_message(
        "source #1"
    )
    assert _message(lambda: extract(model, tokenizer, "hola", " ", direction="es-en")) == empty_text_message(
        "target #0"
    )
    assert _message(lambda: trace_decoding(model, tokenizer, "  ", "es-en")) == empty_text_message("source #0")


def test_the_ctranslate2_translator_gives_exactly_the_rules_message(model, tokenizer, tmp_path, monkeypatch):
    pytest.importorskip("ctranslate2")
    from hf_vaswani import backends

    monkeypatch.setenv("HF_VASWANI_CACHE", str(tmp_path / "cache"))
    model.save_pretrained(tmp_path / "model")
    tokenizer.save_pretrained(tmp_path / "model")
    translator = backends.load_ctranslate2(tmp_path / "model", quantization="float32", threads=1)
    assert _message(lambda: translator.translate(["hola", " "], "es-en")) == empty_text_message("sentence 2")
    assert _message(lambda: translator.translate([], "es-en")) == NO_SENTENCE


@pytest.mark.parametrize(
    ("argv", "label"),
    [
        (["translate", "hola", "  "], "sentence 2"),
        (["inspect", " ", "--out", "{out}"], "sentence 1"),
        (["inspect", "hola", "--target", " ", "--out", "{out}"], "--target"),
        (["explain", "hola", "--target", " ", "--out", "{out}"], "target 1"),
    ],
)
def test_the_commands_give_exactly_the_rules_message(argv, label, tmp_path, capsys):
    from hf_vaswani.cli import main

    command = argv[0]
    code = main([part.replace("{out}", str(tmp_path / "out")) for part in argv])
    assert code == 2
    assert capsys.readouterr().err.strip() == f"hf-vaswani {command}: error: {empty_text_message(label)}"
