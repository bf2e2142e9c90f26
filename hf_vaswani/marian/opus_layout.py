"""OPUS-MT's vocabulary layout for an exported model: a zero `<pad>` appended last, from which decoding starts.

OPUS-MT checkpoints end their vocabulary with a `<pad>` that transformers' converter appended with a zero embedding,
and their decoder starts from it, so its first input is the position encoding alone (as in Marian itself). Tools
written for them rely on this. CTranslate2's Marian loader (`ctranslate2.converters.transformers.MarianMTLoader`)
does, twice:

- it removes the last row of the embeddings and of the output projection (and bias) whatever that row is, but the
  last vocabulary entry only when it is named ``<pad>``. Our vocabulary has ``<pad>`` first, so the vocabulary keeps
  its 8,000 entries while the weights lose one row: "Source vocabulary 0 has size 8000 but the model expected 7999";
- it makes the decoder start from a zero embedding (``start_from_zero_embedding``), whatever the start token. Ours
  starts from the embedding of ``<s>``: with the sizes fixed, every translation would still differ.

So `hf_vaswani.marian.export` writes a model with one vocabulary in OPUS-MT's layout, computing our function:

- a token named ``<pad>`` is appended (id V, the size of our vocabulary) with zero rows in the embeddings and the
  output projection and a `final_logits_bias` of `START_LOGIT_BIAS`, so its probability is exactly 0 and the
  softmax over the other V tokens is ours; it is the Marian config's pad and decoder start token;
- our own token of that name (our padding token) keeps its id and weights, renamed `RENAMED_PAD` in the tokenizer
  files: CTranslate2 then keeps exactly our V tokens, with our weights;
- what our first decoder input adds to the position encoding, the scaled embedding of our start token, is added to
  row 0 of the decoder's position table (only the start token sits at position 0), which is stored in
  model.safetensors: `MarianMTModel.from_pretrained` loads it, and so does CTranslate2's converter;
- config.json records our start and pad ids (`EXPORT_RECORD`): `hf_vaswani.marian.convert` undoes all this and
  gives our model back.

A caveat to tell users: `MarianMTModel.save_pretrained` never writes position tables (`_keys_to_ignore_on_save`),
so a copy saved that way starts from the position encoding alone; convert-marian then notes that the record no
longer holds and converts the copy as the plain Marian model it has become.

Only a model with one vocabulary is written this way: CTranslate2's Marian loader registers one vocabulary for both
sides, and a separate target vocabulary has no room for the appended token in the shared tokenizer.
"""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any

import torch
from transformers import MarianConfig

from ..configuration_vaswani import VaswaniConfig
from ..export.loading import ExportError
from ..modeling_vaswani import VaswaniSinusoidalPositionalEncoding
from .mapping import MARIAN_SHARED_ALIAS

__all__ = [
    "DECODER_POSITIONS",
    "EXPORT_RECORD",
    "RENAMED_PAD",
    "START_LOGIT_BIAS",
    "START_TOKEN",
    "add_start_token",
    "opus_marian_config",
    "read_export_record",
    "remove_start_token",
    "restore_tokenizer_files",
    "rewrite_tokenizer_files",
    "uses_opus_layout",
]

#: The appended token's name: the one CTranslate2 drops from the end of a Marian vocabulary.
START_TOKEN = "<pad>"
#: The name our own token called `START_TOKEN` (our padding token) takes in the exported tokenizer.
RENAMED_PAD = "<vaswani_pad>"
#: The appended token's `final_logits_bias`: exp(-1e4) underflows to 0 next to any real logit, so the token is never
#: predicted and the softmax of the rest is ours; finite, so that half precision holds it and a loss stays finite.
START_LOGIT_BIAS = -1e4
#: The extra field of the exported config.json with our decoder start and pad ids: what convert-marian restores.
EXPORT_RECORD = "hf_vaswani_export"
#: The joint vocabulary of a `MarianTokenizer` ({token: id}), rewritten as tokenizer.json is.
MARIAN_VOCABULARY = "vocab.json"
#: The stored position table whose row 0 carries our start token's embedding.
DECODER_POSITIONS = "model.decoder.embed_positions.weight"

#: Marian's weights with one row per vocabulary entry.
_VOCABULARY_MATRICES = (
    "model.encoder.embed_tokens.weight",
    "model.decoder.embed_tokens.weight",
    "lm_head.weight",
    MARIAN_SHARED_ALIAS,
)


def uses_opus_layout(config: VaswaniConfig) -> bool:
    """Whether `config` is exported in OPUS-MT's layout: models with one vocabulary (see the module's text)."""
    return config.vocab_size == config.decoder_vocab_size


# ----------------------------------------------------------------------------------------------------------------
# hf_vaswani -> Marian
# ----------------------------------------------------------------------------------------------------------------


def opus_marian_config(marian_config: MarianConfig, config: VaswaniConfig) -> MarianConfig:
    """`marian_config` (made by `marian_config_for`) with the appended token: one more vocabulary entry, which is
    the pad and decoder start token, and the record of our own ids."""
    marian_config = copy.deepcopy(marian_config)
    size = config.vocab_size
    marian_config.vocab_size = marian_config.decoder_vocab_size = size + 1
    marian_config.pad_token_id = marian_config.decoder_start_token_id = size
    setattr(
        marian_config,
        EXPORT_RECORD,
        {"decoder_start_token_id": config.decoder_start_token_id, "pad_token_id": config.pad_token_id},
    )
    return marian_config


def add_start_token(
    state_dict: dict[str, torch.Tensor], config: VaswaniConfig, position_table: torch.Tensor
) -> dict[str, torch.Tensor]:
    """Marian's weights (`vaswani_state_dict_to_marian`) with the appended token's zero rows and bias, and the
    decoder's `position_table` (the one MarianMTModel builds) with our start token's scaled embedding in row 0."""
    out = dict(state_dict)
    for name in _VOCABULARY_MATRICES:
        if name in out:
            matrix = out[name]
            out[name] = torch.cat((matrix, matrix.new_zeros(1, matrix.shape[1])))
    bias = out["final_logits_bias"]
    out["final_logits_bias"] = torch.cat((bias, bias.new_full((1, 1), START_LOGIT_BIAS)), dim=1)
    start = state_dict["model.decoder.embed_tokens.weight"][config.decoder_start_token_id]
    table = position_table.detach().clone()
    table[0] += start.to(table.dtype) * _embed_scale(config.d_model, config.scale_embedding)
    out[DECODER_POSITIONS] = table
    return out


def _embed_scale(d_model: int, scale_embedding: bool) -> float:
    return math.sqrt(d_model) if scale_embedding else 1.0


# ----------------------------------------------------------------------------------------------------------------
# Marian -> hf_vaswani
# ----------------------------------------------------------------------------------------------------------------


def read_export_record(marian_config: MarianConfig) -> dict[str, int] | None:
    """Our start and pad ids from a config.json written by export-marian in OPUS-MT's layout, else None."""
    record = getattr(marian_config, EXPORT_RECORD, None)
    if not isinstance(record, dict):
        return None
    ids = {key: record.get(key) for key in ("decoder_start_token_id", "pad_token_id")}
    return ids if all(isinstance(value, int) for value in ids.values()) else None


def remove_start_token(
    state_dict: dict[str, torch.Tensor], marian_config: MarianConfig, record: dict[str, int]
) -> tuple[dict[str, torch.Tensor], MarianConfig] | None:
    """Undo `add_start_token`: the weights without the appended token, with the plain sinusoidal table, and the
    config with our vocabulary size, start and pad ids. None when the weights no longer hold what `record` says
    (the position table was dropped by a re-save, the appended rows were trained): a plain Marian model then."""
    size = marian_config.vocab_size - 1
    if marian_config.decoder_vocab_size != size + 1 or marian_config.decoder_start_token_id != size:
        return None
    if not all(0 <= record[key] < size for key in record):
        return None
    matrices = [state_dict[name] for name in _VOCABULARY_MATRICES if name in state_dict]
    if any(matrix.shape[0] != size + 1 or matrix[size].any() for matrix in matrices):
        return None
    if not float(state_dict["final_logits_bias"][0, size]) <= START_LOGIT_BIAS / 2:
        return None
    decoder_embed = state_dict["model.decoder.embed_tokens.weight"]
    table = state_dict[DECODER_POSITIONS]
    expected = VaswaniSinusoidalPositionalEncoding(marian_config.d_model, "concatenated")(torch.arange(table.shape[0]))
    scale = _embed_scale(marian_config.d_model, bool(marian_config.scale_embedding))
    start_row = expected[0] + decoder_embed[record["decoder_start_token_id"]].float().cpu() * scale
    tolerance = 4 * max(1e-6, torch.finfo(table.dtype).eps)
    if not torch.allclose(table[0].float().cpu(), start_row, atol=tolerance * max(1.0, float(start_row.abs().max()))):
        return None
    out = {name: tensor[:size] for name, tensor in state_dict.items() if name in _VOCABULARY_MATRICES}
    out["final_logits_bias"] = state_dict["final_logits_bias"][:, :size]
    out[DECODER_POSITIONS] = torch.cat((expected[:1].to(table.dtype), table[1:]))  # rows 1.. are checked later
    restored = copy.deepcopy(marian_config)
    restored.vocab_size = restored.decoder_vocab_size = size
    restored.decoder_start_token_id = record["decoder_start_token_id"]
    restored.pad_token_id = record["pad_token_id"]
    delattr(restored, EXPORT_RECORD)
    return {**state_dict, **out}, restored


# ----------------------------------------------------------------------------------------------------------------
# The tokenizer files
# ----------------------------------------------------------------------------------------------------------------


def rewrite_tokenizer_files(folder: Path, size: int) -> bool:
    """Rewrite the tokenizer files of the exported `folder` for the appended token: our `START_TOKEN` becomes
    `RENAMED_PAD`, a new `START_TOKEN` gets id `size` and is the pad token. The vocabulary is tokenizer.json's
    (our models' tokenizer) or vocab.json's (the `MarianTokenizer` of a model converted from OPUS-MT). Returns False
    when the folder has neither.

    Raises:
        ExportError: the tokenizer's vocabulary does not have `size` entries, or already has `RENAMED_PAD`.
    """
    path = folder / "tokenizer.json"
    if path.is_file():
        data = _read_json(path)
        _check_extendable(_model_tokens(data["model"]), size)
        _rename_token(data, START_TOKEN, RENAMED_PAD)
        _append_token(data["model"], START_TOKEN)
        data["added_tokens"].append(_added_token(size, START_TOKEN))
        if data.get("padding"):
            data["padding"].update(pad_id=size, pad_token=START_TOKEN)
        _write_json(path, data)
    elif (folder / MARIAN_VOCABULARY).is_file():
        vocab = _read_json(folder / MARIAN_VOCABULARY)
        _check_extendable(_model_tokens({"vocab": vocab}), size)
        _rename_token({"model": {"vocab": vocab}}, START_TOKEN, RENAMED_PAD)
        _append_token({"vocab": vocab}, START_TOKEN)
        _write_json(folder / MARIAN_VOCABULARY, vocab)
    else:
        return False
    _update_special_token_files(folder, {START_TOKEN: RENAMED_PAD}, START_TOKEN, append=(size, START_TOKEN))
    return True


def _check_extendable(tokens: list[str], size: int) -> None:
    if len(tokens) != size:
        raise ExportError(
            f"The tokenizer has {len(tokens)} entries but the model's embeddings have {size} rows: its vocabulary "
            "cannot be written in OPUS-MT's layout."
        )
    if RENAMED_PAD in tokens:
        raise ExportError(f"The tokenizer already has a token {RENAMED_PAD!r}: the export needs that name.")


def restore_tokenizer_files(folder: Path, record: dict[str, int]) -> bool:
    """Undo `rewrite_tokenizer_files` in a converted `folder` whose tokenizer.json (or Marian vocab.json) ends with
    the appended token; returns whether it did. Our pad token (``record["pad_token_id"]``) is the pad token again,
    under its name."""
    path = folder / "tokenizer.json"
    if path.is_file():
        data = _read_json(path)
    elif (folder / MARIAN_VOCABULARY).is_file():
        path, data = folder / MARIAN_VOCABULARY, {"model": {"vocab": _read_json(folder / MARIAN_VOCABULARY)}}
    else:
        return False
    vocab = data.get("model", {}) if isinstance(data.get("model"), dict) else {}
    tokens = _model_tokens(vocab) if isinstance(vocab.get("vocab"), (list, dict)) else []
    pad = record["pad_token_id"]
    if not tokens or tokens[-1] != START_TOKEN or pad >= len(tokens) - 1:
        return False
    size = len(tokens) - 1
    _drop_last_token(data["model"])
    if "added_tokens" in data:
        data["added_tokens"] = [entry for entry in data["added_tokens"] if entry.get("id") != size]
    _rename_token(data, RENAMED_PAD, START_TOKEN)
    pad_token = _model_tokens(data["model"])[pad]
    if data.get("padding"):
        data["padding"].update(pad_id=pad, pad_token=pad_token)
    _write_json(path, data if path.name == "tokenizer.json" else data["model"]["vocab"])
    _update_special_token_files(folder, {RENAMED_PAD: START_TOKEN}, pad_token, drop=size)
    return True


def _read_json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def _write_json(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def _model_tokens(model: dict[str, Any]) -> list[str]:
    """The tokenizer model's vocabulary by id: a Unigram list of (piece, score), or a {piece: id} dict."""
    vocab = model.get("vocab")
    if isinstance(vocab, list):
        return [entry[0] for entry in vocab]
    if isinstance(vocab, dict):
        return [token for token, _ in sorted(vocab.items(), key=lambda item: item[1])]
    raise ExportError(f"The tokenizer's model ({model.get('type')}) has no vocabulary the export can extend.")


def _rename_token(data: dict[str, Any], old: str, new: str) -> None:
    vocab = data["model"]["vocab"]
    if isinstance(vocab, list):
        for entry in vocab:
            if entry[0] == old:
                entry[0] = new
    elif old in vocab:
        vocab[new] = vocab.pop(old)
    for entry in data.get("added_tokens", []):
        if entry.get("content") == old:
            entry["content"] = new


def _append_token(model: dict[str, Any], token: str) -> None:
    vocab = model["vocab"]
    if isinstance(vocab, list):
        vocab.append([token, 0.0])
    else:
        vocab[token] = len(vocab)


def _drop_last_token(model: dict[str, Any]) -> None:
    vocab = model["vocab"]
    if isinstance(vocab, list):
        vocab.pop()
    else:
        del vocab[max(vocab, key=vocab.get)]


def _added_token(token_id: int, content: str) -> dict[str, Any]:
    flags = dict(single_word=False, lstrip=False, rstrip=False, normalized=False, special=True)
    return {"id": token_id, "content": content, **flags}


def _update_special_token_files(
    folder: Path,
    renames: dict[str, str],
    pad_token: str,
    *,
    append: tuple[int, str] | None = None,
    drop: int | None = None,
) -> None:
    """tokenizer_config.json's ``added_tokens_decoder`` follows tokenizer.json, and its ``pad_token`` and
    special_tokens_map.json's become `pad_token`."""
    config_path = folder / "tokenizer_config.json"
    if config_path.is_file():
        config = _read_json(config_path)
        decoder = config.get("added_tokens_decoder")
        if isinstance(decoder, dict):
            for entry in decoder.values():
                if isinstance(entry, dict) and entry.get("content") in renames:
                    entry["content"] = renames[entry["content"]]
            if append is not None:
                decoder[str(append[0])] = {key: value for key, value in _added_token(*append).items() if key != "id"}
            if drop is not None:
                decoder.pop(str(drop), None)
        config["pad_token"] = pad_token
        _write_json(config_path, config)
    map_path = folder / "special_tokens_map.json"
    if map_path.is_file():
        special = _read_json(map_path)
        special["pad_token"] = pad_token
        _write_json(map_path, special)
