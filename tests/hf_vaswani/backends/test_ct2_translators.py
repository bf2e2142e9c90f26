"""The CTranslate2 translators (`hf_vaswani.backends.ct2_translators`) and the export they read from the user cache,
made again when the model changes, the generation config's loop guard, and input checks shared with
`hf_vaswani.inference.translate`. Tiny random models with the tiny tokenizer; what the backend translates is compared
with PyTorch in tests/hf_vaswani/test_export.py."""

from __future__ import annotations

import pytest
import torch

from hf_vaswani import VaswaniForConditionalGeneration
from hf_vaswani.inference import TruncatedInputWarning
from tests.helpers import tiny_config, tiny_tokenizer

ctranslate2 = pytest.importorskip("ctranslate2")

from hf_vaswani import backends  # noqa: E402


@pytest.fixture
def folder(tmp_path):
    torch.manual_seed(0)
    model = VaswaniForConditionalGeneration(tiny_config(vocab_size=300)).eval()
    model.save_pretrained(tmp_path / "model")
    tiny_tokenizer().save_pretrained(tmp_path / "model")
    return tmp_path / "model"


def test_the_export_is_made_once_in_the_user_cache_and_again_when_the_weights_change(folder, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_VASWANI_CACHE", str(tmp_path / "cache"))
    export = backends.ensure_ctranslate2_export(folder, "int8")
    assert export.parent == tmp_path / "cache" / "ctranslate2" and export.name.endswith("-ctranslate2-int8")
    assert (export / "model.bin").is_file()
    made = (export / "model.bin").stat().st_mtime_ns
    assert backends.ensure_ctranslate2_export(folder, "int8") == export
    assert (export / "model.bin").stat().st_mtime_ns == made  # cached: not exported again

    model = VaswaniForConditionalGeneration.from_pretrained(folder)
    with torch.no_grad():
        model.lm_head.weight.mul_(2)
    model.save_pretrained(folder)
    changed = backends.ensure_ctranslate2_export(folder, "int8")
    assert changed != export and (changed / "model.bin").is_file()  # other weights: another export
    assert sorted(p.name for p in folder.parent.iterdir()) == ["cache", "model"]  # nothing written beside the model
    assert not [p for p in changed.parent.iterdir() if p.name.startswith(".")]  # no staging folder left behind


def test_the_model_folder_is_only_read(folder, tmp_path, monkeypatch):
    """A read-only folder, a shared one or a Hub snapshot: the export never goes into the model folder."""
    monkeypatch.setenv("HF_VASWANI_CACHE", str(tmp_path / "cache"))
    before = sorted(p.name for p in folder.iterdir())
    export = backends.ensure_ctranslate2_export(folder, "float32")
    assert export.parent == tmp_path / "cache" / "ctranslate2" and export.name.endswith("-ctranslate2-float32")
    assert sorted(p.name for p in folder.iterdir()) == before


def test_bad_input_is_refused_as_translate_refuses_it(folder):
    translator = backends.load_ctranslate2(folder, quantization="float32", threads=1)
    with pytest.raises(ValueError, match="the input is empty"):
        translator.translate([], "es-en")
    with pytest.raises(ValueError, match="direction"):
        translator.translate(["hola"], "fr-de")
    with pytest.raises(ValueError, match="num_beams must be a positive integer"):
        translator.translate(["hola"], "es-en", num_beams=0)
    with pytest.raises(ValueError, match="Got 1 labels for 2 sentences"):
        translator.translate(["hola", "adiós"], "es-en", labels=["a"])
    with pytest.raises(ValueError, match="length_penalty must be a finite number"):
        translator.translate(["hola"], "es-en", length_penalty=float("nan"))
    with pytest.raises(TypeError, match="sentences must be a list of texts, got one str"):
        translator.translate_ids("hola", "es-en")
    with pytest.raises(ValueError, match="quantization must be one of"):
        backends.ensure_ctranslate2_export(folder, "int3")


def test_a_long_source_is_cut_with_one_warning_naming_it(folder):
    translator = backends.load_ctranslate2(folder, quantization="float32", threads=1)
    with pytest.warns(TruncatedInputWarning, match=r"sentence 2 \(\d+ tokens\)"):
        out = translator.translate(["Hola.", "el gato negro " * 40], "es-en", max_new_tokens=3)
    assert len(out) == 2


def test_translate_with_ctranslate2_is_one_call(folder, tmp_path):
    translations = backends.translate_with_ctranslate2(
        folder, ["El gato negro duerme.", "Hola."], "es-en", quantization="float32", num_beams=2, max_new_tokens=4
    )
    assert len(translations) == 2 and all(isinstance(text, str) for text in translations)


def _repeats_a_trigram(ids: list[int]) -> bool:
    trigrams = [tuple(ids[i : i + 3]) for i in range(len(ids) - 2)]
    return len(trigrams) != len(set(trigrams))


def test_the_loop_guard_of_the_generation_config_holds_in_both_backends(folder, tmp_path, monkeypatch):
    """A random model loops; with ``no_repeat_ngram_size=3`` in its generation config neither generate() nor
    CTranslate2 writes a token trigram twice. (That float32 CTranslate2 then gives generate()'s tokens is checked on
    the shipped checkpoint, whose config has the guard, in test_export.py: on a random model, near-ties between
    beams fall either way.)"""
    from transformers import AutoTokenizer, GenerationConfig

    monkeypatch.setenv("HF_VASWANI_CACHE", str(tmp_path / "cache"))
    model = VaswaniForConditionalGeneration.from_pretrained(folder).eval()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    sources = ["El gato negro duerme.", "¿Dónde está la estación?", "Hola."]
    batch = tokenizer([f">>en<< {text}" for text in sources], return_tensors="pt", padding=True)
    unguarded = model.generate(**batch, num_beams=2, max_new_tokens=24, early_stopping=True)
    assert any(_repeats_a_trigram(row.tolist()) for row in unguarded)  # the test can fail

    generation = GenerationConfig.from_pretrained(folder)
    generation.update(no_repeat_ngram_size=3, num_beams=2, max_new_tokens=24, early_stopping=True)
    generation.save_pretrained(folder)
    guarded = model.generate(**batch, generation_config=GenerationConfig.from_pretrained(folder))
    assert not any(_repeats_a_trigram([t for t in row.tolist() if t != tokenizer.pad_token_id]) for row in guarded)
    translator = backends.load_ctranslate2(folder, quantization="float32", threads=1)
    ids = translator.translate_ids(sources, "es-en")
    assert len(ids) == 3 and not any(_repeats_a_trigram(row) for row in ids)
