"""Is a loaded model folder what it claims to be? Checks that turn transformers' reports into errors.

`from_pretrained` loads a folder with a tensor missing by initialising that tensor at random, and only logs a
"MISSING ... newly initialized" report; it loads NaN or zeroed weights, special-token ids outside the vocabulary,
another model's tokenizer and decoding settings that `generate` cannot use (`hf_vaswani.config_checks`) without a
word. Each of those then translates to garbage with exit code 0. The commands and the demo load through
`hf_vaswani.inference.load_translator` (ours) and `vaswani_inspect.loading` (every architecture), which call
`check_model` on what they loaded, so such a folder is refused in one line naming the folder and the problem. A
Python user who calls `from_pretrained` directly keeps transformers' behaviour and can call `check_model` (or
`model_problems`) themselves; `check_tokenizer` checks a model and a tokenizer given in memory.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import torch

from .languages import LANGUAGE_TOKEN_PATTERN, LANGUAGE_TOKENS

__all__ = [
    "BrokenModelError",
    "check_model",
    "check_tokenizer",
    "model_problems",
    "reports_silenced",
    "settings_problems",
    "tokenizer_class_problems",
    "tokenizer_problems",
    "tokenizer_size",
    "vocabulary_size_problems",
    "zeroed_weights",
]

#: The config fields that hold token ids; each must be None or an id inside the vocabulary.
TOKEN_ID_FIELDS = ("pad_token_id", "bos_token_id", "eos_token_id", "decoder_start_token_id", "forced_eos_token_id")
_LISTED = 5
#: The multiple an embedding table of another architecture may be padded to beyond its tokenizer's size.
TABLE_ROUNDING = 128


class BrokenModelError(ValueError):
    """A model folder loaded, but not as a working model (missing, mismatched, non-finite or zeroed weights, token
    ids outside the vocabulary, or a tokenizer that does not match the model)."""


def check_model(
    model: Any, tokenizer: Any = None, *, loading_info: Mapping[str, Any] | None = None, source: str = "the model"
) -> None:
    """Raise `BrokenModelError` when `model_problems` finds anything, naming `source` (the folder or Hub id).

    Args:
        model: a loaded `VaswaniForConditionalGeneration` (or any seq2seq model with a config).
        tokenizer: its tokenizer, checked against the model when given.
        loading_info: what ``from_pretrained(..., output_loading_info=True)`` returned next to the model.
        source: how to name the model in the message.
    """
    problems = model_problems(model, tokenizer, loading_info=loading_info)
    if problems:
        raise BrokenModelError(f"The model at {source!r} is broken: {'; '.join(problems)}.")


def check_tokenizer(model: Any, tokenizer: Any) -> None:
    """Raise `BrokenModelError` when `tokenizer` is not `model`'s (`tokenizer_problems`): for a model and a
    tokenizer given in memory, which no loader checked together."""
    problems = tokenizer_problems(model, tokenizer)
    if problems:
        raise BrokenModelError(f"The tokenizer is not this model's: {'; '.join(problems)}.")


def model_problems(model: Any, tokenizer: Any = None, *, loading_info: Mapping[str, Any] | None = None) -> list[str]:
    """Every problem found, one short phrase each (empty for a sound model)."""
    problems = loading_problems(loading_info or {}, tied=_tied_names(model))
    problems += non_finite_weights(model)
    problems += zeroed_weights(model)
    problems += token_id_problems(model)
    problems += settings_problems(model)
    if tokenizer is not None:
        problems += tokenizer_problems(model, tokenizer)
    return problems


def settings_problems(model: Any) -> list[str]:
    """The problems `hf_vaswani.config_checks` finds in the loaded model's config and generation config (for a
    model from the Hub or built in memory; a local folder's files are checked before loading, by
    `hf_vaswani.model_folder.check_model_folder`)."""
    from .config_checks import config_problems, generation_config_problems

    config = model.config.to_dict()
    problems = config_problems(config)
    generation = getattr(model, "generation_config", None)
    if generation is not None:
        problems += generation_config_problems(generation.to_dict(), config)
    return problems


def loading_problems(loading_info: Mapping[str, Any], tied: Iterable[str] = ()) -> list[str]:
    """Missing, unexpected and mismatched tensors in transformers' loading report; tied weights are not missing."""
    tied = set(tied)
    found = []
    for key, what in (
        ("missing_keys", "tensors missing from the weights file (they would be random)"),
        ("unexpected_keys", "tensors the model has no place for"),
        ("mismatched_keys", "tensors of the wrong shape"),
    ):
        names = sorted(str(name if isinstance(name, str) else name[0]) for name in loading_info.get(key) or ())
        names = [name for name in names if name not in tied]
        if names:
            found.append(f"{len(names)} {what}: {_listed(names)}")
    return found


def non_finite_weights(model: Any) -> list[str]:
    """Parameters and buffers holding NaN or infinity."""
    named = [*model.named_parameters(), *model.named_buffers()]
    named = [(name, tensor) for name, tensor in named if tensor.is_floating_point() and tensor.numel()]
    if not named:
        return []
    # A float64 sum is NaN or infinite exactly when the tensor holds a NaN or an infinity, and one reduction per
    # tensor is ~20x cheaper than torch.isfinite over every element (7.6M weights: ~30 ms instead of ~0.5 s).
    with torch.no_grad():
        sums = torch.stack([tensor.detach().sum(dtype=torch.float64).cpu() for _, tensor in named])
    finite = torch.isfinite(sums).tolist()
    bad = [name for (name, _), ok in zip(named, finite) if not ok]
    return [f"{len(bad)} tensors hold NaN or infinite values: {_listed(bad)}"] if bad else []


def zeroed_weights(model: Any) -> list[str]:
    """Weights no training leaves: a matrix of a linear or embedding layer whose first or last half is exactly zero
    (a damaged or truncated weights file; a pruned model has its zeros scattered, a padding row is one row), and a
    LayerNorm gain that is zero everywhere (the layer would output its bias alone)."""
    bad, seen = [], set()
    with torch.no_grad():
        for module_name, module in model.named_modules():
            weight = getattr(module, "weight", None)
            if not isinstance(weight, torch.Tensor) or not weight.is_floating_point() or weight.data_ptr() in seen:
                continue
            seen.add(weight.data_ptr())
            name = f"{module_name}.weight" if module_name else "weight"
            if isinstance(module, (torch.nn.Linear, torch.nn.Embedding)) and weight.dim() == 2:
                flat, half = weight.detach().reshape(-1), weight.numel() // 2
                if half and (not flat[:half].any() or not flat[-half:].any()):
                    bad.append(name)
            elif isinstance(module, torch.nn.LayerNorm) and weight.numel() and not weight.detach().any():
                bad.append(name)
    return [f"{len(bad)} weight tensors are zero in half or more of their values: {_listed(bad)}"] if bad else []


def token_id_problems(model: Any) -> list[str]:
    """Special-token ids of the config and generation config that are not inside the decoder's vocabulary."""
    config = model.config
    vocabulary = int(getattr(config, "decoder_vocab_size", None) or config.vocab_size)
    found = []
    sources = [("config.json", config)]
    if getattr(model, "generation_config", None) is not None:
        sources.append(("generation_config.json", model.generation_config))
    for file, settings in sources:
        for field in TOKEN_ID_FIELDS:
            value = getattr(settings, field, None)
            for token_id in value if isinstance(value, (list, tuple)) else [value]:
                if token_id is not None and not (isinstance(token_id, int) and 0 <= token_id < vocabulary):
                    found.append(f"{file}'s {field} is {token_id!r}, outside the vocabulary [0, {vocabulary})")
    return found


def tokenizer_size(tokenizer: Any) -> int:
    """How many ids `tokenizer` can give: ``len(tokenizer)``, or more where a tokenizer puts tokens past it
    (M2M100's: its ``__xx__`` language codes and made-up words come after the ``len()`` it reports)."""
    codes = list((getattr(tokenizer, "lang_code_to_id", None) or {}).values())
    ids = [*codes, *(getattr(tokenizer, "all_special_ids", None) or [])]
    highest = max((i for i in ids if isinstance(i, int)), default=-1)
    made_up = int(getattr(tokenizer, "num_madeup_words", 0) or 0) if codes else 0
    return max(len(tokenizer), highest + 1 + made_up)


def tokenizer_problems(model: Any, tokenizer: Any) -> list[str]:
    """A tokenizer that is not this model's, for every architecture: another class than config.json names, special
    tokens at other ids than the model's config says, or a vocabulary of another size (`vocabulary_size_problems`);
    for one of our models also no single token for a language it translates into (unless the tokenizer is of one
    direction, as that of a model converted from a one-direction OPUS-MT model)."""
    config = model.config
    found = tokenizer_class_problems(model, tokenizer)
    found += vocabulary_size_problems(config, tokenizer_size(tokenizer))
    for field in ("pad_token_id", "eos_token_id"):
        expected, actual = getattr(config, field, None), getattr(tokenizer, field, None)
        accepted = expected if isinstance(expected, (list, tuple)) else [expected]
        if expected is not None and actual is not None and actual not in accepted:
            found.append(f"the tokenizer's {field} is {actual!r} and the model's {expected!r}")
        elif expected is not None and actual is None and getattr(config, "model_type", None) == "vaswani":
            found.append(f"the tokenizer's {field} is None and the model's {expected!r}")
    if getattr(config, "model_type", None) != "vaswani" or _one_direction(tokenizer):
        return found  # (the >>xx<< tokens are ours; a one-direction tokenizer names no target)
    unknown = getattr(tokenizer, "unk_token_id", None)
    for token in LANGUAGE_TOKENS.values():
        token_id = tokenizer.convert_tokens_to_ids(token)
        if token_id is None or token_id == unknown or not 0 <= token_id < config.vocab_size:
            found.append(f"the tokenizer has no token {token}")
    return found


def vocabulary_size_problems(config: Any, size: int) -> list[str]:
    """A tokenizer of `size` tokens that does not fit the model's embedding table: ours has exactly one row per
    token; another architecture may have more rows than tokens, but no more than `size` rounded up to a multiple of
    `TABLE_ROUNDING` (t5-small: 32,128 rows for 32,100 tokens), and never fewer. A folder without tokenizer files
    loads a near-empty tokenizer (T5: the 100 sentinel tokens and 3 specials), which this refuses too."""
    vocabulary = int(getattr(config, "vocab_size", 0) or 0)
    if not vocabulary:
        return []
    if getattr(config, "model_type", None) == "vaswani":
        ok = size == vocabulary
    else:
        ok = size <= vocabulary <= -(-size // TABLE_ROUNDING) * TABLE_ROUNDING
    if ok:
        return []
    foreign = getattr(config, "model_type", None) != "vaswani" and size < vocabulary
    hint = " (another model's tokenizer, or none at all)" if foreign else ""
    return [f"the tokenizer has {size} tokens and the model's vocabulary {vocabulary}{hint}"]


def tokenizer_class_problems(model: Any, tokenizer: Any) -> list[str]:
    """A ``tokenizer_class`` in config.json that is not the class of the tokenizer the folder loads (transformers
    builds that class instead when tokenizer_config.json names none, as a Hub tokenizer of another model)."""
    named = getattr(model.config, "tokenizer_class", None)
    if not isinstance(named, str) or not named:
        return []
    loaded = {cls.__name__.removesuffix("Fast") for cls in type(tokenizer).__mro__}
    if "TokenizersBackend" in loaded:  # (transformers' name for PreTrainedTokenizerFast)
        loaded.add("PreTrainedTokenizer")
    if named.removesuffix("Fast") in loaded:
        return []
    return [f"config.json's tokenizer_class is {named!r}, but the folder's tokenizer is a {type(tokenizer).__name__}"]


def _one_direction(tokenizer: Any) -> bool:
    """A tokenizer of one direction, as OPUS-MT's Marian tokenizers are: it says its source and target languages
    and has no target-language tokens (``>>xx<<``)."""
    says = all(isinstance(getattr(tokenizer, name, None), str) for name in ("source_lang", "target_lang"))
    vocabulary = tokenizer.get_vocab() if says and hasattr(tokenizer, "get_vocab") else {}
    return says and not any(LANGUAGE_TOKEN_PATTERN.fullmatch(token) for token in vocabulary)


def _tied_names(model: Any) -> set[str]:
    tied = getattr(model, "all_tied_weights_keys", None) or getattr(model, "_tied_weights_keys", None) or {}
    return set(tied)


def _listed(names: list[str]) -> str:
    more = f" and {len(names) - _LISTED} more" if len(names) > _LISTED else ""
    return ", ".join(names[:_LISTED]) + more


@contextlib.contextmanager
def reports_silenced() -> Iterator[None]:
    """Hold back transformers' warnings (its "LOAD REPORT" of missing tensors among them) while loading a model
    that `check_model` then checks: the problem comes back as one error instead of a table and a traceback."""
    from transformers.utils import logging

    verbosity = logging.get_verbosity()
    logging.set_verbosity_error()
    try:
        yield
    finally:
        logging.set_verbosity(verbosity)
