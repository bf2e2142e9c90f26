"""The two configurations, each from the other: a `MarianConfig` as a `VaswaniConfig` and back.

A `MarianMTModel` is the Transformer of Vaswani et al. with fixed choices (post-LayerNorm with eps 1e-5, sinusoidal
positions with all sines first, counted from 0, a `final_logits_bias`), each of them an option of `VaswaniConfig`.
So on import (`hf_vaswani.marian.convert`) a Marian config maps to ours once the options we have no counterpart for
are refused (`check_marian_config`), and on export (`hf_vaswani.marian.export`) ours maps to Marian's once the
options Marian cannot compute are refused (`check_marian_compatible`). The weights follow `hf_vaswani.marian.mapping`.
"""

from __future__ import annotations

import copy
from typing import Any

from transformers import MarianConfig, PreTrainedConfig

from ..configuration_vaswani import ACTIVATIONS, VaswaniConfig
from ..export.loading import ExportError
from .mapping import MARIAN_LAYER_NORM_EPS

__all__ = [
    "UNMAPPABLE_OPTIONS",
    "MarianConversionError",
    "check_marian_compatible",
    "check_marian_config",
    "check_model_type",
    "config_notes",
    "marian_config_for",
    "vaswani_config_from_marian",
]

#: Fields that older Marian/BART configs can carry (a `MarianConfig` keeps any extra field it is given), the value
#: that describes the architecture `MarianMTModel` computes, and what any other value would ask for. The
#: `transformers` Marian code ignores them all, so a checkpoint that sets one of them was trained as a model that
#: neither `MarianMTModel` nor hf_vaswani computes: it is refused rather than converted into something else.
UNMAPPABLE_OPTIONS: dict[str, tuple[bool, str]] = {
    "normalize_before": (False, "pre-LayerNorm layers (hf_vaswani's pre-LN adds a final LayerNorm Marian lacks)"),
    "add_final_layer_norm": (False, "a LayerNorm after the last layer of each stack"),
    "normalize_embedding": (False, "a LayerNorm on the embeddings"),
    "layernorm_embedding": (False, "a LayerNorm on the embeddings"),
    "static_position_embeddings": (True, "learned position embeddings instead of the sinusoidal table"),
    "add_bias_logits": (False, "a learned bias added through add_bias_logits"),
}


class MarianConversionError(ValueError):
    """A Marian checkpoint, config or weight that cannot be converted exactly; the message names the culprit."""


# ----------------------------------------------------------------------------------------------------------------
# Marian -> hf_vaswani
# ----------------------------------------------------------------------------------------------------------------


def check_model_type(config: PreTrainedConfig | dict[str, Any], source: str) -> None:
    """Refuse a config (or config dict) that is not a Marian one; `source` names it in the message."""
    values = config if isinstance(config, dict) else config.to_dict()
    model_type = values.get("model_type")
    if model_type != "marian":
        architectures = values.get("architectures") or []
        what = f"a {model_type!r} model" if model_type else "a config without model_type"
        if architectures:
            what += f" ({', '.join(architectures)})"
        raise MarianConversionError(
            f"{source} is {what}, not a Marian one (model_type 'marian'): convert-marian only converts "
            "MarianMTModel checkpoints such as Helsinki-NLP/opus-mt-*."
        )


def check_marian_config(config: MarianConfig) -> None:
    """Refuse the options hf_vaswani has no counterpart for, naming each one."""
    problems = []
    for name, (supported, meaning) in UNMAPPABLE_OPTIONS.items():
        value = getattr(config, name, supported)
        if value is not None and bool(value) != supported:
            problems.append(f"{name}={value!r} asks for {meaning}")
    legacy = bool(problems)
    if config.activation_function not in ACTIVATIONS:
        problems.append(
            f"activation_function={config.activation_function!r} has no counterpart (hf_vaswani has "
            f"{', '.join(ACTIVATIONS)})"
        )
    if not config.is_encoder_decoder or getattr(config, "is_decoder", False):
        problems.append(
            f"is_encoder_decoder={config.is_encoder_decoder!r}, is_decoder={getattr(config, 'is_decoder', None)!r} "
            "describe a decoder-only MarianForCausalLM, not a translation model"
        )
    if problems:
        message = "This Marian config cannot be converted exactly: " + "; ".join(problems) + "."
        if legacy:
            message += (
                " (transformers' MarianMTModel ignores these legacy fields, so such a checkpoint does not run as "
                "trained there either.)"
            )
        raise MarianConversionError(message)


def config_notes(config: MarianConfig) -> list[str]:
    """Fields that change nothing MarianMTModel computes at inference, but that the converted model does not keep."""
    notes = []
    eps = getattr(config, "layer_norm_eps", None)
    if eps is not None and eps != MARIAN_LAYER_NORM_EPS:
        notes.append(
            f"layer_norm_eps={eps} in the Marian config is ignored by MarianMTModel (its LayerNorms use "
            f"{MARIAN_LAYER_NORM_EPS}); the converted model uses {MARIAN_LAYER_NORM_EPS} as MarianMTModel does."
        )
    for name in ("encoder_layerdrop", "decoder_layerdrop"):
        if getattr(config, name, 0.0):
            notes.append(
                f"{name}={getattr(config, name)} is not converted: hf_vaswani has no LayerDrop (training only)."
            )
    return notes


def vaswani_config_from_marian(
    marian: MarianConfig, vocab_size: int, decoder_vocab_size: int, share: bool, tie: bool
) -> VaswaniConfig:
    """The `VaswaniConfig` computing what `MarianMTModel` computes with `marian`; the vocabulary sizes and the
    sharing and tying are passed in because they are read off the weights, which `MarianMTModel` computes with."""
    try:
        return VaswaniConfig(
            vocab_size=vocab_size,
            decoder_vocab_size=decoder_vocab_size,
            d_model=marian.d_model,
            encoder_layers=marian.encoder_layers,
            decoder_layers=marian.decoder_layers,
            encoder_attention_heads=marian.encoder_attention_heads,
            decoder_attention_heads=marian.decoder_attention_heads,
            encoder_ffn_dim=marian.encoder_ffn_dim,
            decoder_ffn_dim=marian.decoder_ffn_dim,
            activation_function=marian.activation_function,
            dropout=float(marian.dropout),
            attention_dropout=float(marian.attention_dropout),
            activation_dropout=float(marian.activation_dropout),
            # MarianMTModel's loss is plain cross-entropy; a label_smoothing that export-marian kept is ours.
            label_smoothing=float(getattr(marian, "label_smoothing", 0.0) or 0.0),
            max_position_embeddings=marian.max_position_embeddings,
            position_encoding="sinusoidal",
            sinusoidal_layout="concatenated",
            layer_norm_position="post",
            layer_norm_eps=MARIAN_LAYER_NORM_EPS,
            scale_embedding=bool(marian.scale_embedding),
            share_embeddings=share,
            tie_word_embeddings=tie,
            final_logits_bias=True,
            init_std=marian.init_std,
            pad_token_id=marian.pad_token_id,
            bos_token_id=marian.bos_token_id,
            eos_token_id=marian.eos_token_id,
            decoder_start_token_id=marian.decoder_start_token_id,
            # How alignments are read off the cross-attention: kept in config.json by export-marian.
            alignment=getattr(marian, "alignment", None),
        )
    except ValueError as error:
        raise MarianConversionError(f"The Marian config has no VaswaniConfig counterpart: {error}") from error


# ----------------------------------------------------------------------------------------------------------------
# hf_vaswani -> Marian
# ----------------------------------------------------------------------------------------------------------------


def check_marian_compatible(config: VaswaniConfig) -> None:
    """Refuse a configuration that no `MarianMTModel` computes, naming the option."""
    if config.position_encoding != "sinusoidal":
        raise ExportError(
            f"position_encoding={config.position_encoding!r}: MarianMTModel always adds the sinusoidal table, so only "
            "sinusoidal models export to Marian."
        )
    if config.layer_norm_position != "post":
        raise ExportError(
            "layer_norm_position='pre': MarianMTModel's layers are post-LayerNorm and it has no final LayerNorm."
        )
    if config.layer_norm_eps != MARIAN_LAYER_NORM_EPS:
        raise ExportError(
            f"layer_norm_eps={config.layer_norm_eps}: MarianMTModel's LayerNorms always use {MARIAN_LAYER_NORM_EPS}."
        )


def marian_config_for(config: VaswaniConfig) -> MarianConfig:
    """The `MarianConfig` of a `MarianMTModel` with the dimensions, activations, dropouts and special ids of ours,
    and as extra fields, which MarianConfig keeps and MarianMTModel ignores, our `alignment` (how `vaswani_inspect`
    reads word alignments off the cross-attention, which the Marian model computes as ours does) and our
    `label_smoothing` (the training loss's: `convert-marian` gives it back, for fine-tuning as trained)."""
    extra: dict[str, Any] = {"label_smoothing": float(config.label_smoothing)}
    if config.alignment is not None:
        extra["alignment"] = copy.deepcopy(config.alignment)
    return MarianConfig(
        **extra,
        vocab_size=config.vocab_size,
        decoder_vocab_size=config.decoder_vocab_size,
        d_model=config.d_model,
        encoder_layers=config.encoder_layers,
        decoder_layers=config.decoder_layers,
        encoder_attention_heads=config.encoder_attention_heads,
        decoder_attention_heads=config.decoder_attention_heads,
        encoder_ffn_dim=config.encoder_ffn_dim,
        decoder_ffn_dim=config.decoder_ffn_dim,
        activation_function=config.activation_function,
        dropout=float(config.dropout),
        attention_dropout=float(config.attention_dropout),
        activation_dropout=float(config.activation_dropout),
        max_position_embeddings=config.max_position_embeddings,
        scale_embedding=bool(config.scale_embedding),
        share_encoder_decoder_embeddings=bool(config.share_embeddings),
        tie_word_embeddings=bool(config.tie_word_embeddings),
        init_std=float(config.init_std or config.d_model**-0.5),
        pad_token_id=config.pad_token_id,
        bos_token_id=config.bos_token_id,
        eos_token_id=config.eos_token_id,
        decoder_start_token_id=config.decoder_start_token_id,
        forced_eos_token_id=None,  # MarianConfig's default (0) would force a token our generate() never forces
    )
