"""Attention rollout through the decoder, cross-attention included: the "rollout" method.

`vaswani_inspect.heads.attention_rollout` (Abnar & Zuidema 2020) rolls attention out through square
self-attention. Here it is extended to the encoder-decoder path. The state of decoder position t is tracked as a
mix of the decoder inputs (a (T, T) matrix P) and of the source tokens (a (T, S) matrix Q), starting from P = I,
Q = 0, and through each decoder layer, heads averaged:

* self-attention with its residual, as in `attention_rollout`: A~ = 0.5 (A_self + I), rows renormalised;
  P <- A~ P, Q <- A~ Q;
* cross-attention with its residual: half the state stays, half comes from the encoder output, i.e. from the
  source tokens as the encoder rollout R_enc (`attention_rollout(record, "encoder")`) mixes them:
  P <- 0.5 P, Q <- 0.5 Q + 0.5 C R_enc.

Each row of [P, Q] sums to 1 at every layer; after the last one, Q[t] is how much each source token flows into the
position that predicts target piece t + 1, and its row sum is the share that comes from the source (the rest, P's,
from the target prefix). The 0.5 weights are the residual convention of Abnar & Zuidema, not a measurement: the
self-attention rows sum to 1 and the cross-attention step keeps half, so every row's source share is exactly
1 - 0.5 ** (decoder layers) (0.875 with 3 layers), for every word of every sentence. It says nothing about the
translation; ALTI+ (`vaswani_inspect.attribution.alti`) measures the same split from the model's vectors.
"""

from __future__ import annotations

import numpy as np

from ..heads import attention_rollout
from ..record import AttentionRecord


def decoder_rollout(record: AttentionRecord) -> tuple[np.ndarray, np.ndarray]:
    """(Q (T - 1, S) the source tokens' share, P (T - 1, T - 1) the prefix tokens' share) of every predicting row
    (module docstring)."""
    encoder = attention_rollout(record, "encoder")
    self_attention = record.decoder.astype(np.float64).mean(axis=1)  # (L, T, T)
    cross = record.cross.astype(np.float64).mean(axis=1)  # (L, T, S)
    size = self_attention.shape[-1]
    prefix, source = np.eye(size), np.zeros((size, encoder.shape[0]))
    for layer_self, layer_cross in zip(self_attention, cross):
        mixed = 0.5 * (layer_self + np.eye(size))
        mixed = mixed / mixed.sum(axis=-1, keepdims=True)
        prefix, source = mixed @ prefix, mixed @ source
        prefix, source = 0.5 * prefix, 0.5 * source + 0.5 * layer_cross @ encoder
    return source[:-1], prefix[:-1, :-1]


__all__ = ["decoder_rollout"]
