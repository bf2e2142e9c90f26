"""Translating with a trained model, and scoring it on a file of sentence pairs.

`load_translator` loads a model folder (or Hub id) and its tokenizer; `translate` translates a list of
sentences in one direction (``es-en`` or ``en-es``); `evaluate_pairs` / `evaluate_file` score a model with
BLEU and chrF (sacrebleu's defaults, on detokenized text) per direction on ``English<TAB>Spanish`` pairs. The
``translate`` and ``evaluate`` subcommands of ``hf-vaswani`` (`hf_vaswani.commands.translate`) wrap them.

Input problems are never silently mangled: every source is checked before anything is generated
(`hf_vaswani.source_checks`: characters the tokenizer does not know, sources longer than the model accepts, a beam
size up to the vocabulary and a length up to the model's positions through `generation_limits`), the device is one
this machine has (`resolve_device`), and malformed lines of a pairs file are skipped with one warning that gives
their line numbers (`hf_vaswani.data.read_pairs`), or rejected with ``strict=True`` (``--strict``). The names of
`hf_vaswani.source_checks` that callers use are importable from here too.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import torch

from .generation_options import check_generation_options
from .languages import DIRECTIONS
from .limits import GenerationLimits, check_generation_settings, generation_limits  # (re-exported here)
from .model_checks import check_model, reports_silenced
from .paths import DEFAULT_MODEL, default_model_path, looks_like_local_path  # (the first two re-exported here)
from .source_checks import (  # checked_sources and fitted_sources are used here, the others re-exported
    MAX_UNKNOWN_SHARE,
    TruncatedInputWarning,
    UnknownCharacters,
    UnknownCharactersWarning,
    check_known_characters,
    check_not_one_text,
    checked_sources,
    fitted_sources,
    short_repr,
    unknown_characters,
)

__all__ = [
    "DEFAULT_MODEL",
    "EvaluationResult",
    "GenerationLimits",
    "MAX_UNKNOWN_SHARE",
    "TruncatedInputWarning",
    "UnknownCharacters",
    "UnknownCharactersWarning",
    "check_generation_settings",
    "check_known_characters",
    "default_model_path",
    "describe_load_error",
    "evaluate_file",
    "evaluate_pairs",
    "generation_limits",
    "load_translator",
    "resolve_device",
    "score_translations",
    "translate",
    "unknown_characters",
]


class EvaluationResult(NamedTuple):
    """What `evaluate_pairs` returns: the scores and the translations, per direction."""

    scores: dict[str, dict[str, Any]]
    hypotheses: dict[str, list[str]]


def resolve_device(device: str | torch.device | None = None) -> torch.device:
    """The torch device `device` names, checked to exist on this machine; None: ``cuda`` when PyTorch sees a
    GPU, else ``cpu``.

    Raises:
        ValueError: `device` is not a torch device name (``"bogus"``), or names one this machine does not have
            (``"cuda"`` without a GPU, ``"cuda:3"`` with one GPU, ``"meta"``, which holds no weights).
    """
    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        resolved = torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        raise ValueError(
            f"Unknown device {str(device)!r}: expected a torch device such as cpu, cuda, cuda:1 or mps."
        ) from None
    if resolved.type == "cpu":
        return resolved
    if resolved.type == "meta":
        raise ValueError("Device 'meta' holds no data: a model cannot run there; choose cpu or a GPU.")
    backend = torch.backends.mps if resolved.type == "mps" else getattr(torch, resolved.type, None)
    is_available = getattr(backend, "is_available", None)
    if not callable(is_available) or not is_available():
        raise ValueError(f"Device {str(device)!r} is not available: PyTorch finds no {resolved.type} device here.")
    count = getattr(getattr(torch, resolved.type, None), "device_count", None)
    if resolved.index is not None and callable(count) and resolved.index >= count():
        raise ValueError(
            f"Device {str(device)!r} does not exist: PyTorch finds {count()} {resolved.type} device(s), "
            f"numbered from 0."
        )
    return resolved


def describe_load_error(error: BaseException) -> str:
    """One line saying why loading a model failed: for a pickle that ``torch.load(weights_only=True)`` refused,
    the refused object only (torch's message goes on for a page, ANSI escapes included); else the message."""
    import pickle
    import re

    text = re.sub(r"\x1b\[[0-9;]*m", "", str(error))
    if isinstance(error, pickle.UnpicklingError):
        found = re.search(r"WeightsUnpickler error: ([^\n]*?)(?:\. |\.?$|\n)", text, re.MULTILINE)
        reason = found.group(1) if found else " ".join(text.split())[:200]
        return (
            f"a pickled weights file holds an object that torch.load(weights_only=True) refuses to run ({reason}); "
            "nothing from it was run"
        )
    return " ".join(text.split())


def load_translator(
    model: str | os.PathLike[str] | None = None, device: str | None = None, dtype: str | None = None
) -> tuple[Any, Any]:
    """Load (model, tokenizer) from a model folder or a Hub id; `model=None` loads the shipped checkpoint.

    Raises:
        FileNotFoundError: if `model` is a local path that does not hold a model.
        ValueError: if the model or its tokenizer cannot be loaded from it (damaged or foreign files, a pickled
            checkpoint that ``torch.load(weights_only=True)`` refuses), or `device` is not a device this machine
            has (`resolve_device`).
        BrokenModelError: (a ValueError) the folder loads but not as a working model: tensors missing, unexpected
            or of the wrong shape, NaN or infinite weights, special-token ids outside the vocabulary, another
            model's tokenizer (`hf_vaswani.model_checks.check_model`). ``from_pretrained`` itself only reports these.
    """
    from pickle import UnpicklingError

    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    import hf_vaswani  # noqa: F401  (registers the "vaswani" model type with the Auto classes)

    target = resolve_device(device)
    name = str(model) if model is not None else default_model_path()  # the default is a folder, never a Hub id
    local = model is None or looks_like_local_path(name)
    if local and not (Path(name).expanduser() / "config.json").is_file():
        raise FileNotFoundError(f"No model folder with a config.json at {name!r}.")
    if local:
        name = str(Path(name).expanduser())
    from safetensors import SafetensorError

    from .model_folder import check_json_files, check_model_folder, with_decoding_settings

    kwargs: dict[str, Any] = {}
    if dtype:
        kwargs["dtype"] = _torch_dtype(dtype)
    if local:
        # Before anything is built: a value transformers reads without a word (a NaN layer_norm_eps, a beam size
        # of 0, 10**9 positions) is one line naming the file and the field, not garbage or a traceback.
        check_model_folder(name)
    try:
        if local:
            check_json_files(name)  # names the damaged file, which transformers' JSON error does not
        tokenizer = AutoTokenizer.from_pretrained(name)
        with reports_silenced():  # check_model says what the report would
            loaded, loading_info = AutoModelForSeq2SeqLM.from_pretrained(name, output_loading_info=True, **kwargs)
    except (SafetensorError, UnpicklingError, RuntimeError, KeyError, TypeError, ValueError, OSError) as error:
        # A damaged or foreign folder: say which one, in one line (HF_VASWANI_TRACEBACK=1 shows the cause).
        raise ValueError(f"Cannot load the model at {name!r}: {describe_load_error(error)}") from error
    # What transformers only reports (a tensor initialised at random, NaN weights, another model's tokenizer)
    # would translate to garbage with exit code 0: refuse it here, where every command and the demo load.
    check_model(loaded, tokenizer, loading_info=loading_info, source=name)
    with_decoding_settings(loaded, name if local else None, source=name)
    loaded.to(target).eval()
    return loaded, tokenizer


def _torch_dtype(name: str) -> torch.dtype:
    """The floating-point torch dtype `name` names (``"float32"``, ``"bfloat16"``...)."""
    dtype = getattr(torch, name, None) if isinstance(name, str) else None
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise ValueError(f"dtype must name a floating-point torch dtype (float32, bfloat16, float16), got {name!r}.")
    return dtype


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
    keep_spans: bool = False,
) -> list[str]:
    """Translate `sentences` in `direction` (``"es-en"`` or ``"en-es"``); one translation per sentence.

    `keep_spans` keeps numbers, URLs, e-mail addresses and rare names as they are, through placeholders the model
    copies (`hf_vaswani.placeholders.translate_keeping_spans`; a `KeepSpansWarning` names a sentence translated
    without them because the model lost a placeholder).

    Sentences are batched by length (the order of the result is the order of `sentences`); `num_beams`,
    `max_new_tokens` and `length_penalty` default to the model's generation config. A sentence longer than the
    model accepts (``max_position_embeddings`` tokens, language token and ``</s>`` included) is cut to that
    length, with one `TruncatedInputWarning` that names the sentences (by `labels`, default "sentence i").
    Everything is checked before the first sentence is translated.

    Raises:
        TypeError: `sentences` (or `labels`) is one text instead of a list of texts, or `keep_spans` is not
            True or False.
        ValueError: on an unknown direction, no sentences, an empty sentence, a sentence most of whose
            characters the tokenizer does not know (`check_known_characters`), a batch size below 1, a beam
            size or maximum length the model cannot generate with, or a length penalty that is not a finite
            number (`hf_vaswani.generation_options.check_generation_options`).
    """
    check_not_one_text(sentences, "sentences", "translate(model, tokenizer, ['el gato negro'])")
    if labels is not None:
        check_not_one_text(labels, "labels", "labels=['first sentence']")
    _check_options(model, num_beams, max_new_tokens, length_penalty)
    from .placeholders import check_keep_spans

    check_keep_spans(keep_spans)
    if keep_spans:
        from .placeholders import translate_with_model_keeping_spans

        settings = dict(num_beams=num_beams, batch_size=batch_size, max_new_tokens=max_new_tokens)
        return translate_with_model_keeping_spans(
            lambda texts, names: translate(
                model, tokenizer, texts, direction, length_penalty=length_penalty, labels=names, **settings
            ),
            model,
            tokenizer,
            sentences,
            direction,
            labels,
        )
    if getattr(model, "is_ctranslate2", False):  # hf_vaswani.backends.CTranslate2Translator
        return model.translate(
            sentences,
            direction,
            num_beams=num_beams,
            batch_size=batch_size,
            max_new_tokens=max_new_tokens,
            length_penalty=length_penalty,
            labels=labels,
        )
    sentences = list(sentences)
    labels = list(labels) if labels is not None else [f"sentence {i}" for i in range(1, len(sentences) + 1)]
    settings = dict(num_beams=num_beams, batch_size=batch_size, max_new_tokens=max_new_tokens)
    sources = checked_sources(model, tokenizer, sentences, direction, labels, **settings)
    return _generate(model, tokenizer, sources, labels, length_penalty=length_penalty, **settings)


def _check_options(model: Any, num_beams: int | None, max_new_tokens: int | None, length_penalty: float | None) -> None:
    """The decoding options, checked as the trace and `extract` check theirs (`check_generation_options`)."""
    given = {"num_beams": num_beams, "max_new_tokens": max_new_tokens, "length_penalty": length_penalty}
    check_generation_options(model, {name: value for name, value in given.items() if value is not None})


def _generate_kwargs(
    model: Any, num_beams: int | None, max_new_tokens: int | None, length_penalty: float | None
) -> dict[str, Any]:
    generate_kwargs: dict[str, Any] = {}
    if num_beams is not None:
        generate_kwargs["num_beams"] = num_beams
    if max_new_tokens is not None:
        if getattr(getattr(model, "generation_config", None), "max_new_tokens", None) is not None:
            generate_kwargs["max_new_tokens"] = max_new_tokens
        else:  # as max_length (the decoder start token counts), so it does not clash with a saved max_length
            generate_kwargs["max_length"] = max_new_tokens + 1
    if length_penalty is not None:
        generate_kwargs["length_penalty"] = float(length_penalty)
    return generate_kwargs


def _generate(
    model: Any,
    tokenizer: Any,
    sources: Sequence[str],
    labels: Sequence[str],
    *,
    num_beams: int | None,
    batch_size: int,
    max_new_tokens: int | None,
    length_penalty: float | None,
) -> list[str]:
    """Translate the checked `sources` in batches of similar length."""
    lengths, limit = fitted_sources(model, tokenizer, sources, labels)
    order = sorted(range(len(sources)), key=lambda i: lengths[i], reverse=True)
    results: list[str] = [""] * len(sources)
    generate_kwargs = _generate_kwargs(model, num_beams, max_new_tokens, length_penalty)
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
    directions: Sequence[str] = DIRECTIONS,
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
        TypeError: `pairs` is not a list of (English, Spanish) texts.
        ValueError: on an unknown direction, no pairs, or a source or setting `translate` refuses (checked for
            every direction before the first is translated).
    """
    from .data import LANGUAGES
    from .languages import direction_to_languages

    if not directions:
        raise ValueError("No direction to evaluate.")
    check_not_one_text(directions, "directions", "['es-en']")
    for direction in directions:
        direction_to_languages(direction)
    check_not_one_text(pairs, "pairs", "[('The cat.', 'El gato.')]")
    _check_options(model, num_beams, max_new_tokens, length_penalty)
    pairs = list(pairs)
    for number, pair in enumerate(pairs, 1):
        if (
            isinstance(pair, (str, bytes))
            or not isinstance(pair, Sequence)
            or len(pair) != 2
            or not all(isinstance(side, str) for side in pair)
        ):
            raise TypeError(f"Pair {number} must be two texts (English, Spanish), got {short_repr(pair)}.")
    if not pairs:
        raise ValueError("No sentence pair to evaluate.")
    generation = getattr(model, "generation_config", None)
    labels = list(labels) if labels is not None else [f"pair {i}" for i in range(1, len(pairs) + 1)]
    settings = dict(num_beams=num_beams, batch_size=batch_size, max_new_tokens=max_new_tokens)
    sentences = {
        direction: [pair[LANGUAGES.index(direction_to_languages(direction)[0])] for pair in pairs]
        for direction in dict.fromkeys(directions)
    }
    # Every direction's sources are checked before the first one is translated.
    checked = {d: checked_sources(model, tokenizer, s, d, labels, **settings) for d, s in sentences.items()}
    scores: dict[str, dict[str, Any]] = {}
    hypotheses: dict[str, list[str]] = {}
    for direction, sources in checked.items():
        target_lang = direction_to_languages(direction)[1]
        references = [pair[LANGUAGES.index(target_lang)] for pair in pairs]
        if getattr(model, "is_ctranslate2", False):  # hf_vaswani.backends.CTranslate2Translator
            translated = model.translate(
                sentences[direction], direction, length_penalty=length_penalty, labels=labels, **settings
            )
        else:
            translated = _generate(model, tokenizer, sources, labels, length_penalty=length_penalty, **settings)
        hypotheses[direction] = translated
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
    directions: Sequence[str] = DIRECTIONS,
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
