"""The limits every entry point shares: the largest beam size any command or the demo accepts (`MAX_NUM_BEAMS`),
and what a given model can generate with (`generation_limits`, checked by `check_generation_settings`).
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

__all__ = ["MAX_NUM_BEAMS", "GenerationLimits", "check_generation_settings", "generation_limits"]

#: The largest beam size the commands and the demo accept. Translation quality stops improving after a beam of
#: about 5-10 and then falls (Koehn and Knowles 2017, "Six challenges for NMT"), while memory grows with beams x
#: sentences x the cache of every layer; 64 leaves room for experiments and keeps a batch of 32 within a few GB.
MAX_NUM_BEAMS = 64


class GenerationLimits(NamedTuple):
    """The largest settings `generate` can run a model with (`generation_limits`)."""

    #: The decoder's vocabulary size: the first step has no more distinct tokens to fill the beams with.
    num_beams: int
    #: ``max_position_embeddings - 1``: the decoder start token takes one of the model's positions (and
    #: transformers warns once ``max_length``, which counts it, passes ``max_position_embeddings``).
    max_new_tokens: int


def generation_limits(model: Any) -> GenerationLimits:
    """The largest beam size and number of new tokens `model` can generate with (see `GenerationLimits`)."""
    config = model.config
    vocabulary = getattr(config, "decoder_vocab_size", None) or config.vocab_size
    positions = getattr(config, "max_position_embeddings", None)
    new_tokens = positions - 1 if isinstance(positions, int) and positions > 1 else 10**6
    return GenerationLimits(num_beams=int(vocabulary), max_new_tokens=int(new_tokens))


def check_generation_settings(
    model: Any,
    *,
    num_beams: int | None = None,
    max_new_tokens: int | None = None,
    length_penalty: float | None = None,
) -> None:
    """Refuse a beam size or a length `model` cannot generate with (`generation_limits`), or a length penalty that
    is not a finite number (NaN compares false with every score, so the beam search keeps arbitrary hypotheses),
    before any work.

    Raises:
        ValueError: a value below 1, or above the model's limit (the message gives the limit and why); a length
            penalty that is not a finite number.
    """
    for name, value in (("num_beams", num_beams), ("max_new_tokens", max_new_tokens)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise ValueError(f"{name} must be a positive integer, got {value!r}.")
    if length_penalty is not None and not _finite_number(length_penalty):
        raise ValueError(f"length_penalty must be a finite number, got {length_penalty!r}.")
    limits = generation_limits(model)
    if num_beams is not None and num_beams > limits.num_beams:
        raise ValueError(
            f"num_beams={num_beams} is more than the model's vocabulary of {limits.num_beams} tokens: a beam "
            f"search cannot fill more than {limits.num_beams} beams."
        )
    if max_new_tokens is not None and max_new_tokens > limits.max_new_tokens:
        raise ValueError(
            f"max_new_tokens={max_new_tokens} is more than this model can generate: at most {limits.max_new_tokens} "
            f"(its max_position_embeddings, {limits.max_new_tokens + 1}, less the decoder start token)."
        )


def _finite_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
