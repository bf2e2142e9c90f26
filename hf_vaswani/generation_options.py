"""The one check of decoding options that `translate`, `extract` (and through it `attribute` and the demo) and the
decoding trace share: `check_generation_options(model, options)`.

It refuses, before any work and with one line naming the option, what ``model.generate()`` would refuse with a
traceback or run wrongly without a word:

* a name that is no field of transformers' `GenerationConfig` (a misspelt ``nm_beams``), with the closest field;
* a beam size or length the model cannot generate with, or a length penalty that is not a finite number
  (`hf_vaswani.limits.check_generation_settings`);
* an empty ``eos_token_id`` list (``generate()`` fails on it with an IndexError);
* a special token id (``forced_bos_token_id``, ``eos_token_id``...) outside the model's vocabulary (an IndexError,
  or a token that is never produced);
* what transformers' own `GenerationConfig.validate()` refuses, on the model's generation config with the options
  applied (exactly the check ``generate()`` makes);
* a decoding strategy that ``generate()`` only runs as remote code from the Hub (group beam search, constrained
  beam search, contrastive search, DoLa).
"""

from __future__ import annotations

import copy
import difflib
from collections.abc import Collection, Mapping
from typing import Any

from .limits import check_generation_settings, generation_limits

__all__ = ["GENERATE_ARGUMENTS", "check_generation_options"]

#: The keyword arguments of ``generate()`` that are not `GenerationConfig` fields and run no remote code
#: (``custom_generate`` and ``trust_remote_code`` are left out): what `extract` passes on as they are.
GENERATE_ARGUMENTS = frozenset(
    (
        "generation_config",
        "logits_processor",
        "stopping_criteria",
        "prefix_allowed_tokens_fn",
        "synced_gpus",
        "assistant_model",
        "streamer",
        "negative_prompt_ids",
        "negative_prompt_attention_mask",
    )
)

#: Options that name one token id, or a list of them: each must be a token of the model's vocabulary.
_TOKEN_ID_OPTIONS = (
    "eos_token_id",
    "bos_token_id",
    "pad_token_id",
    "decoder_start_token_id",
    "forced_bos_token_id",
    "forced_eos_token_id",
)


def check_generation_options(model: Any, options: Mapping[str, Any], *, other_arguments: Collection[str] = ()) -> None:
    """Refuse decoding `options` (``generate()`` keyword arguments) that ``model.generate()`` would refuse or run
    wrongly (module docstring).

    Args:
        model: the model that will generate (its ``config`` and ``generation_config``; a model without a
            ``generation_config``, such as a CTranslate2 translator, gets every check but transformers' own).
        options: the keyword arguments, as given to ``generate()``.
        other_arguments: names the caller passes to ``generate()`` besides `GenerationConfig` fields
            (``logits_processor``...), accepted as they are.

    Raises:
        ValueError: one line naming the option that is wrong and why.
    """
    from transformers import GenerationConfig

    generation = getattr(model, "generation_config", None)
    base = copy.deepcopy(generation) if isinstance(generation, GenerationConfig) else GenerationConfig()
    fields = {name for name in (*vars(GenerationConfig()), *vars(base)) if not name.startswith("_")}
    unknown = [name for name in options if name not in fields and name not in other_arguments]
    if unknown:
        raise ValueError(f"Unknown generation option {_with_hint(unknown[0], fields)}: generate() would refuse it.")
    check_generation_settings(
        model,
        num_beams=options.get("num_beams"),
        max_new_tokens=options.get("max_new_tokens"),
        length_penalty=options.get("length_penalty"),
    )
    _check_token_ids(model, options)
    settings = {name: value for name, value in options.items() if name in fields}
    try:
        base.update(**settings)  # runs GenerationConfig.validate(), as generate() does
    except (TypeError, ValueError) as error:
        raise ValueError(f"Invalid generation options: {' '.join(str(error).split())}") from None
    if generation is not None:
        _check_mode(base)


def _with_hint(name: str, fields: Collection[str]) -> str:
    close = difflib.get_close_matches(name, sorted(fields), n=1)
    return f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else "")


def _check_token_ids(model: Any, options: Mapping[str, Any]) -> None:
    vocabulary = generation_limits(model).num_beams
    for name in _TOKEN_ID_OPTIONS:
        if name not in options or options[name] is None:
            continue
        value = options[name]
        ids = list(value) if isinstance(value, (list, tuple)) else [value]
        if not ids:
            raise ValueError(
                f"{name} is an empty list: give a token id or a list of token ids (None: stop at the length limit)."
            )
        for token in ids:
            if isinstance(token, bool) or not isinstance(token, int) or not 0 <= token < vocabulary:
                raise ValueError(
                    f"{name}={value!r} is not a token id of the model's vocabulary (whole numbers from 0 to "
                    f"{vocabulary - 1})."
                )


def _check_mode(config: Any) -> None:
    """Refuse a strategy transformers moved to a ``custom_generate`` repository on the Hub (remote code)."""
    from transformers.generation.utils import GENERATION_MODES_MAPPING

    mode = config.get_generation_mode()
    repository = GENERATION_MODES_MAPPING.get(mode, "")
    if "/" in repository:
        strategy = mode.name.replace("_", " ").lower()
        raise ValueError(
            f"These generation options ask for {strategy}, which generate() runs only as remote code from the Hub "
            f"({repository}): use greedy search, beam search (num_beams) or sampling."
        )
