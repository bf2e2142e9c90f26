"""``training.init_from``: the model a run starts from, checked against the recipe and loaded whole.

`from_pretrained` takes the recipe's ``model`` section as overrides of the folder's config.json, so a recipe
written for another size builds a model of that size and then fails on every tensor (transformers' report of
mismatched sizes and a RuntimeError); a folder whose weights lack tensors loads with freshly initialised ones
and only a report. Here the recipe is compared with the folder's config first, and the load must be complete.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from ..configuration_vaswani import VaswaniConfig
from ..modeling_vaswani import VaswaniForConditionalGeneration

__all__ = ["ARCHITECTURE_FIELDS", "architecture_differences", "load_starting_model"]

#: The VaswaniConfig fields that make a model what it is (the shapes of its weights, and the function those
#: weights compute): a recipe that starts from a model may change its dropout or label smoothing, not these.
ARCHITECTURE_FIELDS: tuple[str, ...] = (
    "vocab_size",
    "decoder_vocab_size",
    "d_model",
    "encoder_layers",
    "decoder_layers",
    "encoder_attention_heads",
    "decoder_attention_heads",
    "encoder_ffn_dim",
    "decoder_ffn_dim",
    "max_position_embeddings",
    "activation_function",
    "position_encoding",
    "sinusoidal_layout",
    "layer_norm_position",
    "scale_embedding",
    "share_embeddings",
    "tie_word_embeddings",
    "final_logits_bias",
)


def architecture_differences(recipe_model: Mapping[str, Any], config: VaswaniConfig) -> list[str]:
    """``"d_model 32 in the recipe, 64 in the model"`` for each architecture field the recipe's ``model``
    section sets to another value than `config`."""
    return [
        f"{name} {recipe_model[name]!r} in the recipe, {getattr(config, name)!r} in the model"
        for name in ARCHITECTURE_FIELDS
        if name in recipe_model and recipe_model[name] != getattr(config, name)
    ]


def load_starting_model(init_from: str, recipe_model: Mapping[str, Any]) -> VaswaniForConditionalGeneration:
    """The model saved in `init_from`, in float32, with the recipe's non-architecture fields (dropout, label
    smoothing, ...) applied. Raises a ValueError naming the folder when the recipe asks for another architecture,
    or when the folder's weights are not exactly the model's (missing, unexpected or mismatched tensors)."""
    folder = Path(init_from)
    if not (folder / "config.json").is_file():
        raise FileNotFoundError(f"training.init_from: no model folder (with a config.json) at {str(init_from)!r}.")
    try:
        config = VaswaniConfig.from_pretrained(init_from)
    except (OSError, ValueError, TypeError) as error:
        raise ValueError(f"training.init_from {str(init_from)!r}: its config.json is not usable ({error})") from None
    differences = architecture_differences(recipe_model, config)
    if differences:
        raise ValueError(
            f"training.init_from {str(init_from)!r} is another model than the recipe describes: "
            f"{'; '.join(differences)}. Remove these fields from the recipe's model section (the model brings "
            "its own), or start from a model of that size."
        )
    overrides = {key: value for key, value in recipe_model.items() if key not in ARCHITECTURE_FIELDS}
    try:
        model, info = VaswaniForConditionalGeneration.from_pretrained(
            init_from, dtype=torch.float32, output_loading_info=True, **overrides
        )
    except RuntimeError as error:  # the weights do not fit the folder's own config
        raise ValueError(
            f"training.init_from {str(init_from)!r}: its weights do not fit its config.json "
            f"({' '.join(str(error).split())[:200]})"
        ) from None
    problems = [
        f"{what} {sorted(keys)[:3]}"
        for what, keys in (
            ("missing", info.get("missing_keys", ())),
            ("unexpected", info.get("unexpected_keys", ())),
            ("mismatched", [k[0] if isinstance(k, tuple) else k for k in info.get("mismatched_keys", ())]),
        )
        if keys
    ]
    if problems:
        raise ValueError(
            f"training.init_from {str(init_from)!r}: its weights are not the model's ({'; '.join(problems)}): "
            "a model would start from freshly initialised tensors."
        )
    return model
