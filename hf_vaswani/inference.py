"""Translating with a trained model, and scoring it on a file of sentence pairs.

`load_translator` loads a model folder (or Hub id) and its tokenizer; `translate` translates a list of
sentences in one direction (``es-en`` or ``en-es``); `evaluate_pairs` / `evaluate_file` score a model with
BLEU and chrF (sacrebleu's defaults, on detokenized text) per direction on ``English<TAB>Spanish`` pairs. The
``translate`` and ``evaluate`` subcommands of ``hf-vaswani`` (`hf_vaswani.commands.translate`) wrap them.

Input problems are never silently mangled: a source longer than the model accepts is cut to that length with a
`TruncatedInputWarning` naming the sentences; malformed lines of a pairs file are skipped with one warning that
gives their line numbers (`hf_vaswani.data.read_pairs`), or rejected with ``strict=True`` (``--strict``);
stdin that is not UTF-8 is rejected with the numbers of the bad lines.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import torch

from .paths import DEFAULT_MODEL, default_model_path, looks_like_local_path  # (the first two re-exported here)

__all__ = [
    "DEFAULT_MODEL",
    "EvaluationResult",
    "TruncatedInputWarning",
    "default_model_path",
    "evaluate_file",
    "evaluate_pairs",
    "load_translator",
    "score_translations",
    "translate",
]

_REPORTED = 5


class TruncatedInputWarning(UserWarning):
    """Some sources were longer than the model accepts and only their beginning was translated."""


class EvaluationResult(NamedTuple):
    """What `evaluate_pairs` returns: the scores and the translations, per direction."""

    scores: dict[str, dict[str, Any]]
    hypotheses: dict[str, list[str]]


def _listed(labels: Sequence[str]) -> str:
    more = f" and {len(labels) - _REPORTED} more" if len(labels) > _REPORTED else ""
    return ", ".join(labels[:_REPORTED]) + more


def _max_source_tokens(model: Any, tokenizer: Any) -> int:
    """The longest source (in tokens, ``>>lang<<`` and ``</s>`` included) the model and tokenizer accept."""
    limits = [getattr(getattr(model, "config", None), "max_position_embeddings", None)]
    limits.append(getattr(tokenizer, "model_max_length", None))  # a huge sentinel when the tokenizer has none
    valid = [int(v) for v in limits if isinstance(v, int) and 0 < v < 10**9]
    return min(valid) if valid else 10**9


def load_translator(
    model: str | os.PathLike[str] | None = None, device: str | None = None, dtype: str | None = None
) -> tuple[Any, Any]:
    """Load (model, tokenizer) from a model folder or a Hub id; `model=None` loads the shipped checkpoint.

    Raises:
        FileNotFoundError: if `model` is a local path that does not hold a model.
        ValueError: if the model or its tokenizer cannot be loaded from it (damaged or foreign files).
    """
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    import hf_vaswani  # noqa: F401  (registers the "vaswani" model type with the Auto classes)

    name = str(model) if model is not None else default_model_path()  # the default is a folder, never a Hub id
    local = model is None or looks_like_local_path(name)
    if local and not (Path(name).expanduser() / "config.json").is_file():
        raise FileNotFoundError(f"No model folder with a config.json at {name!r}.")
    if local:
        name = str(Path(name).expanduser())
    from safetensors import SafetensorError

    kwargs: dict[str, Any] = {}
    if dtype:
        kwargs["dtype"] = getattr(torch, dtype)
    try:
        tokenizer = AutoTokenizer.from_pretrained(name)
        loaded = AutoModelForSeq2SeqLM.from_pretrained(name, **kwargs)
    except (SafetensorError, RuntimeError, KeyError, ValueError, OSError) as error:
        # A damaged or foreign folder: say which one, in one line (HF_VASWANI_TRACEBACK=1 shows the cause).
        raise ValueError(f"Cannot load the model at {name!r}: {' '.join(str(error).split())}") from error
    loaded.to(device or ("cuda" if torch.cuda.is_available() else "cpu")).eval()
    return loaded, tokenizer


def translate(
    model: Any,
    tokenizer: Any,
    sentences: Sequence[str],
    direction: str = "es-en",
    *,
    num_beams: int | None = None,
    batch_size: int = 32,
    max_new_tokens: int | None = None,
    length_penalty: float | None = None,
    labels: Sequence[str] | None = None,
) -> list[str]:
    """Translate `sentences` in `direction` (``"es-en"`` or ``"en-es"``); one translation per sentence.

    Sentences are batched by length (the order of the result is the order of `sentences`); `num_beams`,
    `max_new_tokens` and `length_penalty` default to the model's generation config. A sentence longer than the
    model accepts (``max_position_embeddings`` tokens, language token and ``</s>`` included) is cut to that
    length, with one `TruncatedInputWarning` that names the sentences (by `labels`, default "sentence i").

    Raises:
        ValueError: on an unknown direction, no sentences, an empty sentence, or a batch size, beam size or
            maximum length below 1.
    """
    from .languages import direction_to_languages, source_with_language

    _, target_lang = direction_to_languages(direction)
    sentences = list(sentences)
    labels = list(labels) if labels is not None else [f"sentence {i}" for i in range(1, len(sentences) + 1)]
    if len(labels) != len(sentences):
        raise ValueError(f"Got {len(labels)} labels for {len(sentences)} sentences.")
    if not sentences:
        raise ValueError("No sentence to translate: the input is empty.")
    for name, value in (("batch_size", batch_size), ("num_beams", num_beams), ("max_new_tokens", max_new_tokens)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise ValueError(f"{name} must be a positive integer, got {value!r}.")
    sources = []
    for label, sentence in zip(labels, sentences, strict=True):
        try:
            sources.append(source_with_language(sentence, target_lang))
        except (ValueError, TypeError) as error:
            raise ValueError(f"{label[:1].upper()}{label[1:]}: {error}") from None
    limit = _max_source_tokens(model, tokenizer)
    lengths = [len(ids) for ids in tokenizer(sources, verbose=False)["input_ids"]]
    too_long = [i for i, n in enumerate(lengths) if n > limit]
    if too_long:
        warnings.warn(
            f"{len(too_long)} source(s) longer than the {limit} tokens the model accepts; only their first "
            f"{limit} tokens were translated: "
            + _listed([f"{labels[i]} ({lengths[i]} tokens)" for i in too_long])
            + ".",
            TruncatedInputWarning,
            stacklevel=2,
        )
    order = sorted(range(len(sources)), key=lambda i: lengths[i], reverse=True)
    results: list[str] = [""] * len(sources)
    generate_kwargs: dict[str, Any] = {}
    if num_beams is not None:
        generate_kwargs["num_beams"] = num_beams
    if max_new_tokens is not None:
        # As max_length (the decoder start token counts), so it does not clash with the saved max_length.
        generate_kwargs["max_length"] = max_new_tokens + 1
    if length_penalty is not None:
        generate_kwargs["length_penalty"] = float(length_penalty)
    device = next(model.parameters()).device
    for start in range(0, len(order), batch_size):
        indices = order[start : start + batch_size]
        batch = tokenizer(
            [sources[i] for i in indices], return_tensors="pt", padding=True, truncation=True, max_length=limit
        ).to(device)
        with torch.inference_mode():
            output = model.generate(
                input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], **generate_kwargs
            )
        for i, text in zip(indices, tokenizer.batch_decode(output, skip_special_tokens=True), strict=True):
            results[i] = text.strip()
    return results


def score_translations(hypotheses: Sequence[str], references: Sequence[str]) -> dict[str, float]:
    """Corpus BLEU and chrF with sacrebleu's default settings, on detokenized text (the metrics module when
    present, sacrebleu otherwise), and sacrebleu's signatures of the settings when available."""
    try:
        from .metrics import compute_translation_metrics  # type: ignore[attr-defined]

        scores = compute_translation_metrics(list(hypotheses), list(references))
        return {
            k: (float(v) if isinstance(v, (int, float)) else v)
            for k, v in dict(scores).items()
            if isinstance(v, (int, float)) or k.endswith("_signature")
        }
    except ImportError:
        import sacrebleu

        return {
            "bleu": sacrebleu.corpus_bleu(list(hypotheses), [list(references)]).score,
            "chrf": sacrebleu.corpus_chrf(list(hypotheses), [list(references)]).score,
        }


def evaluate_pairs(
    model: Any,
    tokenizer: Any,
    pairs: Sequence[Sequence[str]],
    directions: Sequence[str] = ("es-en", "en-es"),
    *,
    num_beams: int | None = None,
    batch_size: int = 32,
    max_new_tokens: int | None = None,
    length_penalty: float | None = None,
    labels: Sequence[str] | None = None,
) -> EvaluationResult:
    """Translate the (English, Spanish) `pairs` in each direction and score the translations.

    Returns:
        `EvaluationResult`: ``scores[direction]`` has ``bleu`` and ``chrf`` (sacrebleu defaults, detokenized),
        ``sentences``, the decoding settings and sacrebleu's signatures; ``hypotheses[direction]`` the
        translations, in the order of `pairs`.

    Raises:
        ValueError: on an unknown direction or no pairs.
    """
    from .data import LANGUAGES
    from .languages import direction_to_languages

    if not directions:
        raise ValueError("No direction to evaluate.")
    for direction in directions:
        direction_to_languages(direction)
    pairs = list(pairs)
    if not pairs:
        raise ValueError("No sentence pair to evaluate.")
    generation = getattr(model, "generation_config", None)
    scores: dict[str, dict[str, Any]] = {}
    hypotheses: dict[str, list[str]] = {}
    for direction in dict.fromkeys(directions):
        source_lang, target_lang = direction_to_languages(direction)
        sources = [pair[LANGUAGES.index(source_lang)] for pair in pairs]
        references = [pair[LANGUAGES.index(target_lang)] for pair in pairs]
        hypotheses[direction] = translate(
            model,
            tokenizer,
            sources,
            direction,
            num_beams=num_beams,
            batch_size=batch_size,
            max_new_tokens=max_new_tokens,
            length_penalty=length_penalty,
            labels=labels,
        )
        scores[direction] = {
            **score_translations(hypotheses[direction], references),
            "sentences": len(pairs),
            "num_beams": num_beams if num_beams is not None else getattr(generation, "num_beams", None),
            "length_penalty": (
                float(length_penalty) if length_penalty is not None else getattr(generation, "length_penalty", None)
            ),
        }
    return EvaluationResult(scores, hypotheses)


def evaluate_file(
    model: Any,
    tokenizer: Any,
    path: str | os.PathLike[str],
    directions: Sequence[str] = ("es-en", "en-es"),
    *,
    limit: int | None = None,
    num_beams: int | None = None,
    batch_size: int = 32,
    max_new_tokens: int | None = None,
    length_penalty: float | None = None,
    strict: bool = False,
) -> dict[str, dict[str, Any]]:
    """BLEU/chrF of the model on the pairs of `path` (``English<TAB>Spanish``; CSV and JSONL too), per direction.

    Malformed lines are skipped with a warning that gives their line numbers, or rejected when `strict` (see
    `hf_vaswani.data.read_pairs`); `limit` scores the first pairs only.

    Raises:
        FileNotFoundError: if `path` does not exist. ValueError: on an unknown direction, a file without a valid
            pair, or (`strict`) a malformed line.
    """
    from .data import read_pairs
    from .languages import direction_to_languages

    for direction in directions:
        direction_to_languages(direction)
    pairs = read_pairs(path, strict=strict)
    if limit:
        pairs = pairs[:limit]
    return evaluate_pairs(
        model,
        tokenizer,
        pairs,
        directions,
        num_beams=num_beams,
        batch_size=batch_size,
        max_new_tokens=max_new_tokens,
        length_penalty=length_penalty,
    ).scores
