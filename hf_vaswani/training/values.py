"""The checks of single values of a run configuration, each naming its key in its message
(``training.max_steps must be a positive integer, got 'abc'``), and of the ``model`` section's `VaswaniConfig`
fields, checked here before a `VaswaniConfig` (or the model's weights) is built from them."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from typing import Any

from ..configuration_vaswani import ACTIVATIONS, LAYER_NORM_POSITIONS, POSITION_ENCODINGS, SINUSOIDAL_LAYOUTS
from ..languages import DIRECTIONS

__all__ = [
    "bool_value",
    "checker",
    "choice_value",
    "directions_value",
    "float_value",
    "int_value",
    "path_value",
    "size_value",
    "validate_model_section",
]


def int_value(value: Any, where: str, minimum: int | None = None, nullable: bool = False) -> int | None:
    if value is None and nullable:
        return None
    number: Any = value
    if isinstance(value, str):
        try:
            number = float(value) if any(c in value for c in ".eE") else int(value)
        except ValueError:
            number = None
    if isinstance(number, float) and number.is_integer():
        number = int(number)
    if isinstance(number, bool) or not isinstance(number, int) or (minimum is not None and number < minimum):
        bound = {None: "an integer", 0: "an integer >= 0", 1: "a positive integer"}.get(
            minimum, f"an integer >= {minimum}"
        )
        raise ValueError(f"{where} must be {bound}{' or null' if nullable else ''}, got {value!r}.")
    return number


def float_value(
    value: Any,
    where: str,
    low: float | None = None,
    high: float | None = None,
    nullable: bool = False,
    low_inclusive: bool = True,
) -> float | None:
    if value is None and nullable:
        return None
    number: Any = value
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            number = None
    ok = isinstance(number, (int, float)) and not isinstance(number, bool) and math.isfinite(number)
    if ok and low is not None:
        ok = number >= low if low_inclusive else number > low
    if ok and high is not None:
        ok = number < high
    if not ok:
        bounds = []
        if low is not None:
            bounds.append(f"{'>=' if low_inclusive else '>'} {low:g}")
        if high is not None:
            bounds.append(f"< {high:g}")
        wanted = "a number" + (f" {' and '.join(bounds)}" if bounds else "") + (" or null" if nullable else "")
        raise ValueError(f"{where} must be {wanted}, got {value!r}.")
    return float(number)


def bool_value(value: Any, where: str, nullable: bool = False) -> bool | None:
    if value is None and nullable:
        return None
    if not isinstance(value, bool):
        raise ValueError(f"{where} must be true or false{' or null' if nullable else ''}, got {value!r}.")
    return value


def path_value(value: Any, where: str) -> str | None:
    if value is None or value == "":
        return None
    if isinstance(value, (str, int, os.PathLike)) and not isinstance(value, bool):
        return os.fspath(value) if isinstance(value, os.PathLike) else str(value)
    raise ValueError(f"{where} must be a path, got {value!r}.")


def choice_value(value: Any, where: str, choices: Sequence[Any]) -> Any:
    if value not in choices:
        raise ValueError(f"{where} must be one of {', '.join(repr(c) for c in choices)}; got {value!r}.")
    return value


def size_value(value: Any, where: str) -> int | float:
    if isinstance(value, str):
        try:
            value = float(value) if any(c in value for c in ".eE") else int(value)
        except ValueError:
            pass
    if isinstance(value, float) and math.isfinite(value) and value.is_integer() and value >= 1:
        value = int(value)
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not number or value < 0 or (isinstance(value, float) and not (math.isfinite(value) and value < 1)):
        raise ValueError(f"{where} must be a number of pairs (int >= 0) or a fraction in [0, 1), got {value!r}.")
    return value


def directions_value(value: Any, where: str) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value:
        raise ValueError(f"{where} must be a non-empty list of directions among {list(DIRECTIONS)}, got {value!r}.")
    for direction in value:
        choice_value(direction, where, DIRECTIONS)
    if len(set(value)) != len(value):
        raise ValueError(f"{where} lists a direction twice: {value!r}.")
    return value


def checker(section: dict[str, Any], name: str) -> Any:
    """``check(key, convert, *args)``: replace ``section[key]`` (when present) by its checked value."""

    def check(key: str, convert: Any, *args: Any) -> None:
        if key in section:
            section[key] = convert(section[key], f"{name}.{key}", *args)

    return check


# --------------------------------------------------------------------------------------------- the model section

#: VaswaniConfig fields that must be positive integers (``decoder_vocab_size`` may also be null).
_POSITIVE_INTS = (
    "vocab_size",
    "d_model",
    "encoder_layers",
    "decoder_layers",
    "encoder_attention_heads",
    "decoder_attention_heads",
    "encoder_ffn_dim",
    "decoder_ffn_dim",
    "max_position_embeddings",
)
#: Probabilities: dropout rates and the label smoothing epsilon, in [0, 1).
_RATES = ("dropout", "attention_dropout", "activation_dropout", "label_smoothing")
_BOOLS = ("scale_embedding", "share_embeddings", "tie_word_embeddings", "final_logits_bias", "use_cache")
_CHOICES = {
    "activation_function": ACTIVATIONS,
    "position_encoding": POSITION_ENCODINGS,
    "sinusoidal_layout": SINUSOIDAL_LAYOUTS,
    "layer_norm_position": LAYER_NORM_POSITIONS,
}
_TOKEN_IDS = ("pad_token_id", "bos_token_id", "decoder_start_token_id")


def _rate_value(value: Any, where: str) -> float:
    try:
        return float_value(value, where, 0.0, 1.0)
    except ValueError:
        raise ValueError(f"{where} must be in [0, 1), got {value!r}.") from None


def _eos_value(value: Any, where: str) -> int | list[int] | None:
    if isinstance(value, list):
        if not value:
            raise ValueError(f"{where} must be a token id (an integer >= 0), a non-empty list of them or null.")
        return [int_value(v, where, 0) for v in value]
    return int_value(value, where, 0, True)


def validate_model_section(model: dict[str, Any]) -> None:
    """Check the types and ranges of the `VaswaniConfig` fields a recipe's ``model`` section sets (in place:
    numbers written as strings are converted). What `VaswaniConfig` cannot check before it builds weights is
    refused here with the field's name: a negative ``init_std`` or ``layer_norm_eps``, NaN or infinite rates."""
    check = checker(model, "model")
    for key in _POSITIVE_INTS:
        check(key, int_value, 1)
    check("decoder_vocab_size", int_value, 1, True)
    for key in _RATES:
        check(key, _rate_value)
    for key in _BOOLS:
        check(key, bool_value)
    for key, choices in _CHOICES.items():
        check(key, choice_value, choices)
    # A LayerNorm epsilon and an initialisation std only make sense above zero (the std is a spread, the epsilon
    # keeps the division by the standard deviation away from zero); null std = the model's d_model^-0.5.
    check("layer_norm_eps", float_value, 0.0, None, False, False)
    check("init_std", float_value, 0.0, None, True, False)
    for key in _TOKEN_IDS:
        check(key, int_value, 0, True)
    check("eos_token_id", _eos_value)
    if "alignment" in model and model["alignment"] is not None and not isinstance(model["alignment"], Mapping):
        raise ValueError(
            f"model.alignment must be null or a mapping (layer, heads, shift), got {model['alignment']!r}."
        )
    if "is_encoder_decoder" in model and model["is_encoder_decoder"] is not True:
        raise ValueError(
            f"model.is_encoder_decoder must be true (an encoder-decoder), got {model['is_encoder_decoder']!r}."
        )
