"""Import Marian (OPUS-MT) checkpoints into hf_vaswani, exactly.

A `transformers` `MarianMTModel` is the Transformer of Vaswani et al. with a few fixed choices: post-LayerNorm
layers (eps 1e-5), sinusoidal positions with all sines before all cosines, positions counted from 0, embeddings
scaled by sqrt(d_model), a `final_logits_bias` on the logits, and pad = decoder start token. Every one of them is
an option of `VaswaniConfig`, so a Marian checkpoint maps to a `VaswaniForConditionalGeneration` that computes the
same function:

    convert_marian("Helsinki-NLP/opus-mt-es-en", "opus-mt-es-en-vaswani")

or from the shell `hf-vaswani convert-marian Helsinki-NLP/opus-mt-es-en opus-mt-es-en-vaswani`.

Weights are copied under our names, read off the table that export reads the other way (`hf_vaswani.marian.mapping`):
`final_layer_norm` becomes `ffn_layer_norm`, `encoder_attn*` becomes `cross_attn*`, `fc1`/`fc2` move into `ffn`.
Every weight of the source state dict is either converted or checked (the sinusoidal tables, the `shared` alias):
anything else is refused with the list of names, never dropped. Options the model has no counterpart for are
refused, naming the option (`hf_vaswani.marian.configs`). After mapping, the two models are run on a padded check
batch and the conversion fails if the logits differ.

A folder written by `hf-vaswani export-marian` in OPUS-MT's layout (`hf_vaswani.marian.opus_layout`: an appended
zero ``<pad>`` that starts decoding, our start token carried by the decoder's stored position table) converts back
to the model it came from: the appended token is removed, our start and pad ids (recorded in its config.json) and
tokenizer names restored. Its `alignment` field, if any, is kept too. The folder gets the translation pipeline of
our model folders (`hf_vaswani.pipeline_vaswani`, declared in config.json's ``custom_pipelines``).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from pathlib import Path
from typing import Any

import torch
from transformers import GenerationConfig, MarianConfig, MarianMTModel, PreTrainedConfig, PreTrainedModel
from transformers.utils import cached_file

from ..configuration_vaswani import VaswaniConfig
from ..modeling_vaswani import VaswaniForConditionalGeneration, VaswaniSinusoidalPositionalEncoding
from ..outputs import OutputPlan
from ..pipeline_vaswani import add_pipeline_to_folder
from .cards import IN_MEMORY, write_converted_card
from .configs import (
    MarianConversionError,
    check_marian_config,
    check_model_type,
    config_notes,
    vaswani_config_from_marian,
)
from .mapping import MARIAN_POSITION_TABLES, MARIAN_SHARED_ALIAS, weight_names
from .opus_layout import read_export_record, remove_start_token, restore_tokenizer_files

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
    record = read_export_record(marian.config) if _undid_opus_layout(config, marian.config) else None
    model.generation_config = _generation_config(marian, record)
    with plan.writing() as staged:
        folder = staged(plan.outputs[0].path)
        _save_model(model, folder)
        add_pipeline_to_folder(folder)  # as our model folders have it: pipeline("translation", ...) works
        if files_source is None:
            notes.append(
                "Tokenizer: not copied, the model was converted from memory; save the Marian tokenizer "
                "(`tokenizer.save_pretrained(folder)`) into this folder to use `AutoTokenizer` on it."
            )
            copied: list[str] = []
        else:
            copied = _copy_tokenizer_files(files_source, folder)
            if copied:
                _check_source_tokenizer(marian, files_source)
            if not copied:
                notes.append(f"Tokenizer: {source_id} has no tokenizer files; none were copied.")
            if record is not None and restore_tokenizer_files(folder, record):
                notes.append("Tokenizer: the appended <pad> removed and the model's own <pad> restored.")
        for note in notes:
            logger.warning(note)
        write_converted_card(
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
    check_marian_config(marian_config)
    notes.extend(config_notes(marian_config))
    _check_names(state_dict, marian_config)
    state_dict, marian_config = _undo_opus_layout(state_dict, marian_config, notes)

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
    shared_alias = state_dict.get(MARIAN_SHARED_ALIAS)
    if shared_alias is not None and not _same(shared_alias, encoder_embed):
        notes.append(
            f"{MARIAN_SHARED_ALIAS} differs from the encoder embeddings; MarianMTModel.forward never reads it (each "
            "stack uses its own embed_tokens), so it is not converted."
        )

    config = vaswani_config_from_marian(marian_config, encoder_embed.shape[0], decoder_embed.shape[0], share, tie)
    _check_position_tables(state_dict, config)

    mapped = {ours: state_dict[theirs] for ours, theirs in weight_names(config.encoder_layers, config.decoder_layers)}
    return config, mapped


def _undo_opus_layout(
    state_dict: dict[str, torch.Tensor], marian_config: MarianConfig, notes: list[str]
) -> tuple[dict[str, torch.Tensor], MarianConfig]:
    """The weights and config of the model an OPUS-MT-layout export came from (`remove_start_token`), or the
    Marian ones as they are."""
    record = read_export_record(marian_config)
    if record is None:
        return state_dict, marian_config
    restored = remove_start_token(state_dict, marian_config, record)
    if restored is None:
        notes.append(
            "config.json records an hf-vaswani export in OPUS-MT's layout, but the weights no longer hold it (the "
            "decoder's position table, whose row 0 carried the start token, is the plain one: "
            "MarianMTModel.save_pretrained does not save it): converted as the Marian model it now is, which "
            "decodes from the appended <pad>."
        )
        return state_dict, marian_config
    notes.append(
        f"Converted back from an hf-vaswani export in OPUS-MT's layout: the appended <pad> "
        f"(id {marian_config.vocab_size - 1}) removed, decoding from token {record['decoder_start_token_id']} "
        f"and padding with token {record['pad_token_id']} again."
    )
    return restored


def _undid_opus_layout(config: VaswaniConfig, marian_config: MarianConfig) -> bool:
    """Whether the conversion removed an export's appended token (else the vocabularies have the same size)."""
    return config.decoder_vocab_size == marian_config.decoder_vocab_size - 1


# ----------------------------------------------------------------------------------------------------------------
# Source and config checks
# ----------------------------------------------------------------------------------------------------------------


def _load_source(source: str | os.PathLike | MarianMTModel) -> tuple[MarianMTModel, str, str | None]:
    """Return the Marian model, a name for the model card, and where its other files live (None: in memory)."""
    if isinstance(source, PreTrainedModel):
        check_model_type(source.config, type(source).__name__)
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
    check_model_type(config_dict, source)
    config = MarianConfig.from_pretrained(source)
    check_marian_config(config)
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


def _check_source_tokenizer(marian: MarianMTModel, source: str) -> None:
    """Refuse a source whose tokenizer files do not load, or load another model's tokenizer (another class than
    config.json names, special tokens at other ids, a vocabulary of another size: `tokenizer_problems`): the
    converted folder would not load, or would translate garbage."""
    import warnings

    from transformers import AutoTokenizer

    from ..model_checks import tokenizer_problems
    from ..model_folder import marian_tokenizer_problems

    problems = marian_tokenizer_problems(source) if Path(source).is_dir() else []
    if problems:
        raise MarianConversionError(f"The tokenizer of {source!r} cannot be loaded: {'; '.join(problems)}.")
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Recommended: pip install sacremoses")
            tokenizer = AutoTokenizer.from_pretrained(source)
    except (OSError, ValueError, TypeError, KeyError, RuntimeError) as error:
        raise MarianConversionError(f"Cannot load the tokenizer of {source!r}: {_one_line(error)}") from error
    problems = tokenizer_problems(marian, tokenizer)
    if problems:
        raise MarianConversionError(f"The tokenizer of {source!r} is not its model's: {'; '.join(problems)}.")


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


def _check_names(state_dict: dict[str, torch.Tensor], config: MarianConfig) -> None:
    """Every name the config implies is there (the mapped weights and the position tables), and no other."""
    mapped = weight_names(config.encoder_layers, config.decoder_layers)
    expected = {theirs for _, theirs in mapped} | set(MARIAN_POSITION_TABLES)
    optional = {MARIAN_SHARED_ALIAS}
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


def _check_position_tables(state_dict: dict[str, torch.Tensor], config: VaswaniConfig) -> None:
    """Marian's position tables are fixed sinusoids (sines first): check them instead of converting them."""
    positions = torch.arange(config.max_position_embeddings)
    expected = VaswaniSinusoidalPositionalEncoding(config.d_model, "concatenated")(positions)
    for name in MARIAN_POSITION_TABLES:
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


def _resolve_dtype(dtype: str | torch.dtype | None) -> torch.dtype | None:
    if dtype is None or isinstance(dtype, torch.dtype) and dtype in DTYPES.values():
        return dtype
    if isinstance(dtype, str) and dtype in DTYPES:
        return DTYPES[dtype]
    raise ValueError(f"dtype must be one of {', '.join(DTYPES)} (or None to keep the source's), got {dtype!r}.")


# ----------------------------------------------------------------------------------------------------------------
# Equivalence check, generation config, tokenizer
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
    attention_mask = torch.ones_like(input_ids)
    attention_mask[1, length // 2 :] = 0
    inputs = dict(input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=decoder_input_ids)

    # Each decoder starts from its own start token: an export's appended <pad> for Marian, ours once removed.
    decoder_input_ids[:, 0] = marian.config.decoder_start_token_id
    was_training = marian.training
    try:
        expected = marian.eval()(**{key: value.to(marian.device) for key, value in inputs.items()}).logits.cpu()
    finally:
        marian.train(was_training)
    decoder_input_ids[:, 0] = config.decoder_start_token_id
    actual = model.eval()(**inputs).logits
    expected = expected[..., : actual.shape[-1]]  # without the appended token, which gets probability 0
    difference = float((actual - expected).abs().max())
    tolerance = 1e-4 * max(1.0, float(expected.abs().max()))
    if not difference <= tolerance:
        raise RuntimeError(
            f"The converted model's logits differ from Marian's by {difference:.3g} (> {tolerance:.3g}): "
            "this is a bug in convert_marian, please report it with the model id."
        )
    logger.info("Converted logits match Marian's: max abs difference %.3g.", difference)
    return difference


def _generation_config(marian: MarianMTModel, record: dict[str, int] | None = None) -> GenerationConfig:
    """Marian's generation settings (num_beams, max_length, bad_words_ids, decoder_start_token_id, ...) as they are;
    with the `record` of an export whose appended token was removed, its start and pad ids become ours again."""
    values = marian.generation_config.to_dict()
    for key in ("_from_model_config", "transformers_version", "_commit_hash", "_original_object_hash"):
        values.pop(key, None)
    if record is not None:
        appended = marian.config.decoder_start_token_id
        for key in ("decoder_start_token_id", "pad_token_id"):
            if values.get(key) == appended:
                values[key] = record[key]
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
