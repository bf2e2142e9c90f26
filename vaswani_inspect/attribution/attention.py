"""Attention read as attribution: "attention" (the model's aligner) and "attention_norm" (Kobayashi et al. 2020).

* "attention": `alignment_matrix(record)`, the word-level cross-attention the model's aligner reads (its layers,
  heads, shift and averaged readings, `record.alignment`): today's default alignment matrix, as it is.
* "attention_norm": Kobayashi et al. (2020, "Attention is Not Only a Weight"): what head h of decoder layer l adds
  to target position t from source token s is the vector alpha[l, h, t, s] * f_h(x_s), where x_s is the encoder
  output, f_h(x) = (x W_V^h + b_V^h) W_O^h the head's value projection followed by its slice of the output
  projection (the output projection's bias is added once per position, not per token, so it is left out). The
  score is the norm ||alpha f_h(x_s)|| = alpha * ||f_h(x_s)||. The cells are pooled to words exactly as the
  aligner pools attention (`alignment_matrix` on the record with these norms in place of the weights): with
  `layers="aligner"` (default) the same layers, heads, shift and averaged readings as the model's aligner, so
  the two differ only by the norms; with `layers="mean"` every layer and head averaged (Kobayashi's layer-wise
  view). A head whose value vectors are larger weighs more in the average, which is the point of the method.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import torch

from ..alignment.links import alignment_matrix
from ..architectures import attention_modules, head_size, projections
from ..record import AttentionRecord
from .inputs import eval_mode, record_inputs
from .pooling import glued_rows

LAYER_CHOICES = ("aligner", "mean")


def attention_matrix(record: AttentionRecord) -> np.ndarray:
    """The model's aligner's word-level matrix (`alignment_matrix(record)`), a glued punctuation mark given the row
    of its word (`glued_rows`: every method's rows sum to 1)."""
    return glued_rows(alignment_matrix(record), record)


def value_norms(model: Any, record: AttentionRecord) -> np.ndarray:
    """||f_h(x_s)|| for every decoder layer l, head h and source token s: (L_dec, H, S), float64 (module
    docstring); x is the encoder's output on the record's source."""
    inputs = record_inputs(model, record)
    layers = _cross_attention_modules(model)
    with eval_mode(model), torch.no_grad():
        encoded = model.get_encoder()(input_ids=inputs.source).last_hidden_state[0]  # (S, d)
        norms = []
        for module in layers:
            heads, head_dim = head_size(model, module)
            maps = projections(model, module)
            values = maps.value(encoded).view(-1, heads, head_dim)  # (S, H, d_h)
            weight = maps.output.weight.view(-1, heads, head_dim)  # (d, H, d_h): column block h is W_O^h
            transformed = torch.einsum("shk,dhk->hsd", values, weight)
            norms.append(transformed.norm(dim=-1).double().cpu().numpy())
    return np.stack(norms)


def _cross_attention_modules(model: Any) -> list[Any]:
    """The decoder's encoder-decoder attention modules (`vaswani_inspect.architectures`), in layer order."""
    return attention_modules(model)["cross"]


def attention_norm_matrix(model: Any, record: AttentionRecord, layers: str = "aligner") -> tuple[np.ndarray, dict]:
    """(the word-level matrix of `||alpha f(x)||`, the settings used); `layers` as in the module docstring."""
    if layers not in LAYER_CHOICES:
        raise ValueError(f"layers must be one of {', '.join(LAYER_CHOICES)}, got {layers!r}.")
    norms = value_norms(model, record)
    if norms.shape != record.cross.shape[:2] + norms.shape[2:] or norms.shape[2] != len(record.source_tokens):
        raise ValueError("The model's decoder layers and heads do not match the record's cross-attention.")
    weighted = record.cross.astype(np.float64) * norms[:, :, None, :]
    scaled = replace(record, cross=weighted.astype(np.float32))
    if layers == "aligner":
        return glued_rows(alignment_matrix(scaled), record), {"layers": "aligner", "reading": record.alignment}
    return glued_rows(alignment_matrix(scaled, "mean", "all", shift=False), record), {"layers": "mean"}


__all__ = ["LAYER_CHOICES", "attention_matrix", "attention_norm_matrix", "value_norms"]
