"""Translating with any supported model: ours through `hf_vaswani.inference.translate` (its checks, its backends),
the others through ``generate()`` with what their direction needs (`vaswani_inspect.directions`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from hf_vaswani.directions import resolve_direction, source_for, source_language_settings
from hf_vaswani.empty_input import check_text
from hf_vaswani.generation_options import GENERATE_ARGUMENTS, check_generation_options
from hf_vaswani.model_checks import check_tokenizer
from hf_vaswani.source_checks import check_not_one_text, fitted_sources

from .architectures import is_vaswani

__all__ = ["translate_any"]


def translate_any(
    model: Any,
    tokenizer: Any,
    sentences: Sequence[str],
    direction: str,
    *,
    num_beams: int | None = None,
    max_new_tokens: int | None = None,
    batch_size: int = 32,
    **generate_kwargs: Any,
) -> list[str]:
    """One translation per sentence, in `direction`, with the model's generation config unless told otherwise.

    Raises:
        TypeError: `sentences` is one text instead of a list of texts.
        ValueError: a direction the model does not translate, no sentences or an empty one, a batch size below 1,
            a generation option ``generate()`` would refuse (`hf_vaswani.generation_options`: a beam size or length
            the model cannot generate with, a length penalty that is not a finite number...).
        BrokenModelError: (a ValueError) `tokenizer` is another model's (`hf_vaswani.model_checks.check_tokenizer`).

    A sentence longer than the model reads is cut to that length with one `TruncatedInputWarning` naming it
    ("sentence i"), as `hf_vaswani.inference.translate` does.
    """
    if isinstance(model, torch.nn.Module):
        check_tokenizer(model, tokenizer)  # another model's tokenizer translates to garbage without an error
    if is_vaswani(model) or getattr(model, "is_ctranslate2", False):
        from hf_vaswani.inference import translate

        return translate(
            model,
            tokenizer,
            list(sentences),
            direction,
            num_beams=num_beams,
            max_new_tokens=max_new_tokens,
            batch_size=batch_size,
            **generate_kwargs,
        )
    check_not_one_text(sentences, "sentences", "translate_any(model, tokenizer, ['el gato negro'], 'es-en')")
    how = resolve_direction(model, tokenizer, direction)
    texts = list(sentences)
    if not texts:
        raise ValueError("No sentences to translate.")
    for number, text in enumerate(texts, start=1):
        check_text(text, f"sentence {number}")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}.")
    settings = {**how.generate_settings, **generate_kwargs}
    if num_beams is not None:
        settings["num_beams"] = num_beams
    if max_new_tokens is not None:
        settings["max_new_tokens"] = max_new_tokens
    check_generation_options(model, settings, other_arguments=GENERATE_ARGUMENTS)
    device = next(model.parameters()).device
    translations: list[str] = []
    with torch.inference_mode(), source_language_settings(tokenizer, how):
        sources = [source_for(how, text) for text in texts]
        # A source longer than the model reads is cut, as translate cuts it: with a TruncatedInputWarning.
        _, limit = fitted_sources(model, tokenizer, sources, [f"sentence {i}" for i in range(1, len(texts) + 1)])
        for start in range(0, len(texts), batch_size):
            batch = sources[start : start + batch_size]
            encoded = tokenizer(batch, return_tensors="pt", padding=True, truncation=True, max_length=limit)
            encoded = encoded.to(device)
            output = model.generate(**encoded, **settings)
            translations += [text.strip() for text in tokenizer.batch_decode(output, skip_special_tokens=True)]
    return translations
