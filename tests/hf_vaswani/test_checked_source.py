"""`hf_vaswani.checked_source`: a text checked at the door is tokenized to check it there only (translate, extract
and the commands do not check it again), while a plain string, or one checked for another direction, is."""

from __future__ import annotations

import pytest

from hf_vaswani import source_checks
from hf_vaswani.checked_source import CheckedSource, is_checked, unchecked


@pytest.fixture
def checks(monkeypatch):
    """The texts `unknown_characters` (the tokenizing check every door shares) is asked about."""
    asked = []
    real = source_checks.unknown_characters

    def counted(tokenizer, text):
        asked.append(str(text))
        return real(tokenizer, text)

    monkeypatch.setattr(source_checks, "unknown_characters", counted)
    return asked


def test_a_checked_source_is_the_text_it_holds():
    source = CheckedSource("el gato", "es-en")
    assert source == "el gato" and isinstance(source, str) and source.strip() == "el gato"
    assert is_checked(source, "es-en") and not is_checked(source, "en-es") and not is_checked("el gato", "es-en")
    assert unchecked([source, "la casa"], ["sentence 1", "sentence 2"], "es-en") == (["la casa"], ["sentence 2"])


def test_translate_and_extract_check_a_text_unless_it_was_checked_for_its_direction(model, tokenizer, checks):
    from hf_vaswani.inference import translate
    from vaswani_inspect import extract

    settings = {"max_new_tokens": 3, "num_beams": 1}
    translate(model, tokenizer, [CheckedSource("el gato", "es-en")], "es-en", **settings)
    extract(model, tokenizer, CheckedSource("el perro", "es-en"), direction="es-en", generate_kwargs=settings)
    assert checks == []
    translate(model, tokenizer, ["el gato", CheckedSource("la casa", "en-es")], "es-en", **settings)
    extract(model, tokenizer, "el perro", direction="es-en", generate_kwargs=settings)
    assert checks == ["el gato", "la casa", "el perro"]


@pytest.mark.parametrize("command", ["inspect", "explain"])
def test_the_commands_check_each_source_once(command, model, tokenizer, tmp_path, checks, capsys):
    from hf_vaswani.cli import main

    model.save_pretrained(tmp_path / "model")
    tokenizer.save_pretrained(tmp_path / "model")
    argv = [command, "el gato", "la casa", "--model", str(tmp_path / "model"), "--out", str(tmp_path / "out")]
    assert main([*argv, "--max-new-tokens" if command == "inspect" else "--num-beams", "2"]) == 0, capsys.readouterr()
    assert checks == ["el gato", "la casa"]
