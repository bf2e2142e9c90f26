"""translate_any refuses a model and a tokenizer given in memory that are not each other's (no loader checked them
together): another model's tokenizer translates to garbage without an error."""

from __future__ import annotations

import pytest
from transformers import AutoTokenizer

from hf_vaswani.model_checks import BrokenModelError
from hf_vaswani.testing import tiny_model
from vaswani_inspect.translation import translate_any


@pytest.mark.parametrize("same_size", [False, True])
def test_our_model_with_nllbs_tokenizer_is_refused(tiny_architecture_folders, tokenizer, same_size):
    nllb = AutoTokenizer.from_pretrained(tiny_architecture_folders["m2m100"])
    model = tiny_model(len(nllb) if same_size else len(tokenizer))  # (same size: it translated to garbage)
    with pytest.raises(BrokenModelError, match=r"^The tokenizer is not this model's: .*no token >>en<<"):
        translate_any(model, nllb, ["el gato negro"], "es-en")
    assert translate_any(tiny_model(len(tokenizer)), tokenizer, ["el gato negro"], "es-en", max_new_tokens=3)


def test_an_nllb_model_with_mbart_50s_tokenizer_is_refused(tiny_architecture_folders):
    from transformers import AutoModelForSeq2SeqLM

    model = AutoModelForSeq2SeqLM.from_pretrained(tiny_architecture_folders["m2m100"])
    mbart = AutoTokenizer.from_pretrained(tiny_architecture_folders["mbart"])
    assert len(mbart) != model.config.vocab_size
    message = f"the tokenizer has {len(mbart)} tokens and the model's vocabulary {model.config.vocab_size}"
    with pytest.raises(BrokenModelError, match=message):
        translate_any(model, mbart, ["el gato negro"], "es-en")
