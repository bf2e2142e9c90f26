"""Import Marian (OPUS-MT) checkpoints into hf_vaswani, exactly.

A `transformers` `MarianMTModel` is the Transformer of Vaswani et al. with a few fixed choices: post-LayerNorm
layers (eps 1e-5), sinusoidal positions with all sines before all cosines, positions counted from 0, embeddings
scaled by sqrt(d_model), a `final_logits_bias` on the logits, and pad = decoder start token. Every one of them is
an option of `VaswaniConfig`, so a Marian checkpoint maps to a `VaswaniForConditionalGeneration` that computes the
same function:

    convert_marian("Helsinki-NLP/opus-mt-es-en", "opus-mt-es-en-vaswani")

or from the shell `hf-vaswani convert-marian Helsinki-NLP/opus-mt-es-en opus-mt-es-en-vaswani`.

Weights are copied under our names: `final_layer_norm` becomes `ffn_layer_norm`, `encoder_attn*` becomes
`cross_attn*`, `fc1`/`fc2` move into `ffn`. Every weight of the source
state dict is either converted or checked (the sinusoidal tables, the `shared` alias): anything else is refused
with the list of names, never dropped. Options the model has no counterpart for are refused, naming the option.
After mapping, the two models are run on a padded check batch and the conversion fails if the logits differ.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
from pathlib import Path
from typing import Any

import torch
from huggingface_hub import ModelCard, ModelCardData
from transformers import GenerationConfig, MarianConfig, MarianMTModel, PreTrainedConfig, PreTrainedModel
from transformers.utils import cached_file

from ..configuration_vaswani import ACTIVATIONS, VaswaniConfig
from ..modeling_vaswani import VaswaniForConditionalGeneration, VaswaniSinusoidalPositionalEncoding
from ..outputs import OutputPlan

logger = logging.getLogger(__name__)

DTYPES: dict[str, torch.dtype] = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}

#: Files of a Marian tokenizer (and the generic tokenizer files), copied verbatim when the source has them.
TOKENIZER_FILES = (
    "source.spm",
    "target.spm",
    "vocab.json",
    "target_vocab.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "tokenizer.json",
)

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

#: Marian's LayerNorms are built with PyTorch's default epsilon, whatever the config says.
MARIAN_LAYER_NORM_EPS = 1e-5

IN_MEMORY = "an in-memory MarianMTModel"
_HUB_ID = re.compile(r"^[\w.-]+(/[\w.-]+)?$")


class MarianConversionError(ValueError):
    """A Marian checkpoint, config or weight that cannot be converted exactly; the message names the culprit."""


# ----------------------------------------------------------------------------------------------------------------
# Public API
# ----------------------------------------------------------------------------------------------------------------


def convert_marian(
    model_id_or_path: str | os.PathLike | MarianMTModel,
    out_dir: str | os.PathLike,
    *,
    dtype: str | torch.dtype | None = None,
    overwrite: bool = False,
) -> Path:
    """Convert a Marian (OPUS-MT) translation model into a `VaswaniForConditionalGeneration` folder.

    Args:
        model_id_or_path: a Hub id (`"Helsinki-NLP/opus-mt-es-en"`), a local folder saved by
            `MarianMTModel.save_pretrained`, or a `MarianMTModel` in memory.
        out_dir: the folder to write (created if needed): `config.json`, `model.safetensors`,
            `generation_config.json` (Marian's, carried over), the modeling code for `trust_remote_code`, the Marian
            tokenizer files when the source has them, and a model card `README.md`. It is written whole
            (`hf_vaswani.outputs`): into a temporary sibling, renamed into place once complete.
        dtype: `"float32"`, `"float16"`, `"bfloat16"` (or the `torch.dtype`) to store the weights in; `None` keeps
            the source's dtype. The equivalence check runs before the cast.
        overwrite: replace an existing non-empty `out_dir` whole (none of its files remain); without it such a
            folder is refused before anything is loaded.

    Returns:
        The output folder.

    Raises:
        MarianConversionError: the source is not a Marian model, sets an option hf_vaswani has no counterpart for
            (the message names it), or its weights do not match its config (the message lists the names).
        ValueError / OSError: `out_dir` is the source folder (or holds it), cannot be written, or is not empty.
    """
    target_dtype = _resolve_dtype(dtype)
    out_dir = Path(out_dir)
    plan = _output_plan(model_id_or_path, out_dir, overwrite)
    marian, source_id, files_source = _load_source(model_id_or_path)

    notes: list[str] = []
    state_dict = marian.state_dict()
    config, mapped = marian_state_dict_to_vaswani(state_dict, marian.config, notes=notes)
    model = VaswaniForConditionalGeneration(config)
    model.load_state_dict(mapped, strict=True)
    max_abs_diff = _check_same_logits(marian, model, notes)

    source_dtype = state_dict["lm_head.weight"].dtype
    if target_dtype is not None and target_dtype != source_dtype:
        notes.append(
            f"Weights stored in {str(target_dtype).removeprefix('torch.')} (the source is "
            f"{str(source_dtype).removeprefix('torch.')}); the logits check ran before the cast."
        )
    model.to(target_dtype or source_dtype)
    model.generation_config = _generation_config(marian)
    with plan.writing() as staged:
        folder = staged(plan.outputs[0].path)
        _save_model(model, folder)
        if files_source is None:
            notes.append(
                "Tokenizer: not copied, the model was converted from memory; save the Marian tokenizer "
                "(`tokenizer.save_pretrained(folder)`) into this folder to use `AutoTokenizer` on it."
            )
            copied: list[str] = []
        else:
            copied = _copy_tokenizer_files(files_source, folder)
            if not copied:
                notes.append(f"Tokenizer: {source_id} has no tokenizer files; none were copied.")
        for note in notes:
            logger.warning(note)
        _write_model_card(
            folder, source_id, files_source, config, copied, max_abs_diff, notes, name=out_dir.resolve().name
        )
    return out_dir


def _output_plan(source: str | os.PathLike | MarianMTModel, out_dir: Path, overwrite: bool) -> OutputPlan:
    """The checked plan for writing `out_dir`: not the source folder, not holding it, writable, and empty unless
    `overwrite`; checked before the source is loaded."""
    local = None if isinstance(source, PreTrainedModel) else Path(os.fspath(source)).expanduser()
    if local is not None and local.exists() and local.resolve() == out_dir.resolve():
        raise MarianConversionError(f"The output folder {str(out_dir)!r} is the source folder: choose another one.")
    plan = OutputPlan(inputs=[local] if local is not None and local.exists() else ())
    plan.folder(out_dir, "output folder", overwrite=overwrite)
    plan.check()
    return plan


def _save_model(model: VaswaniForConditionalGeneration, folder: Path) -> None:
    from safetensors import SafetensorError

    try:
        model.save_pretrained(folder)
    except SafetensorError as error:  # a full disk, for one, surfaces as this
        raise OSError(f"Cannot write the converted weights into {folder}: {error}") from None


def marian_layer_names(side: str) -> list[tuple[str, str]]:
    """The sub-modules of one encoder or decoder layer: (Marian's name, ours), relative to
    `model.<side>.layers.<i>.` in both models; each has a `weight` and a `bias`."""
    attention = ("q_proj.", "k_proj.", "v_proj.", "out_proj.")
    names = [(f"self_attn.{part}", f"self_attn.{part}") for part in attention]
    names.append(("self_attn_layer_norm.", "self_attn_layer_norm."))
    if side == "decoder":
        names += [(f"encoder_attn.{part}", f"cross_attn.{part}") for part in attention]
        names.append(("encoder_attn_layer_norm.", "cross_attn_layer_norm."))
    return names + [("fc1.", "ffn.fc1."), ("fc2.", "ffn.fc2."), ("final_layer_norm.", "ffn_layer_norm.")]


def marian_state_dict_to_vaswani(
    state_dict: dict[str, torch.Tensor], marian_config: MarianConfig, *, notes: list[str] | None = None
) -> tuple[VaswaniConfig, dict[str, torch.Tensor]]:
    """Map a `MarianMTModel` state dict and its config to a `VaswaniConfig` and a matching state dict.

    Every name of `state_dict` is accounted for: converted, or checked and then not needed (the fixed sinusoidal
    tables, the `model.shared` alias). Missing or unexpected names raise `MarianConversionError` listing them.
    Whether the encoder/decoder embeddings are shared and the output projection tied is read from the tensors
    themselves, as `MarianMTModel` computes with them, and checked against the config (a difference is noted).
    """
    notes = notes if notes is not None else []
    _check_marian_config(marian_config)
    notes.extend(_config_notes(marian_config))
    _check_names(state_dict, marian_config)

    encoder_embed = state_dict["model.encoder.embed_tokens.weight"]
    decoder_embed = state_dict["model.decoder.embed_tokens.weight"]
    lm_head = state_dict["lm_head.weight"]
    share = _same(encoder_embed, decoder_embed)
    tie = _same(lm_head, decoder_embed)
    if bool(marian_config.share_encoder_decoder_embeddings) != share:
        notes.append(
            f"share_encoder_decoder_embeddings={marian_config.share_encoder_decoder_embeddings}, but the encoder and "
            f"decoder embeddings are {'equal' if share else 'different'} tensors (transformers shares them only "
            f"when tie_word_embeddings=True too): converted as {'one shared' if share else 'two separate'} "
            "matrices, which is what MarianMTModel computes with."
        )
    if bool(marian_config.tie_word_embeddings) != tie:
        notes.append(
            f"tie_word_embeddings={marian_config.tie_word_embeddings}, but lm_head.weight and the decoder "
            f"embeddings are {'equal' if tie else 'different'}: converted {'tied' if tie else 'untied'}."
        )
    if lm_head.shape[0] != decoder_embed.shape[0]:
        raise MarianConversionError(
            f"lm_head.weight has {lm_head.shape[0]} rows but the decoder embeddings {decoder_embed.shape[0]} "
            f"(decoder_vocab_size={marian_config.decoder_vocab_size}): hf_vaswani predicts over the decoder "
            "vocabulary, so this checkpoint cannot be mapped."
        )
    shared_alias = state_dict.get("model.shared.weight")
    if shared_alias is not None and not _same(shared_alias, encoder_embed):
        notes.append(
            "model.shared.weight differs from the encoder embeddings; MarianMTModel.forward never reads it (each "
            "stack uses its own embed_tokens), so it is not converted."
        )

    config = _vaswani_config(marian_config, encoder_embed.shape[0], decoder_embed.shape[0], share, tie)
    _check_position_tables(state_dict, config)

    mapped: dict[str, torch.Tensor] = {
        "model.encoder.embed_tokens.weight": encoder_embed,
        "model.decoder.embed_tokens.weight": decoder_embed,
        "lm_head.weight": lm_head,
        "final_logits_bias": state_dict["final_logits_bias"],
    }
    for side, layers in (("encoder", config.encoder_layers), ("decoder", config.decoder_layers)):
        for index in range(layers):
            prefix = f"model.{side}.layers.{index}."
            for theirs, ours in marian_layer_names(side):
                mapped.update(_copied(state_dict, prefix + theirs, prefix + ours))
    return config, mapped


# ----------------------------------------------------------------------------------------------------------------
# Source and config checks
# ----------------------------------------------------------------------------------------------------------------


def _load_source(source: str | os.PathLike | MarianMTModel) -> tuple[MarianMTModel, str, str | None]:
    """Return the Marian model, a name for the model card, and where its other files live (None: in memory)."""
    if isinstance(source, PreTrainedModel):
        _check_model_type(source.config, type(source).__name__)
        if not isinstance(source, MarianMTModel):
            raise MarianConversionError(
                f"Got a {type(source).__name__}: only a MarianMTModel (encoder, decoder and lm_head) can be converted."
            )
        name = source.name_or_path or source.config._name_or_path or IN_MEMORY
        return source, str(name), None
    if not isinstance(source, (str, os.PathLike)):
        raise TypeError(f"model_id_or_path must be a Hub id, a folder or a MarianMTModel, got {type(source).__name__}.")

    source = os.fspath(source)
    try:
        config_dict, _ = PreTrainedConfig.get_config_dict(source)
    except (OSError, ValueError) as error:  # missing, not UTF-8, not JSON
        raise MarianConversionError(f"Cannot read a config.json from {source!r}: {_one_line(error)}") from error
    _check_model_type(config_dict, source)
    config = MarianConfig.from_pretrained(source)
    _check_marian_config(config)
    marian, info = _load_marian_weights(source, config)
    problems = []
    if info.get("missing_keys"):
        problems.append(f"missing weights (would be random): {sorted(info['missing_keys'])}")
    if info.get("unexpected_keys"):
        problems.append(f"unexpected weights (no counterpart, would be dropped): {sorted(info['unexpected_keys'])}")
    if info.get("mismatched_keys"):
        problems.append(f"weights whose shape does not match the config: {sorted(info['mismatched_keys'])}")
    if info.get("error_msgs"):
        problems.append(f"load errors: {info['error_msgs']}")
    if problems:
        raise MarianConversionError(f"The checkpoint {source!r} does not match MarianMTModel: " + "; ".join(problems))
    return marian, source, source


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split())


def _load_marian_weights(source: str, config: MarianConfig) -> tuple[MarianMTModel, dict[str, Any]]:
    """`MarianMTModel.from_pretrained` with its loading info; unreadable weights (a damaged safetensors file, a
    pickle that ``torch.load(weights_only=True)`` refuses to run) are a `MarianConversionError` naming `source`."""
    from pickle import UnpicklingError

    from safetensors import SafetensorError

    from ..inference import describe_load_error

    try:
        return MarianMTModel.from_pretrained(source, config=config, dtype="auto", output_loading_info=True)
    except (SafetensorError, UnpicklingError, OSError, RuntimeError, ValueError) as error:
        raise MarianConversionError(f"Cannot load the weights of {source!r}: {describe_load_error(error)}") from error


def _check_model_type(config: PreTrainedConfig | dict[str, Any], source: str) -> None:
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


def _check_marian_config(config: MarianConfig) -> None:
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


def _config_notes(config: MarianConfig) -> list[str]:
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


def _expected_names(config: MarianConfig) -> set[str]:
    names = {
        "final_logits_bias",
        "lm_head.weight",
        "model.encoder.embed_tokens.weight",
        "model.decoder.embed_tokens.weight",
        "model.encoder.embed_positions.weight",
        "model.decoder.embed_positions.weight",
    }

    def linear(prefix: str) -> list[str]:
        return [prefix + "weight", prefix + "bias"]

    for side, layers in (("encoder", config.encoder_layers), ("decoder", config.decoder_layers)):
        for index in range(layers):
            prefix = f"model.{side}.layers.{index}."
            modules = ["self_attn.q_proj.", "self_attn.k_proj.", "self_attn.v_proj.", "self_attn.out_proj."]
            modules += ["self_attn_layer_norm.", "fc1.", "fc2.", "final_layer_norm."]
            if side == "decoder":
                modules += ["encoder_attn.q_proj.", "encoder_attn.k_proj.", "encoder_attn.v_proj."]
                modules += ["encoder_attn.out_proj.", "encoder_attn_layer_norm."]
            for module in modules:
                names.update(linear(prefix + module))
    return names


def _check_names(state_dict: dict[str, torch.Tensor], config: MarianConfig) -> None:
    expected = _expected_names(config)
    optional = {"model.shared.weight"}
    missing = sorted(expected - set(state_dict))
    unexpected = sorted(set(state_dict) - expected - optional)
    if missing or unexpected:
        parts = []
        if missing:
            parts.append(f"missing weights: {missing}")
        if unexpected:
            parts.append(
                f"unexpected weights (no counterpart in hf_vaswani; refusing rather than dropping them): {unexpected}"
            )
        raise MarianConversionError("The MarianMTModel state dict does not match its config: " + "; ".join(parts))


def _vaswani_config(
    marian: MarianConfig, vocab_size: int, decoder_vocab_size: int, share: bool, tie: bool
) -> VaswaniConfig:
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
            # MarianMTModel's loss is plain cross-entropy.
            label_smoothing=0.0,
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
        )
    except ValueError as error:
        raise MarianConversionError(f"The Marian config has no VaswaniConfig counterpart: {error}") from error


def _check_position_tables(state_dict: dict[str, torch.Tensor], config: VaswaniConfig) -> None:
    """Marian's position tables are fixed sinusoids (sines first): check them instead of converting them."""
    positions = torch.arange(config.max_position_embeddings)
    expected = VaswaniSinusoidalPositionalEncoding(config.d_model, "concatenated")(positions)
    for side in ("encoder", "decoder"):
        name = f"model.{side}.embed_positions.weight"
        table = state_dict[name]
        tolerance = max(1e-6, torch.finfo(table.dtype).eps) if table.is_floating_point() else 0.0
        if table.shape != expected.shape or not torch.allclose(table.float().cpu(), expected, atol=tolerance, rtol=0):
            raise MarianConversionError(
                f"{name} is not the sinusoidal table (sines then cosines, positions from 0) of shape "
                f"{tuple(expected.shape)}: learned or altered positions (static_position_embeddings=False) "
                "cannot be mapped."
            )


# ----------------------------------------------------------------------------------------------------------------
# Weight helpers
# ----------------------------------------------------------------------------------------------------------------


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape == b.shape and (a.data_ptr() == b.data_ptr() or torch.equal(a, b))


def _copied(state_dict: dict[str, torch.Tensor], source: str, target: str) -> dict[str, torch.Tensor]:
    return {target + kind: state_dict[source + kind] for kind in ("weight", "bias")}


def _resolve_dtype(dtype: str | torch.dtype | None) -> torch.dtype | None:
    if dtype is None or isinstance(dtype, torch.dtype) and dtype in DTYPES.values():
        return dtype
    if isinstance(dtype, str) and dtype in DTYPES:
        return DTYPES[dtype]
    raise ValueError(f"dtype must be one of {', '.join(DTYPES)} (or None to keep the source's), got {dtype!r}.")


# ----------------------------------------------------------------------------------------------------------------
# Equivalence check, generation config, tokenizer, model card
# ----------------------------------------------------------------------------------------------------------------


@torch.no_grad()
def _check_same_logits(marian: MarianMTModel, model: VaswaniForConditionalGeneration, notes: list[str]) -> float | None:
    """Run both models on a padded batch and fail unless the logits agree; returns the max abs difference."""
    if marian.lm_head.weight.dtype != torch.float32:
        notes.append(f"The logits check was skipped: the source is {marian.lm_head.weight.dtype}, not float32.")
        return None
    config = model.config
    vocab = min(config.vocab_size, config.decoder_vocab_size)
    generator = torch.Generator().manual_seed(0)
    length = min(9, config.max_position_embeddings)
    input_ids = torch.randint(0, vocab, (2, length), generator=generator)
    decoder_input_ids = torch.randint(0, vocab, (2, max(1, length - 2)), generator=generator)
    if config.pad_token_id is not None:
        input_ids[input_ids == config.pad_token_id] = 0 if config.pad_token_id else 1
        decoder_input_ids[decoder_input_ids == config.pad_token_id] = 0 if config.pad_token_id else 1
    decoder_input_ids[:, 0] = config.decoder_start_token_id
    attention_mask = torch.ones_like(input_ids)
    attention_mask[1, length // 2 :] = 0
    inputs = dict(input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=decoder_input_ids)

    was_training = marian.training
    try:
        expected = marian.eval()(**{key: value.to(marian.device) for key, value in inputs.items()}).logits.cpu()
    finally:
        marian.train(was_training)
    actual = model.eval()(**inputs).logits
    difference = float((actual - expected).abs().max())
    tolerance = 1e-4 * max(1.0, float(expected.abs().max()))
    if not difference <= tolerance:
        raise RuntimeError(
            f"The converted model's logits differ from Marian's by {difference:.3g} (> {tolerance:.3g}): "
            "this is a bug in convert_marian, please report it with the model id."
        )
    logger.info("Converted logits match Marian's: max abs difference %.3g.", difference)
    return difference


def _generation_config(marian: MarianMTModel) -> GenerationConfig:
    """Marian's generation settings (num_beams, max_length, bad_words_ids, decoder_start_token_id, ...) as they are."""
    values = marian.generation_config.to_dict()
    for key in ("_from_model_config", "transformers_version", "_commit_hash", "_original_object_hash"):
        values.pop(key, None)
    return GenerationConfig(**values)


def _copy_tokenizer_files(source: str, out_dir: Path) -> list[str]:
    """Copy the tokenizer files the source has, and make `AutoTokenizer.from_pretrained(out_dir)` pick their class.

    OPUS-MT `tokenizer_config.json` files usually name no `tokenizer_class` (`AutoTokenizer` finds it through the
    source's `model_type`, which is now "vaswani"): it is added.
    """
    copied = []
    for name in TOKENIZER_FILES:
        path = cached_file(
            source,
            name,
            _raise_exceptions_for_missing_entries=False,
            _raise_exceptions_for_connection_errors=False,
            _raise_exceptions_for_gated_repo=False,
        )
        if path:
            shutil.copyfile(path, out_dir / name)
            copied.append(name)
    if "source.spm" in copied:
        config_path = out_dir / "tokenizer_config.json"
        try:
            tokenizer_config = json.loads(config_path.read_text(encoding="utf-8")) if config_path.exists() else {}
        except ValueError as error:  # not UTF-8, or not JSON
            raise MarianConversionError(f"{source}: tokenizer_config.json is not valid JSON ({error}).") from None
        if not tokenizer_config.get("tokenizer_class"):
            tokenizer_config["tokenizer_class"] = "MarianTokenizer"
            config_path.write_text(json.dumps(tokenizer_config, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
            if "tokenizer_config.json" not in copied:
                copied.append("tokenizer_config.json")
    return copied


def _source_card(files_source: str | None) -> ModelCard | None:
    if files_source is None:
        return None
    path = cached_file(
        files_source,
        "README.md",
        _raise_exceptions_for_missing_entries=False,
        _raise_exceptions_for_connection_errors=False,
        _raise_exceptions_for_gated_repo=False,
    )
    if not path:
        return None
    try:
        return ModelCard.load(path)
    except Exception as error:  # a malformed card must not stop the conversion
        logger.warning("Could not read the source model card %s: %s", path, error)
        return None


def _write_model_card(
    out_dir: Path,
    source_id: str,
    files_source: str | None,
    config: VaswaniConfig,
    tokenizer_files: list[str],
    max_abs_diff: float | None,
    notes: list[str],
    *,
    name: str,
) -> None:
    """Write the model card ``README.md`` into `out_dir` (the folder being written; `name` is the final folder's)."""
    source_card = _source_card(files_source)
    license_id = source_card.data.license if source_card is not None else None
    language = source_card.data.language if source_card is not None else None
    is_hub_id = files_source is not None and not Path(files_source).exists() and bool(_HUB_ID.match(files_source))
    data = ModelCardData(
        license=license_id,
        language=language,
        library_name="transformers",
        pipeline_tag="translation",
        tags=["hf-vaswani", "translation", "marian"],
        base_model=files_source if is_hub_id else None,
    )
    source_ref = source_id if source_id == IN_MEMORY else f"`{source_id}`"
    license_line = (
        f"License: `{license_id}`, carried over from the original model card of {source_ref}."
        if license_id
        else f"License: see the original model card of {source_ref}."
    )
    if max_abs_diff is None:
        check = "The logits check was skipped (the source is not float32)."
    else:
        check = (
            "At conversion time both models were run on a padded check batch: the largest absolute difference "
            f"between their logits was {max_abs_diff:.3g}."
        )
    tokenizer = (
        f"The Marian tokenizer files were copied ({', '.join(tokenizer_files)}): `AutoTokenizer` loads them."
        if tokenizer_files
        else "No tokenizer files were copied."
    )
    arch = (
        f"{config.encoder_layers} encoder and {config.decoder_layers} decoder layers, d_model {config.d_model}, "
        f"{config.encoder_attention_heads}/{config.decoder_attention_heads} heads, "
        f"FFN {config.encoder_ffn_dim}/{config.decoder_ffn_dim}, activation `{config.activation_function}`, "
        f"post-LayerNorm (eps {config.layer_norm_eps})"
    )
    body = f"""
# {name}

{source_ref} (a Marian / OPUS-MT translation model) converted with hf-vaswani (`hf-vaswani convert-marian`) into a
`VaswaniForConditionalGeneration`, the Transformer of Vaswani et al. (2017), "Attention Is All You Need".

{license_line}

## What was converted

- {arch}.
- Sinusoidal positions in Marian's layout (`sinusoidal_layout="concatenated"`, positions from 0), token embeddings
  scaled by sqrt(d_model): `{config.scale_embedding}`, Marian's `final_logits_bias` on the logits.
- Vocabulary {config.vocab_size} (decoder {config.decoder_vocab_size}); shared encoder/decoder embeddings:
  `{config.share_embeddings}`; output projection tied to the decoder embeddings: `{config.tie_word_embeddings}`.
- Every weight is copied as it is under our names (`encoder_attn` is `cross_attn`, `final_layer_norm` is
  `ffn_layer_norm`); none was dropped.
- `generation_config.json` is Marian's (beam size, maximum length, banned pad token, decoder start token, ...).

{check}

{tokenizer}

## Use

```python
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

# Without hf_vaswani installed, the model code comes with this folder: trust_remote_code=True.
tokenizer = AutoTokenizer.from_pretrained("{name}", trust_remote_code=True)
model = AutoModelForSeq2SeqLM.from_pretrained("{name}", trust_remote_code=True)
batch = tokenizer(["..."], return_tensors="pt")
print(tokenizer.batch_decode(model.generate(**batch), skip_special_tokens=True))
```
"""
    if notes:
        body += "\n## Conversion notes\n\n" + "\n".join(f"- {note}" for note in notes) + "\n"
    ModelCard(f"---\n{data.to_yaml()}\n---\n{body}").save(out_dir / "README.md")
