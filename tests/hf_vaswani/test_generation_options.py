"""`check_generation_options`: one line per rule for what ``generate()`` would refuse with a traceback or run
wrongly, and nothing refused that ``generate()`` takes; `translate` refuses through it."""

import math

import pytest
import torch

from hf_vaswani.generation_options import GENERATE_ARGUMENTS, check_generation_options

REFUSED = {
    "misspelt": ({"nm_beams": 3}, r"Unknown generation option 'nm_beams' \(did you mean 'num_beams'\?\)"),
    "no beams": ({"num_beams": 0}, "num_beams must be a positive integer, got 0"),
    "beams over the vocabulary": ({"num_beams": 98}, "num_beams=98 is more than the model's vocabulary of 97"),
    "nan length penalty": ({"length_penalty": math.nan}, "length_penalty must be a finite number, got nan"),
    "text length penalty": ({"length_penalty": "0.6"}, "length_penalty must be a finite number, got '0.6'"),
    "empty eos list": ({"eos_token_id": []}, "eos_token_id is an empty list"),
    "eos outside": ({"eos_token_id": [2, 97]}, r"eos_token_id=\[2, 97\] is not a token id .* from 0 to 96"),
    "forced bos outside": ({"forced_bos_token_id": 500}, "forced_bos_token_id=500 is not a token id"),
    "negative start": ({"decoder_start_token_id": -1}, "decoder_start_token_id=-1 is not a token id"),
    "transformers' own rule": ({"early_stopping": "maybe"}, "Invalid generation options: `early_stopping` must be"),
    "group beam search": ({"num_beams": 4, "num_beam_groups": 2}, "ask for group beam search, .* remote code"),
    "contrastive search": ({"penalty_alpha": 0.6, "top_k": 4}, "ask for contrastive search"),
    "constrained beam search": ({"num_beams": 2, "force_words_ids": [[5]]}, "ask for constrained beam search"),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_each_rule_is_one_line(tiny_model, case):
    options, message = REFUSED[case]
    with pytest.raises(ValueError, match=message) as caught:
        check_generation_options(tiny_model, options)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"num_beams": 4, "length_penalty": -5.0, "no_repeat_ngram_size": 2, "early_stopping": "never"},
        {"do_sample": True, "top_k": 5, "temperature": 0.7},
        {"eos_token_id": [2, 3], "forced_bos_token_id": 5, "suppress_tokens": list(range(6, 97))},
        {"max_new_tokens": 8, "min_new_tokens": 2, "output_scores": True, "return_dict_in_generate": True},
    ],
)
def test_what_generate_takes_is_taken_and_generate_runs_it(tiny_model, source_batch, options):
    check_generation_options(tiny_model, options)
    input_ids, attention_mask = source_batch
    with torch.inference_mode():
        tiny_model.generate(input_ids=input_ids, attention_mask=attention_mask, **{"max_new_tokens": 4, **options})


def test_generate_arguments_pass_only_when_the_caller_names_them(tiny_model):
    with pytest.raises(ValueError, match="Unknown generation option 'logits_processor'"):
        check_generation_options(tiny_model, {"logits_processor": []})
    check_generation_options(tiny_model, {"logits_processor": []}, other_arguments=GENERATE_ARGUMENTS)
    assert "custom_generate" not in GENERATE_ARGUMENTS and "trust_remote_code" not in GENERATE_ARGUMENTS


def test_translate_refuses_through_it(model, tokenizer):
    from hf_vaswani.inference import translate

    with pytest.raises(ValueError, match="length_penalty must be a finite number, got nan"):
        translate(model, tokenizer, ["el gato"], "es-en", length_penalty=math.nan)
    with pytest.raises(ValueError, match="num_beams must be a positive integer, got 0"):
        translate(model, tokenizer, ["el gato"], "es-en", num_beams=0)
