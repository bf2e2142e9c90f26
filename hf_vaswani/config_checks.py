"""The rules for the settings a model folder carries in config.json and generation_config.json.

transformers reads both files without checking most values: a ``layer_norm_eps`` of -1 or NaN translates every
sentence into an empty line, a ``length_penalty`` of NaN into a few words, a ``min_new_tokens`` above
``max_new_tokens`` into babble, a ``num_beams`` of 0 or an ``eos_token_id`` of ``[]`` into a traceback deep inside
`generate`, a ``max_position_embeddings`` of 10**9 into an attempt to allocate a terabyte. `config_problems` and
`generation_config_problems` find such values, one short phrase each naming the file and the field;
`hf_vaswani.model_folder.check_model_folder` applies them to a folder's files before the model is built, and
`hf_vaswani.model_checks.model_problems` to the settings of a loaded model.

A folder of ours without a generation_config.json is translated with the project's decoding settings
(`DECODING_DEFAULTS`, those `hf-vaswani train` saves: beam 4, length penalty 0.6 as in sec. 6.1, at most 64 new
tokens, no trigram twice), with one `MissingGenerationConfigWarning`, instead of transformers' greedy search cut
at 20 tokens.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from .limits import MAX_NUM_BEAMS

__all__ = [
    "DECODING_DEFAULTS",
    "MAX_POSITION_EMBEDDINGS",
    "MissingGenerationConfigWarning",
    "config_problems",
    "describes_vaswani_model",
    "fallback_generation_config",
    "generation_config_problems",
]

#: The most positions a model folder may declare. Tables of this many positions take at most a few hundred MB
#: (65,536 x d_model 1024 x 4 bytes = 256 MiB) while attention over such a sequence already needs 16 GiB per
#: head and layer; a larger value is a typo that would make loading or exporting try to allocate terabytes.
MAX_POSITION_EMBEDDINGS = 65_536

#: The decoding settings of the project (those `hf-vaswani train` writes into a trained model's generation config,
#: docs/training.md): beam 4 and length penalty 0.6 (sec. 6.1), at most 64 new tokens, no token trigram twice.
DECODING_DEFAULTS: dict[str, Any] = {
    "num_beams": 4,
    "length_penalty": 0.6,
    "max_new_tokens": 64,
    "no_repeat_ngram_size": 3,
    "early_stopping": True,
}

#: Fields of config.json that only a `VaswaniConfig` has: a config that holds them describes one of our models.
_VASWANI_FIELDS = ("position_encoding", "sinusoidal_layout", "layer_norm_position", "share_embeddings")


class MissingGenerationConfigWarning(UserWarning):
    """A model folder of ours has no generation_config.json: it is translated with `DECODING_DEFAULTS`."""


# ----------------------------------------------------------------------------------------------------------------
# One value: None when it is acceptable, else what was expected
# ----------------------------------------------------------------------------------------------------------------

Rule = Callable[[Any], "str | None"]


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _int_from(low: int, high: int | None = None) -> Rule:
    expected = f"a whole number from {low} to {high}" if high is not None else f"a whole number, {low} or more"

    def rule(value: Any) -> str | None:
        ok = _is_int(value) and value >= low and (high is None or value <= high)
        return None if ok else expected

    return rule


def _finite_number(value: Any) -> str | None:
    return None if _is_number(value) and math.isfinite(value) else "a finite number"


def _positive_number(value: Any) -> str | None:
    return None if _is_number(value) and math.isfinite(value) and value > 0 else "a finite number above 0"


def _non_negative_number(value: Any) -> str | None:
    return None if _is_number(value) and math.isfinite(value) and value >= 0 else "a finite number, 0 or more"


def _share(value: Any) -> str | None:
    return None if _is_number(value) and 0 < value <= 1 else "a number above 0 and at most 1"


def _cutoff(value: Any) -> str | None:
    return None if _is_number(value) and 0 <= value < 1 else "a number from 0 to less than 1"


def _boolean(value: Any) -> str | None:
    return None if isinstance(value, bool) else "true or false"


def _early_stopping(value: Any) -> str | None:
    return None if isinstance(value, bool) or value == "never" else 'true, false or "never"'


def _token_id(value: Any) -> str | None:
    return None if _is_int(value) and value >= 0 else "a token id (a whole number, 0 or more)"


def _token_ids(value: Any) -> str | None:
    """One token id, or a non-empty list of them (several end-of-sequence tokens)."""
    if isinstance(value, list):
        if not value:
            return "a token id or a non-empty list of them (an empty list gives generate() no token to stop at)"
        return None if all(_token_id(item) is None for item in value) else "a token id or a list of token ids"
    return _token_id(value)


def _id_list(value: Any) -> str | None:
    ok = isinstance(value, list) and all(_token_id(item) is None for item in value)
    return None if ok else "a list of token ids"


def _id_lists(value: Any) -> str | None:
    ok = isinstance(value, list) and all(_id_list(item) is None and item for item in value)
    return None if ok else "a list of non-empty lists of token ids"


def _one(value: Any) -> str | None:
    return None if value == 1 and _is_int(value) else "1 (every command gives one translation per sentence)"


def _dtype_name(value: Any) -> str | None:
    import torch

    dtype = getattr(torch, value, None) if isinstance(value, str) else None
    if value == "auto" or (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
        return None
    return 'the name of a floating-point torch dtype ("float32", "bfloat16", "float16", ...) or "auto"'


def _name(value: Any) -> str | None:
    return None if isinstance(value, str) and value else "a class name"


#: generation_config.json: every decoding setting `generate` reads, and what it must be (None is always allowed:
#: transformers then uses its default).
GENERATION_RULES: dict[str, Rule] = {
    "num_beams": _int_from(1, MAX_NUM_BEAMS),
    "num_beam_groups": _int_from(1),
    "num_return_sequences": _one,
    "max_length": _int_from(1),
    "max_new_tokens": _int_from(1),
    "min_length": _int_from(0),
    "min_new_tokens": _int_from(0),
    "length_penalty": _finite_number,
    "early_stopping": _early_stopping,
    "no_repeat_ngram_size": _int_from(0),
    "encoder_no_repeat_ngram_size": _int_from(0),
    "repetition_penalty": _positive_number,
    "encoder_repetition_penalty": _positive_number,
    "diversity_penalty": _non_negative_number,
    "do_sample": _boolean,
    "temperature": _positive_number,
    "top_k": _int_from(0),
    "top_p": _share,
    "typical_p": _share,
    "min_p": _cutoff,
    "epsilon_cutoff": _cutoff,
    "eta_cutoff": _cutoff,
    "max_time": _positive_number,
    "use_cache": _boolean,
    "renormalize_logits": _boolean,
    "remove_invalid_values": _boolean,
    "return_dict_in_generate": _boolean,
    "output_scores": _boolean,
    "output_attentions": _boolean,
    "output_hidden_states": _boolean,
    "pad_token_id": _token_id,
    "bos_token_id": _token_id,
    "eos_token_id": _token_ids,
    "decoder_start_token_id": _token_ids,
    "forced_bos_token_id": _token_id,
    "forced_eos_token_id": _token_ids,
    "suppress_tokens": _id_list,
    "begin_suppress_tokens": _id_list,
    "bad_words_ids": _id_lists,
}

#: config.json, of any model type: the fields whose wrong values load without a word.
CONFIG_RULES: dict[str, Rule] = {
    "model_type": _name,
    "dtype": _dtype_name,
    "torch_dtype": _dtype_name,
    "tokenizer_class": _name,
    "layer_norm_eps": _positive_number,
    "layer_norm_epsilon": _positive_number,  # (T5's name)
    "max_position_embeddings": _int_from(1, MAX_POSITION_EMBEDDINGS),
    "init_std": _positive_number,
    "vocab_size": _int_from(1),
    "decoder_vocab_size": _int_from(1),
    "pad_token_id": _token_id,
    "bos_token_id": _token_id,
    "eos_token_id": _token_ids,
    "decoder_start_token_id": _token_id,
    "forced_eos_token_id": _token_ids,
}


# ----------------------------------------------------------------------------------------------------------------
# A whole file
# ----------------------------------------------------------------------------------------------------------------


def _field_problems(data: Mapping[str, Any], rules: Mapping[str, Rule], file: str) -> list[str]:
    found = []
    for field, rule in rules.items():
        value = data.get(field)
        expected = rule(value) if value is not None else None
        if expected is not None:
            found.append(f"{file}'s {field} is {_shown(value)}: expected {expected}")
    return found


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _not_an_object(data: Any, file: str) -> list[str]:
    if isinstance(data, Mapping):
        return []
    kind = {list: "a list", str: "a string", int: "a number", float: "a number", bool: "a boolean"}.get(type(data))
    return [f"{file} holds {kind or type(data).__name__}, not a JSON object of settings"]


def describes_vaswani_model(config: Mapping[str, Any]) -> bool:
    """Whether config.json describes one of our models, whatever its ``model_type`` says: it names a Vaswani class
    in ``architectures`` or ``auto_map``, or holds fields only a `VaswaniConfig` has."""
    names = config.get("architectures")
    names = list(names) if isinstance(names, list) else []
    auto_map = config.get("auto_map")
    if isinstance(auto_map, Mapping):
        names += list(auto_map.values())
    if any(isinstance(name, str) and "Vaswani" in name for name in names):
        return True
    return all(field in config for field in _VASWANI_FIELDS)


def config_problems(config: Any, file: str = "config.json") -> list[str]:
    """The problems of a config.json (as read by ``json.loads``, or a loaded config's ``to_dict()``), one short
    phrase each: not a JSON object, a field of the wrong type or out of range (`CONFIG_RULES`), a ``model_type``
    other than "vaswani" in a config that describes one of our models."""
    found = _not_an_object(config, file)
    if found:
        return found
    found = _field_problems(config, CONFIG_RULES, file)
    model_type = config.get("model_type")
    if isinstance(model_type, str) and model_type != "vaswani" and describes_vaswani_model(config):
        found.append(
            f"{file}'s model_type is {model_type!r}, but the config describes a VaswaniForConditionalGeneration "
            "(its architectures and fields): its model_type must be 'vaswani'"
        )
    return found


def generation_config_problems(
    generation: Any, config: Mapping[str, Any] | None = None, file: str = "generation_config.json"
) -> list[str]:
    """The problems of a generation_config.json (as read by ``json.loads``, or a loaded `GenerationConfig`'s
    ``to_dict()``), one short phrase each: not a JSON object, a setting of the wrong type or out of range
    (`GENERATION_RULES`), settings that contradict each other (a minimum above its maximum, beam groups that do
    not divide the beams) or the model (more new tokens than its positions allow, from its `config` when given).
    Token ids outside the vocabulary are `hf_vaswani.model_checks.token_id_problems`' to find."""
    found = _not_an_object(generation, file)
    if found:
        return found
    found = _field_problems(generation, GENERATION_RULES, file)
    if found:  # (the consistency checks below compare values known to be of the right type)
        return found
    return _inconsistencies(generation, config if isinstance(config, Mapping) else {}, file)


def _inconsistencies(generation: Mapping[str, Any], config: Mapping[str, Any], file: str) -> list[str]:
    found = _minimum_above_maximum(generation, file)
    beams, groups = generation.get("num_beams") or 1, generation.get("num_beam_groups") or 1
    if beams % groups:
        found.append(f"{file}'s num_beam_groups ({groups}) does not divide its num_beams ({beams})")
    positions = config.get("max_position_embeddings")
    if _is_int(positions) and positions > 1:
        # A length counts the decoder start token, which takes one of the positions; a number of new tokens does not.
        for field, most in (("max_new_tokens", positions - 1), ("min_new_tokens", positions - 1)):
            value = generation.get(field)
            if value is not None and value > most:
                found.append(
                    f"{file}'s {field} ({value}) is more than the model can generate: at most {most} (its "
                    f"max_position_embeddings, {positions}, less the decoder start token)"
                )
        for field in ("max_length", "min_length"):
            value = generation.get(field)
            if value is not None and value > positions:
                found.append(
                    f"{file}'s {field} ({value}) is more than the model's {positions} positions "
                    "(max_position_embeddings, the decoder start token included)"
                )
    return found


def _minimum_above_maximum(generation: Mapping[str, Any], file: str) -> list[str]:
    """A least length above a greatest one: generate() then goes on past the end of the translation (babble).
    Lengths (``*_length``) count the decoder start token, numbers of new tokens (``*_new_tokens``) do not."""
    new_tokens = {"min_new_tokens": 0, "max_new_tokens": 0, "min_length": 1, "max_length": 1}
    found = []
    for low in ("min_new_tokens", "min_length"):
        for high in ("max_new_tokens", "max_length"):
            if generation.get(low) is None or generation.get(high) is None:
                continue
            if generation[low] - new_tokens[low] > generation[high] - new_tokens[high]:
                found.append(
                    f"{file}'s {low} ({generation[low]}) is above its {high} ({generation[high]}): generate() "
                    "would go on past the end of the translation"
                )
    return found


def fallback_generation_config(config: Any, source: str | None = None) -> Any:
    """The `GenerationConfig` of one of our models that came without one: `DECODING_DEFAULTS`, at most as many new
    tokens as the model's positions allow, and the special tokens of `config` (a loaded model config). With
    `source` (the folder or Hub id), one `MissingGenerationConfigWarning` says so."""
    import warnings

    from transformers import GenerationConfig

    settings = dict(DECODING_DEFAULTS)
    positions = getattr(config, "max_position_embeddings", None)
    if _is_int(positions) and positions > 1:
        settings["max_new_tokens"] = min(settings["max_new_tokens"], positions - 1)
    for field in ("bos_token_id", "eos_token_id", "pad_token_id", "decoder_start_token_id"):
        settings[field] = getattr(config, field, None)
    if source is not None:
        shown = ", ".join(f"{name} {value}" for name, value in settings.items() if name in DECODING_DEFAULTS)
        warnings.warn(
            f"{source!r} has no generation_config.json: translating with the project's decoding settings ({shown}) "
            "instead of transformers' greedy search cut at 20 tokens.",
            MissingGenerationConfigWarning,
            stacklevel=3,
        )
    return GenerationConfig(**settings)
