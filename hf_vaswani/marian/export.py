"""Export a `VaswaniForConditionalGeneration` as a stock `transformers` `MarianMTModel`, exactly.

The inverse of `hf_vaswani.marian.convert`: the same weights under Marian's names (the table of
`hf_vaswani.marian.mapping`, read the other way), in a `MarianConfig` with the same dimensions, special ids and
generation settings (`hf_vaswani.marian.configs.marian_config_for`):

    export_marian("pretrained/vaswani-tatoeba-es-en", "vaswani-es-en-marian")

or from the shell `hf-vaswani export-marian pretrained/vaswani-tatoeba-es-en vaswani-es-en-marian`. The folder loads
with `MarianMTModel.from_pretrained` (or `AutoModelForSeq2SeqLM`) without hf_vaswani, and with it every tool that
takes a Marian model, CTranslate2's ``ct2-transformers-converter`` included.

- Vocabulary and start token: a model with one vocabulary is written in OPUS-MT's layout
  (`hf_vaswani.marian.opus_layout`): a zero ``<pad>`` appended last, never predicted, from which decoding starts,
  with our start token's embedding carried by row 0 of the decoder's stored position table; our own ``<pad>`` keeps
  its id and weights as ``<vaswani_pad>``. Token ids are ours, but for padding and the start token (id V). A model
  with a separate target vocabulary keeps its ids and decodes from our start token.
- Positions: Marian's table is sinusoidal with all sines first (our ``sinusoidal_layout="concatenated"``). A model
  in the paper's interleaved layout is exported through `hf_vaswani.export.layout.to_concatenated_state_dict`, an
  exact reordering of the d_model dimensions.
- `final_logits_bias`: Marian always adds one; a model without it gets zeros.
- `config.alignment` (how `vaswani_inspect` reads word alignments) is kept as an extra config.json field.
- Refused, with the reason: learned or no positions, pre-LayerNorm layers, a LayerNorm epsilon other than 1e-5
  (Marian's LayerNorms always use PyTorch's default).

After export, both models run on a padded check batch and the export fails unless the logits agree.
"""

from __future__ import annotations

import copy
import logging
import os
import shutil
from pathlib import Path
from typing import Any

import torch
from transformers import GenerationConfig, MarianMTModel

from ..configuration_vaswani import VaswaniConfig
from ..export.layout import to_concatenated_state_dict
from ..export.loading import export_plan, load_for_export
from ..modeling_vaswani import VaswaniForConditionalGeneration
from .cards import write_exported_card
from .configs import check_marian_compatible, marian_config_for
from .convert import TOKENIZER_FILES  # (ours and a MarianTokenizer's: the files convert-marian copies back)
from .mapping import MARIAN_SHARED_ALIAS, weight_names
from .opus_layout import (
    DECODER_POSITIONS,
    add_start_token,
    opus_marian_config,
    rewrite_tokenizer_files,
    uses_opus_layout,
)

__all__ = ["export_marian", "marian_config_for", "to_marian", "vaswani_state_dict_to_marian"]

logger = logging.getLogger(__name__)


#: Largest logit difference the export accepts on the check batch (float32), relative to the largest logit (at
#: least 1): the reordering of an interleaved model changes the order of float additions, which moves the logits as
#: much as switching our own model between the sdpa and eager attention kernels does (about 1e-6 relative).
TOLERANCE = 1e-5


def vaswani_state_dict_to_marian(state_dict: dict[str, torch.Tensor], config: VaswaniConfig) -> dict[str, torch.Tensor]:
    """Our weights under Marian's names, in Marian's (concatenated) sinusoidal layout.

    The position tables are not included (MarianMTModel builds its own), `final_logits_bias` is zeros when our
    model has none, and with shared embeddings `model.shared.weight` is the encoder embedding (MarianMTModel
    keeps it as an alias).
    """
    state_dict = dict(to_concatenated_state_dict(state_dict, config))
    # A saved state dict holds a shared or tied matrix once: the names Marian keeps apart point at that one.
    encoder_embed = state_dict["model.encoder.embed_tokens.weight"]
    decoder_embed = state_dict.setdefault("model.decoder.embed_tokens.weight", encoder_embed)
    state_dict.setdefault("lm_head.weight", decoder_embed)
    if state_dict.get("final_logits_bias") is None:
        state_dict["final_logits_bias"] = decoder_embed.new_zeros(1, decoder_embed.shape[0])
    out = {theirs: state_dict[ours] for ours, theirs in weight_names(config.encoder_layers, config.decoder_layers)}
    if config.share_embeddings:
        out[MARIAN_SHARED_ALIAS] = encoder_embed
    return {name: tensor.detach().clone() for name, tensor in out.items()}


def to_marian(model: VaswaniForConditionalGeneration, *, opus_layout: bool = False) -> MarianMTModel:
    """A `MarianMTModel` (eval mode, float32, CPU) computing what `model` computes, with its generation settings.

    By default it takes our token ids as they are and decodes from our start token (a twin for comparisons). With
    `opus_layout` (what `export_marian` writes for a model with one vocabulary) the vocabulary has OPUS-MT's
    appended ``<pad>``, which is the pad and decoder start token (`hf_vaswani.marian.opus_layout`).
    """
    config = model.config
    check_marian_compatible(config)
    opus_layout = opus_layout and uses_opus_layout(config)
    marian_config = marian_config_for(config)
    if opus_layout:
        marian_config = opus_marian_config(marian_config, config)
    marian = MarianMTModel(marian_config)
    state_dict = vaswani_state_dict_to_marian(model.state_dict(), config)
    if opus_layout:
        state_dict = add_start_token(state_dict, config, marian.model.decoder.embed_positions.weight)
    missing, unexpected = marian.load_state_dict(
        {name: tensor.to("cpu", torch.float32) for name, tensor in state_dict.items()}, strict=False
    )
    missing = [name for name in missing if not name.endswith("embed_positions.weight")]
    if missing or unexpected:
        raise RuntimeError(f"MarianMTModel does not take these weights: missing {missing}, unexpected {unexpected}.")
    marian.generation_config = _generation_config(model, marian_config)
    return marian.eval()


def export_marian(
    model: str | os.PathLike[str] | VaswaniForConditionalGeneration,
    out_dir: str | os.PathLike[str],
    *,
    dtype: str | None = None,
    tokenizer: Any = None,
    overwrite: bool = False,
) -> Path:
    """Write `model` (a folder, a Hub id, or a model in memory with `tokenizer`) as a `MarianMTModel` folder.

    Args:
        model: what to export.
        out_dir: the folder to write: `config.json`, `model.safetensors`, `generation_config.json`, the tokenizer
            files of the source folder, and a short `README.md`. It must not exist or be empty (or `overwrite`);
            it is written into a temporary sibling and renamed into place once the export is checked.
        dtype: `"float32"` (default), `"bfloat16"` or `"float16"` to store the weights in; the logits check runs
            in float32 before the cast.
        tokenizer: the tokenizer to save with a model given in memory (a folder's own files are copied).
        overwrite: replace a non-empty `out_dir` whole (none of its files kept).

    Raises:
        ExportError: the model has an option Marian cannot compute (the message names it).
        ValueError, OSError: `out_dir` is the source folder or holds it, is not empty (without `overwrite`) or
            cannot be written; checked before the model is loaded.
        RuntimeError: the exported logits differ from ours by more than `TOLERANCE` (a bug: please report it).
    """
    if dtype is not None:
        _dtype(dtype)
    plan, out = export_plan(model, out_dir, "Marian model folder", overwrite)
    source = load_for_export(model, tokenizer)
    marian = to_marian(source.model, opus_layout=True)
    difference, scale = max_logit_difference(source.model, marian)
    if not difference <= TOLERANCE * scale:
        raise RuntimeError(
            f"The exported MarianMTModel's logits differ from the model's by {difference:.3g} "
            f"(> {TOLERANCE} x {scale:.3g}): this is a bug in export_marian, please report it."
        )
    logger.info("Exported logits match: max abs difference %.3g.", difference)
    if dtype is not None:
        marian.to(_dtype(dtype))
    with plan.writing() as staged:
        folder = staged(out)
        marian.save_pretrained(folder)
        copied = _copy_tokenizer_files(source.folder, folder) if source.folder is not None else []
        if source.folder is None and source.tokenizer is not None:
            source.tokenizer.save_pretrained(folder)
            copied = ["tokenizer (saved from memory)"]
        opus_layout = uses_opus_layout(source.model.config)
        if opus_layout:
            _store_decoder_positions(marian, folder)
            rewrite_tokenizer_files(folder, source.model.config.vocab_size)
        write_exported_card(folder, out.name, source.model.config, difference, copied, opus_layout=opus_layout)
    return Path(out_dir)


@torch.no_grad()
def max_logit_difference(model: VaswaniForConditionalGeneration, marian: MarianMTModel) -> tuple[float, float]:
    """Largest absolute logit difference between the two models on a padded random batch (both in eval mode), over
    our vocabulary, and the scale it is judged against: the largest absolute logit of `model`, at least 1. Each
    model's decoder starts from its own start token (Marian's is the appended ``<pad>`` in OPUS-MT's layout)."""
    config = model.config
    vocab = min(config.vocab_size, config.decoder_vocab_size)
    generator = torch.Generator().manual_seed(0)
    length = min(11, config.max_position_embeddings)
    input_ids = torch.randint(0, vocab, (3, length), generator=generator)
    decoder_input_ids = torch.randint(0, vocab, (3, max(1, length - 3)), generator=generator)
    decoder_input_ids[:, 0] = config.decoder_start_token_id
    attention_mask = torch.ones_like(input_ids)
    attention_mask[1, length // 2 :] = 0
    inputs = dict(input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=decoder_input_ids)
    expected = model.eval()(**inputs).logits
    marian_decoder_input_ids = decoder_input_ids.clone()
    marian_decoder_input_ids[:, 0] = marian.config.decoder_start_token_id
    actual = marian.eval()(**{**inputs, "decoder_input_ids": marian_decoder_input_ids}).logits
    actual = actual[..., : expected.shape[-1]]
    return float((actual - expected).abs().max()), max(1.0, float(expected.abs().max()))


def _generation_config(model: VaswaniForConditionalGeneration, marian_config: Any) -> GenerationConfig:
    """Our generation settings, with Marian's start and pad ids (the appended token in OPUS-MT's layout)."""
    values = copy.deepcopy(model.generation_config).to_dict()
    for key in ("_from_model_config", "transformers_version", "_commit_hash", "_original_object_hash"):
        values.pop(key, None)
    values["decoder_start_token_id"] = marian_config.decoder_start_token_id
    values["pad_token_id"] = marian_config.pad_token_id
    return GenerationConfig(**values)


def _store_decoder_positions(marian: MarianMTModel, folder: Path) -> None:
    """Add the decoder's position table to model.safetensors: `save_pretrained` leaves position tables out
    (MarianMTModel rebuilds them), but in OPUS-MT's layout row 0 carries our start token."""
    from safetensors import safe_open
    from safetensors.torch import load_file, save_file

    path = folder / "model.safetensors"
    if not path.is_file():
        raise RuntimeError(f"save_pretrained wrote no single {path.name} into {folder}: cannot store the positions.")
    with safe_open(path, "pt") as weights:
        metadata = weights.metadata()
    tensors = load_file(path)
    tensors[DECODER_POSITIONS] = marian.model.decoder.embed_positions.weight.detach().contiguous()
    save_file(tensors, path, metadata=metadata)


def _dtype(name: str) -> torch.dtype:
    dtypes = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
    if name not in dtypes:
        raise ValueError(f"dtype must be one of {', '.join(dtypes)}, got {name!r}.")
    return dtypes[name]


def _copy_tokenizer_files(folder: Path, out_dir: Path) -> list[str]:
    copied = []
    for name in TOKENIZER_FILES:
        if (folder / name).is_file():
            shutil.copyfile(folder / name, out_dir / name)
            copied.append(name)
    return copied
