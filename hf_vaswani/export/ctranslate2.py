"""Export a `VaswaniForConditionalGeneration` to CTranslate2, with a loader of our own.

CTranslate2 runs Transformer translation models on CPUs (int8 and bfloat16 kernels, AMX where the CPU has it)
from a folder of exported weights. `ctranslate2.converters.TransformersConverter` has no loader for our config, and
going through Marian loses two things: its Marian loader drops the last vocabulary entry (OPUS-MT vocabularies end
with a `<pad>` that transformers added) and makes the decoder start from a zero embedding instead of `<s>`. This
loader builds the `ctranslate2.specs.TransformerSpec` directly from our weights:

- every vocabulary entry is kept (ids are the tokenizer's ids), and decoding starts from ``decoder_start_token_id``
  (``<s>``);
- positions: our own table (interleaved or concatenated sinusoids, or the learned table) is stored in the model,
  so no reordering is needed;
- post- or pre-LayerNorm layers, our LayerNorm epsilon, ``final_logits_bias`` and separate or shared
  vocabularies are carried over.

    export_ctranslate2("pretrained/vaswani-tatoeba-es-en", "vaswani-ct2", quantization="int8")

or `hf-vaswani export-ctranslate2 MODEL OUT [--quantization int8]`. In float32, CTranslate2's beam search gives our
`generate()`'s tokens (`hf_vaswani.backends` sets the matching decoding options); int8 quantizes the weights
of the linear layers and embeddings per row, which changes the scores slightly.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import numpy as np
import torch
from ctranslate2.converters import Converter
from ctranslate2.specs import common_spec, transformer_spec

from ..configuration_vaswani import VaswaniConfig
from ..modeling_vaswani import VaswaniForConditionalGeneration, VaswaniSinusoidalPositionalEncoding
from .loading import ExportError, export_plan, load_for_export

__all__ = ["QUANTIZATIONS", "VaswaniConverter", "export_ctranslate2", "vocabulary"]

#: Weight types CTranslate2 stores ("int8" computes in int8 with float32 elsewhere on a CPU).
QUANTIZATIONS = ("float32", "int8", "int8_float32", "int8_bfloat16", "bfloat16", "int16", "float16", "int8_float16")

_ACTIVATIONS = {
    "relu": common_spec.Activation.RELU,
    "gelu": common_spec.Activation.GELU,
    "silu": common_spec.Activation.SWISH,
    "swish": common_spec.Activation.SWISH,
}


def vocabulary(tokenizer: Any, size: int) -> list[str]:
    """The first `size` tokens of `tokenizer`, by id: CTranslate2 names tokens by these strings.

    Raises:
        ExportError: the tokenizer has fewer tokens than the embedding has rows, or two ids share a string.
    """
    if tokenizer is None:
        raise ExportError("The model has no tokenizer: CTranslate2 needs the vocabulary (save it next to the weights).")
    if len(tokenizer) < size:
        raise ExportError(f"The tokenizer has {len(tokenizer)} tokens but the model's embeddings have {size} rows.")
    tokens = tokenizer.convert_ids_to_tokens(list(range(size)))
    if len(set(tokens)) != size or any(not isinstance(token, str) for token in tokens):
        raise ExportError("The tokenizer gives the same string to several ids: CTranslate2 could not tell them apart.")
    return tokens


class VaswaniConverter(Converter):
    """A `ctranslate2.converters.Converter` for a `VaswaniForConditionalGeneration` and its tokenizer:
    ``VaswaniConverter(model, tokenizer).convert(out_dir, quantization="int8")``."""

    def __init__(self, model: VaswaniForConditionalGeneration, tokenizer: Any):
        self.model = model
        self.tokenizer = tokenizer

    def _load(self) -> transformer_spec.TransformerSpec:
        config = self.model.config
        weights = {name: _numpy(tensor) for name, tensor in self.model.state_dict().items()}
        pre_norm = config.layer_norm_position == "pre"
        activation = _ACTIVATIONS[config.activation_function]
        encoder = transformer_spec.TransformerEncoderSpec(
            config.encoder_layers, config.encoder_attention_heads, pre_norm=pre_norm, activation=activation
        )
        decoder = transformer_spec.TransformerDecoderSpec(
            config.decoder_layers, config.decoder_attention_heads, pre_norm=pre_norm, activation=activation
        )
        _set_stack(encoder, encoder.embeddings[0], weights, "model.encoder.", config)
        _set_stack(decoder, decoder.embeddings, weights, "model.decoder.", config)
        for index, layer in enumerate(encoder.layer):
            prefix = f"model.encoder.layers.{index}."
            _set_self_attention(layer.self_attention, weights, prefix)
            _set_ffn(layer.ffn, weights, prefix)
        for index, layer in enumerate(decoder.layer):
            prefix = f"model.decoder.layers.{index}."
            _set_self_attention(layer.self_attention, weights, prefix)
            _set_cross_attention(layer.attention, weights, prefix)
            _set_ffn(layer.ffn, weights, prefix)
        decoder.projection.weight = weights["lm_head.weight"]
        if "final_logits_bias" in weights:
            decoder.projection.bias = weights["final_logits_bias"].reshape(-1)

        spec = transformer_spec.TransformerSpec(encoder, decoder)
        source = vocabulary(self.tokenizer, config.vocab_size)
        target = (
            source
            if config.decoder_vocab_size == config.vocab_size
            else vocabulary(self.tokenizer, config.decoder_vocab_size)
        )
        spec.register_source_vocabulary(source)
        spec.register_target_vocabulary(target)
        _set_config(spec.config, config, target, self.tokenizer)
        return spec


def export_ctranslate2(
    model: str | os.PathLike[str] | VaswaniForConditionalGeneration,
    out_dir: str | os.PathLike[str],
    *,
    quantization: str | None = "float32",
    tokenizer: Any = None,
    overwrite: bool = False,
    force: bool = False,
) -> Path:
    """Write `model` (a folder, a Hub id, or a model in memory with `tokenizer`) as a CTranslate2 model folder.

    Args:
        model: what to export.
        out_dir: the folder to write (`model.bin`, `config.json`, `shared_vocabulary.json` or one vocabulary per
            side). It must not exist or be empty (or `overwrite`); it is written into a temporary sibling and
            renamed into place once the export is complete.
        quantization: how CTranslate2 stores the weights, one of `QUANTIZATIONS`: ``"float32"`` (default; gives
            our tokens), ``"int8"`` (4x smaller and faster on a CPU), ``"bfloat16"``, ...
        tokenizer: the tokenizer, for a model given in memory (a folder's own is used otherwise).
        overwrite: replace a non-empty `out_dir` whole (none of its files kept).
        force: the same as `overwrite` (deprecated).

    Raises:
        ExportError: no tokenizer, or a vocabulary that does not match the embeddings.
        ValueError, OSError: an unknown quantization; `out_dir` is the source folder or holds it, is not empty
            (without `overwrite`) or cannot be written; checked before the model is loaded.
    """
    if quantization is not None and quantization not in QUANTIZATIONS:
        raise ValueError(f"quantization must be one of {', '.join(QUANTIZATIONS)}, got {quantization!r}.")
    plan, out = export_plan(model, out_dir, "CTranslate2 model folder", overwrite or force)
    source = load_for_export(model, tokenizer)
    converter = VaswaniConverter(source.model, source.tokenizer)
    with plan.writing() as staged:
        folder = staged(out)
        # The converter replaces the folder it writes: it gets a new one inside, whose files are moved up.
        converted = Path(converter.convert(str(folder / "converted"), quantization=quantization))
        for entry in converted.iterdir():
            entry.rename(folder / entry.name)
        converted.rmdir()
    return Path(out_dir)


def position_table(config: VaswaniConfig, weights: dict[str, np.ndarray], prefix: str) -> np.ndarray:
    """The (max_position_embeddings, d_model) table that the stack adds to its token embeddings."""
    positions = config.max_position_embeddings
    if config.position_encoding == "sinusoidal":
        encoding = VaswaniSinusoidalPositionalEncoding(config.d_model, config.sinusoidal_layout)
        return _numpy(encoding(torch.arange(positions)))
    if config.position_encoding == "learned":
        return weights[prefix + "embed_positions.weight"]
    # No positions: CTranslate2 would add its own sinusoids to a stack without a table, so it gets zeros.
    return np.zeros((positions, config.d_model), dtype=np.float32)


def _numpy(tensor: torch.Tensor) -> np.ndarray:
    return tensor.detach().to("cpu", torch.float32).contiguous().numpy()


def _set_stack(stack: Any, embeddings: Any, weights: dict[str, np.ndarray], prefix: str, config: VaswaniConfig) -> None:
    embeddings.weight = weights[prefix + "embed_tokens.weight"]
    stack.scale_embeddings = math.sqrt(config.d_model) if config.scale_embedding else 1.0
    stack.position_encodings.encodings = position_table(config, weights, prefix)
    if config.layer_norm_position == "pre":
        _set_norm(stack.layer_norm, weights, prefix + "layer_norm.")


def _set_norm(spec: Any, weights: dict[str, np.ndarray], prefix: str) -> None:
    spec.gamma = weights[prefix + "weight"]
    spec.beta = weights[prefix + "bias"]


def _set_linear(spec: Any, weights: dict[str, np.ndarray], *prefixes: str) -> None:
    """One CTranslate2 linear layer from one or several of ours, stacked along the outputs (fused q/k/v)."""
    spec.weight = np.concatenate([weights[prefix + "weight"] for prefix in prefixes])
    spec.bias = np.concatenate([weights[prefix + "bias"] for prefix in prefixes])


def _set_self_attention(spec: Any, weights: dict[str, np.ndarray], prefix: str) -> None:
    attention = prefix + "self_attn."
    _set_linear(spec.linear[0], weights, attention + "q_proj.", attention + "k_proj.", attention + "v_proj.")
    _set_linear(spec.linear[1], weights, attention + "out_proj.")
    _set_norm(spec.layer_norm, weights, prefix + "self_attn_layer_norm.")


def _set_cross_attention(spec: Any, weights: dict[str, np.ndarray], prefix: str) -> None:
    attention = prefix + "cross_attn."
    _set_linear(spec.linear[0], weights, attention + "q_proj.")
    _set_linear(spec.linear[1], weights, attention + "k_proj.", attention + "v_proj.")
    _set_linear(spec.linear[2], weights, attention + "out_proj.")
    _set_norm(spec.layer_norm, weights, prefix + "cross_attn_layer_norm.")


def _set_ffn(spec: Any, weights: dict[str, np.ndarray], prefix: str) -> None:
    _set_linear(spec.linear_0, weights, prefix + "ffn.fc1.")
    _set_linear(spec.linear_1, weights, prefix + "ffn.fc2.")
    _set_norm(spec.layer_norm, weights, prefix + "ffn_layer_norm.")


def _set_config(spec_config: Any, config: VaswaniConfig, target: list[str], tokenizer: Any) -> None:
    eos = config.eos_token_id[0] if isinstance(config.eos_token_id, list) else config.eos_token_id
    spec_config.layer_norm_epsilon = config.layer_norm_eps
    spec_config.decoder_start_token = target[config.decoder_start_token_id]
    spec_config.eos_token = target[eos]
    spec_config.bos_token = target[config.bos_token_id] if config.bos_token_id is not None else target[eos]
    unk = getattr(tokenizer, "unk_token", None)
    spec_config.unk_token = unk if unk in target else target[eos]
    spec_config.add_source_bos = False
    spec_config.add_source_eos = False  # our tokenizer already appends </s>
